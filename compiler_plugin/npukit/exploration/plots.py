"""The three plots of ``npukit explore`` (matplotlib, no display needed):

- ``cycles.png``: one stacked bar per configuration, labelled like the
  paper's ``512K-64-O`` and grouped by depthwise scenario, segments by
  operation type: the NPU's cycles (top row, the paper's figure) and the
  time per inference with the CPU's part hatched (bottom row).
- ``pareto.png``: the NPU's cycles and the time per inference against
  PEs x SRAM (a proxy for the hardware's cost), the Pareto fronts marked.
- ``layers.png``: each layer's time in the best and the worst configuration.

Where NPU and CPU work are shown together the unit is time, because their
cycles tick at different clocks: NPU cycles / NPU clock + CPU cycles / CPU
clock (both in explore.json).
"""

from __future__ import annotations

from pathlib import Path

from npukit.mynpu.operation_kind import KINDS, LABELS

_COLOURS = {"CONV": "#4C72B0", "POINTWISE": "#55A868", "DEPTH": "#C44E52", "DENSE": "#8172B2", "OTHER": "#937860"}
_SCENARIOS = {"npu": "depthwise on the NPU (OP_DEPTH_CONV)", "per-channel": "depthwise emulated per channel",
              "cpu": "depthwise on the CPU"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _group(configuration: dict) -> str:
    extra = []
    if configuration.get("_vary_dma"):
        extra.append(f"DMA {configuration['dma_bytes_per_cycle']} B/cycle")
    if configuration.get("_vary_clock"):
        extra.append(f"{configuration['clock_mhz']} MHz")
    name = _SCENARIOS.get(configuration["depthwise"], configuration["depthwise"])
    return name + (f" ({', '.join(extra)})" if extra else "")


def _marked(configurations: list[dict]) -> list[dict]:
    """The configurations with flags for the axes the sweep varies besides the paper's."""
    vary_dma = len({c["dma_bytes_per_cycle"] for c in configurations}) > 1
    vary_clock = len({c["clock_mhz"] for c in configurations}) > 1
    return [{**c, "_vary_dma": vary_dma, "_vary_clock": vary_clock} for c in configurations]


def _segments(configuration: dict, cpu_clock_mhz: float | None) -> list[tuple[str, str, float]]:
    """(side, operation label, value) of one configuration: microseconds, or
    cycles without ``cpu_clock_mhz``."""
    clocks = {"npu": configuration["clock_mhz"], "cpu": cpu_clock_mhz}
    return [(side, LABELS[k], configuration["cycles_by_operation"][side].get(LABELS[k], 0) /
             (clocks[side] if cpu_clock_mhz else 1)) for side in ("npu", "cpu") for k in KINDS]


def _stacked(ax, members: list[dict], parts, seen: set, hatch_cpu: bool = True) -> None:
    """Stacked bars of ``parts(configuration) -> [(side, label, value)]``."""
    bottoms = [0.0] * len(members)
    for side in ("npu", "cpu"):
        for kind in KINDS:
            label = LABELS[kind]
            heights = [dict(((s, o), v) for s, o, v in parts(c)).get((side, label), 0.0) for c in members]
            if not any(heights):
                continue
            name = f"{label} ({'NPU' if side == 'npu' else 'CPU'})"
            ax.bar(range(len(members)), heights, bottom=bottoms, color=_COLOURS[label],
                   hatch="//" if side == "cpu" and hatch_cpu else None,
                   edgecolor="white" if side == "npu" else "black", linewidth=0.4,
                   label=name if (side, label) not in seen else None)
            seen.add((side, label))
            bottoms = [b + h for b, h in zip(bottoms, heights)]


def cycles_plot(path: Path, configurations: list[dict], cpu: dict, model: str) -> None:
    """Top: the NPU's cycles by operation type (the paper's figure); bottom:
    the time per inference with the CPU's share."""
    plt = _pyplot()
    marked = _marked(configurations)
    groups: dict[str, list[dict]] = {}
    for c in marked:
        groups.setdefault(_group(c), []).append(c)
    width = max(7.0, 0.42 * len(configurations) + 1.5 * len(groups) + 2.5)
    fig, axes = plt.subplots(2, len(groups), figsize=(width, 8.4), sharey="row", squeeze=False,
                             gridspec_kw={"width_ratios": [len(g) for g in groups.values()]})
    seen: set[tuple[str, str]] = set()
    for column, (title, members) in enumerate(groups.items()):
        top, bottom = axes[0][column], axes[1][column]
        _stacked(top, members, lambda c: [(s, o, v / 1e6) for s, o, v in _segments(c, None) if s == "npu"], seen)
        _stacked(bottom, members, lambda c: [(s, o, v / 1000) for s, o, v in _segments(c, cpu["clock_mhz"])],
                 seen)
        top.set_title(title, fontsize=9)
        top.set_xticks(range(len(members)), [])
        bottom.set_xticks(range(len(members)), [c["label"] for c in members], rotation=60, ha="right", fontsize=8)
        for ax in (top, bottom):
            ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("NPU cycles per inference (millions)")
    axes[1][0].set_ylabel("time per inference (ms), CPU included")
    fig.suptitle(f"{model}: NPU cycles by operation type (top) and time per inference with the layers left on "
                 f"the CPU, {cpu['core']} at {cpu['clock_mhz']:g} MHz, hatched (bottom)\n"
                 "labels: SRAM-PEs-parallelism (O output channels, I input channels, P output pixels)", fontsize=9)
    fig.legend(loc="center right", fontsize=8, framealpha=0.9)
    fig.subplots_adjust(left=0.9 / width, right=1 - 1.7 / width, top=0.9, bottom=0.1, hspace=0.08, wspace=0.05)
    _save(fig, path)


def pareto_front(configurations: list[dict], key: str = "total_us") -> list[dict]:
    """The configurations no other one beats in both cost (PEs x SRAM) and ``key``."""
    ranked = sorted(configurations, key=lambda c: (c["pes"] * c["sram_kib"], c[key]))
    front, best = [], float("inf")
    for c in ranked:
        if c[key] < best:
            front.append(c)
            best = c[key]
    return front


def pareto_plot(path: Path, configurations: list[dict], model: str) -> None:
    """Left: the NPU's cycles against cost; right: the time per inference, CPU included."""
    plt = _pyplot()
    marked = _marked(configurations)
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.4))
    markers = {"npu": "o", "per-channel": "s", "cpu": "^"}
    panels = (("npu_cycles", 1e6, "NPU cycles per inference (millions)"),
              ("total_us", 1e3, "time per inference (ms), CPU included"))
    for ax, (key, scale, label) in zip(axes, panels):
        for group in dict.fromkeys(_group(c) for c in marked):
            members = [c for c in marked if _group(c) == group]
            ax.scatter([c["pes"] * c["sram_kib"] for c in members], [c[key] / scale for c in members],
                       marker=markers.get(members[0]["depthwise"], "D"), alpha=0.75, label=group)
        front = pareto_front(configurations, key)
        ax.plot([c["pes"] * c["sram_kib"] for c in front], [c[key] / scale for c in front], color="black",
                drawstyle="steps-post", linewidth=1, label="Pareto front")
        for c in front:
            ax.annotate(f"{c['label']} {c['depthwise']}", (c["pes"] * c["sram_kib"], c[key] / scale),
                        textcoords="offset points", xytext=(4, 4), fontsize=7)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("PEs x SRAM KiB (cost proxy)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3, which="both")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{model}: the NPU's cycles and the time per inference against hardware cost", fontsize=10)
    fig.subplots_adjust(left=0.07, right=0.98, top=0.91, bottom=0.1, wspace=0.22)
    _save(fig, path)


