"""RAM against the live-activation lower bound, on mps2-an386, CPU and NPU builds.

    python benchmarks/memory_plan.py [--models kws_int8,kws_int8.tflite,resnet8_int8,resnet8_int8.tflite,mobilenet_v1] [--npu-only]
                                     [--cpu-only]
                                     [--out benchmarks/reports/boards] [--plots DIR]

Each model is deployed with ``npukit deploy`` (defaults: static on the CPU;
``--npu mynpu``, its default static library, for the NPU build; seeded
random input) and the report lists:

- static data (.data + .bss of the firmware, from the link map);
- the arena's high-water mark (without the simulated NPU's SRAM, which a
  real NPU has of its own), which holds the compile-time plan's block
  (``<NAME>_ARENA_SIZE``, counted once) and the runtime's own objects;
- RAM without the stack (static data + arena);
- the planned block and the plan's high-water mark the firmware reported
  (equal when the header's size is what the runtime used);
- the model's live-activation lower bound (the largest sum of its
  activations alive at once, in operator order);
- their ratio, and whether RAM without the stack is at most 1.1 x the bound
  + 2 KiB;
- the CPU's instructions for one inference (without those spent simulating
  the NPU), so that a change to the plan shows what it costs in time.

The models: kws_int8 and resnet8_int8 (.onnx and .tflite, from the shared models) and
the zoo's MobileNetV1 int8 .tflite models (generated into the zoo's cache
when missing; TensorFlow needed then). Writes ``memory_plan.md`` and
``memory_plan.json`` to the output directory. A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BOARD = "mps2-an386"
SLACK_FACTOR, SLACK_BYTES = 1.1, 2048


def _models(selected: list[str]) -> list[tuple[str, Path]]:
    sys.path.insert(0, str(REPO / "benchmarks"))
    models_dir = Path(os.environ.get("NPUKIT_MODELS_DIR", REPO.parent / "shared" / "models"))
    found = []
    for name in selected:
        if name == "mobilenet_v1":
            from zoo_selection import int8_tflite_models
            from zoo.catalogue import entries

            wanted = {n for n, _record in int8_tflite_models() if n.startswith("mobilenet_v1")}
            found += [(Path(e.name).stem, e.path()) for e in entries() if e.name in wanted]
        else:
            found.append((name, models_dir / (name if "." in name else f"{name}.onnx")))
    return found


def measure(name: str, model: Path, npu: bool, plots: Path | None) -> dict:
    from npukit.deploy.deploy_model import deploy

    started = time.monotonic()
    build = "npu" if npu else "cpu"
    try:
        result = deploy(model, BOARD, npu="mynpu" if npu else None, seed=0)
    except Exception as e:  # a failed build is a figure too
        return {"model": name, "build": build, "error": str(e).splitlines()[0]}
    if plots is not None:
        from npukit.deploy.memory_plots import write_plots

        write_plots(result, plots / f"{name}-{build}")
    ram = result.ram
    bound = result.activation_lower_bound
    return {
        "model": name,
        "build": build,
        "mode": result.artifact.mode,
        "static_data": ram.static_data,
        "arena": ram.runtime_arena,
        "ram_without_stack": ram.without_stack,
        "stack": ram.stack_high_water,
        "arena_planned": result.arena_planned,
        "arena_plan_high_water": ram.buffer_plan_high_water if result.arena_planned is not None else None,
        "runtime_objects": ram.runtime_arena - (result.arena_planned or 0),
        "activation_lower_bound": bound,
        "ratio": round(ram.without_stack / bound, 3) if bound else None,
        "limit": int(SLACK_FACTOR * bound + SLACK_BYTES) if bound else None,
        "passes": bool(bound) and ram.without_stack <= SLACK_FACTOR * bound + SLACK_BYTES,
        "cpu_instructions": result.cpu_instructions,
        "memory_plan_refused": (result.artifact.manifest.get("memory_plan") or {}).get("refused"),
        "outputs_identical_to_host": result.outputs_identical_to_host,
        "seconds": round(time.monotonic() - started, 1),
    }


def _n(value) -> str:
    return f"{value:,}" if isinstance(value, int) else ("n/a" if value is None else str(value))


def markdown(rows: list[dict]) -> str:
    lines = [
        "# RAM against the live-activation lower bound",
        "",
        f"`npukit deploy --board {BOARD}` (CPU: static library; NPU: `--npu mynpu`, a static library as by "
        "default), seeded random input. RAM without the stack = static data + the arena's high-water mark (the "
        "compile-time plan's block counted once, the simulated NPU's SRAM not counted). The arena holds the "
        "planned buffers "
        "(`<NAME>_ARENA_SIZE`) and the runtime's own objects (module state, buffer records, and in embedded "
        "builds the executables loaded into RAM). Bound: the largest sum of the model's simultaneously live "
        f"activations. Passes: RAM without the stack <= {SLACK_FACTOR} x bound + {SLACK_BYTES // 1024} KiB. "
        "CPU instructions: one inference's, without those the board spends simulating the NPU.",
        "",
        "| model | build | static data | arena | RAM w/o stack | planned (header) | plan high-water | runtime "
        "objects | lower bound | ratio | limit | passes | CPU instructions |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['build']} | error: {r['error']} |||||||||||")
            continue
        lines.append(
            f"| {r['model']} | {r['build']} | {_n(r['static_data'])} | {_n(r['arena'])} | "
            f"{_n(r['ram_without_stack'])} | {_n(r['arena_planned'])} | {_n(r['arena_plan_high_water'])} | "
            f"{_n(r['runtime_objects'])} | {_n(r['activation_lower_bound'])} | {_n(r['ratio'])} | "
            f"{_n(r['limit'])} | {'yes' if r['passes'] else 'no'} | {_n(r.get('cpu_instructions'))} |")
    refused = [r for r in rows if r.get("memory_plan_refused")]
    for r in refused:
        lines.append(f"\n{r['model']} ({r['build']}): no memory plan: {r['memory_plan_refused']}")
    lines += ["", "Bytes. Written by `benchmarks/memory_plan.py`.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="kws_int8,kws_int8.tflite,resnet8_int8,resnet8_int8.tflite,mobilenet_v1")
    parser.add_argument("--cpu-only", action="store_true")
    parser.add_argument("--npu-only", action="store_true")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "boards")
    parser.add_argument("--plots", type=Path, help="also write each deploy's memory.png and flash.png here")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "compiler_plugin"))
    sys.path.insert(0, str(REPO / "tests"))
    builds = [False] if args.cpu_only else [True] if args.npu_only else [False, True]
    rows = []
    for name, path in _models(args.models.split(",")):
        for npu in builds:
            row = measure(name, path, npu, args.plots)
            print(json.dumps(row), flush=True)
            rows.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "memory_plan.json").write_text(json.dumps(rows, indent=2) + "\n")
    (args.out / "memory_plan.md").write_text(markdown(rows))


if __name__ == "__main__":
    main()
