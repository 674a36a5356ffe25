"""The pictures ``npukit deploy --plot DIR`` writes (matplotlib, no display needed):

- ``memory.png``: the model's live activations at each operator (their
  largest sum is the lower bound any plan of that order needs) beside what
  the firmware holds: the compile-time plan's block, the arena's high-water
  mark (the plan plus the runtime's own objects) and static data + arena.
- ``flash.png``: the flash split: model code, model constants, npukit's
  runtime, the NPU simulator (with --npu), start-up and C library.
"""

from __future__ import annotations

from pathlib import Path

from npukit.deploy.deploy_model import DeployResult


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _kib(n: float) -> str:
    return f"{n / 1024:,.1f} KiB"


def plot_memory(result: DeployResult, path: Path) -> Path:
    plt = _pyplot()
    activations = result.artifact.manifest.get("activations") or {}
    activations = {"operators": activations.get("operators", []), "lower_bound": activations.get("lower_bound", 0)}
    operators = activations["operators"]
    fig, ax = plt.subplots(figsize=(max(8.0, 0.22 * len(operators) + 4), 5))
    xs = list(range(len(operators)))
    live = [o["live_bytes"] for o in operators]
    if operators:
        ax.fill_between(xs, live, step="mid", alpha=0.35, color="#4C72B0",
                        label=f"live activations (lower bound {_kib(activations['lower_bound'])})")
        ax.step(xs, live, where="mid", color="#4C72B0")
    ram = result.ram
    levels = [(ram.without_stack, "static data + arena (RAM without the stack)", "#C44E52", "-"),
              (ram.runtime_arena, "arena high-water (plan + runtime objects)", "#DD8452", "--")]
    if result.arena_planned is not None:
        levels.append((result.arena_planned, "planned buffers (<NAME>_ARENA_SIZE)", "#55A868", "-."))
    for value, label, colour, style in levels:
        ax.axhline(value, color=colour, linestyle=style, label=f"{label}: {_kib(value)}")
    if activations["lower_bound"]:
        limit = 1.1 * activations["lower_bound"] + 2048
        ax.axhline(limit, color="grey", linestyle=":", label=f"1.1 x bound + 2 KiB: {_kib(limit)}")
    ax.set_xticks(xs)
    ax.set_xticklabels([o["op"] for o in operators], rotation=90, fontsize=7)
    ax.set_xlabel("operator, in the model's order")
    ax.set_ylabel("bytes")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{result.artifact.name} on {result.board.name}: activation memory, plan vs lower bound",
                 fontsize=10)
    ax.set_ylim(top=max([v for v, *_ in levels] + live + [1]) * 1.05)
    ax.legend(fontsize=8, loc="center right")  # the late layers are small: room there
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_flash(result: DeployResult, path: Path) -> Path:
    plt = _pyplot()
    f = result.flash
    parts = [("model code", f.model_code), ("model constants", f.constants), ("npukit runtime", f.runtime)]
    if result.npu:
        parts.append(("NPU simulator", f.npu_simulator))
    parts.append(("start-up, console, C library", f.other))
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.5 * len(parts)))
    names = [p[0] for p in parts]
    values = [p[1] for p in parts]
    bars = ax.barh(names, values, color=["#4C72B0", "#55A868", "#DD8452", "#8172B2", "#937860"][:len(parts)])
    for bar, value in zip(bars, values):
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2,
                f" {value:,} B ({100 * value / f.total:.0f}%)", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("bytes")
    ax.set_xlim(right=max(values) * 1.35)
    ax.set_title(f"{result.artifact.name} on {result.board.name}\nflash {f.total:,} B ({_kib(f.total)})",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_plots(result: DeployResult, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    return [plot_memory(result, directory / "memory.png"), plot_flash(result, directory / "flash.png")]