def _layer_times(configuration: dict, cpu_clock_mhz: float) -> list[float]:
    return [(layer["cycles"] / configuration["clock_mhz"] + layer["cpu_cycles"] / cpu_clock_mhz) * layer["calls"]
            for layer in configuration["layers"]]


def layers_plot(path: Path, configurations: list[dict], cpu: dict, model: str) -> None:
    plt = _pyplot()
    best = min(configurations, key=lambda c: c["total_us"])
    worst = max(configurations, key=lambda c: c["total_us"])
    shown = [i for i, layer in enumerate(best["layers"]) if layer["kind"] != "other"]
    fig, ax = plt.subplots(figsize=(max(8.0, 0.32 * len(shown) + 2), 5.2))
    for offset, c, colour in ((-0.2, best, "#55A868"), (0.2, worst, "#C44E52")):
        times = _layer_times(c, cpu["clock_mhz"])
        on_cpu = [c["layers"][i]["device"] == "cpu" for i in shown]
        ax.bar([k + offset for k in range(len(shown))], [times[i] for i in shown], width=0.4, color=colour,
               hatch=None, label=f"{'best' if c is best else 'worst'}: {c['label']} depthwise {c['depthwise']} "
                                 f"({c['total_us'] / 1000:.2f} ms)")
        for k, cpu_layer in enumerate(on_cpu):
            if cpu_layer:
                ax.bar(k + offset, times[shown[k]], width=0.4, color="none", edgecolor="black", hatch="//",
                       linewidth=0.4)
    ax.set_xticks(range(len(shown)), [f"{k} {LABELS[best['layers'][i]['kind']]}" for k, i in enumerate(shown)],
                  rotation=70, ha="right", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("time per inference (us), all calls of the layer")
    fig.suptitle(f"{model}: per-layer time in the best and the worst configuration (hatched: on the CPU)",
                 fontsize=10)
    ax.grid(axis="y", alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=2, frameon=False)
    fig.subplots_adjust(left=0.8 / fig.get_figwidth(), right=0.98, top=0.86, bottom=0.2)
    _save(fig, path)


def _save(fig, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=110, pil_kwargs={"compress_level": 3})
    plt.close(fig)


def import_matplotlib() -> None:
    """Imports matplotlib's Agg backend (a second or so; ``npukit explore``
    does it while its compile runs in another process)."""
    _pyplot()


def _draw(job: tuple[str, Path, dict]) -> None:
    name, path, document = job
    configurations, cpu, model = document["configurations"], document["cpu"], Path(document["model"]).name
    if name == "cycles":
        cycles_plot(path, configurations, cpu, model)
    elif name == "pareto":
        pareto_plot(path, configurations, model)
    else:
        layers_plot(path, configurations, cpu, model)


def write_plots(directory: Path, document: dict, jobs: int = 1) -> dict[str, Path]:
    """The three plots, drawn in ``jobs`` processes."""
    import multiprocessing

    paths = {name: directory / f"{name}.png" for name in ("cycles", "pareto", "layers")}
    work = [(name, path, document) for name, path in paths.items()]
    if jobs > 1 and "fork" in multiprocessing.get_all_start_methods():
        with multiprocessing.get_context("fork").Pool(min(jobs, len(work))) as pool:
            pool.map(_draw, work)
    else:
        for job in work:
            _draw(job)
    return paths
