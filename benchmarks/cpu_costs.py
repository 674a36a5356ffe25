"""Instructions per MAC of npukit's tuned int8 kernels per kind of layer,
measured on the QEMU boards: the CPU cost ``npukit explore`` gives the
layers the NPU leaves to the CPU.

    python benchmarks/cpu_costs.py [--models DIR] [--boards mps2-an386,mps2-an500,virt-rv32imf]

For each board, ``npukit deploy`` (the tuned CPU pipeline with its default
choices: an empty tuning database, so the figures do not depend on this
machine's tuning results) runs kws_int8.tflite, resnet8_int8.tflite and a
MobileNetV1 0.25 128x128 built here (benchmarks/mobilenet_v1.py; the
224x224 one does not fit the boards' 4 MiB of flash) under QEMU
``-icount``, with each dispatch's instructions counted by the firmware. The
layers the kernels run are grouped by kind (convolution with a window,
pointwise, depthwise, fully connected); a kind's figure is its layers'
instructions over their MACs.

Writes compiler_plugin/npukit/exploration/cpu_costs.json (read by
npukit.exploration.cpu_cost, with the per-layer counts) and
benchmarks/reports/explore/cpu_costs.md. A report, not a test.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "compiler_plugin"))
sys.path.insert(0, str(REPO / "benchmarks"))

KINDS = {"convolution": "conv", "pointwise convolution": "pointwise", "depthwise convolution": "depthwise",
         "fully connected": "dense"}
BOARDS = ("mps2-an386", "mps2-an500", "virt-rv32imf")


def layer_counts(model: Path, board: str, tuning_db: Path) -> tuple[list[dict], str]:
    """Every dispatch the kernels run: kind, MACs per inference, instructions
    per inference; and a note when the board's outputs are not the host's
    (then no layer of the model counts: a wrong result's instructions are no
    cost figure)."""
    import numpy as np

    from npukit.deploy.deploy_model import deploy

    result = deploy(model, board, cpu_pipeline="tuned", tuning_db=tuning_db, profile_dispatches=True)
    if not result.outputs_match_host:
        worst = max(int(np.abs(a.astype(np.int64) - b.astype(np.int64)).max())
                    for a, b in zip(result.outputs, result.host_outputs))
        return [], f"{model.stem} on {board}: the outputs differ from the host's (by up to {worst}); not counted"
    manifest = result.artifact.manifest
    kernels = manifest.get("cpu_kernels") or {}
    layers = []
    for dispatch in manifest["dispatches"]:
        entry = kernels.get(dispatch["name"], {})
        kind = KINDS.get(entry.get("operation", "").split(" + ")[0])
        if kind is None or not dispatch["macs"]:
            continue
        layers.append({"model": model.stem, "dispatch": dispatch["name"], "kind": kind,
                       "layer": entry.get("layer", ""), "macs": dispatch["macs"] * dispatch.get("calls", 1),
                       "instructions": result.dispatch_instructions[dispatch["name"]]})
    return layers, ""


def figures(layers: list[dict]) -> dict[str, float]:
    out = {}
    for kind in KINDS.values():
        mine = [x for x in layers if x["kind"] == kind]
        if mine:
            out[kind] = round(sum(x["instructions"] for x in mine) / sum(x["macs"] for x in mine), 4)
    return out


def report(costs: dict) -> str:
    lines = ["# CPU cost of the layers the NPU leaves: npukit's tuned kernels per kind of layer", "",
             "Measured by `benchmarks/cpu_costs.py` on "
             f"{costs['measured_on']}: `npukit deploy` (tuned CPU pipeline, default kernel choices) on each board "
             "under QEMU `-icount`, the firmware counting each dispatch's instructions. A kind's figure is its "
             "layers' instructions over their MACs; `npukit explore` costs a CPU dispatch as its MACs times "
             "the figure of its kind, at one instruction per cycle (QEMU counts instructions, not cycles).", ""]
    for core, entry in costs["cores"].items():
        lines += [f"## {core} ({entry['board']})", "", *(f"- {note}" for note in entry["notes"]),
                  *([""] if entry["notes"] else []), "| kind | instructions per MAC | layers | MACs |",
                  "|---|---:|---:|---:|"]
        for kind, figure in entry["instructions_per_mac"].items():
            mine = [x for x in entry["layers"] if x["kind"] == kind]
            lines.append(f"| {kind} | {figure:.3f} | {len(mine)} | {sum(x['macs'] for x in mine):,} |")
        lines += ["", "| model | dispatch | kind | MACs | instructions | per MAC |", "|---|---|---|---:|---:|---:|"]
        for x in entry["layers"]:
            lines.append(f"| {x['model']} | `{x['dispatch']}` | {x['kind']} | {x['macs']:,} | "
                         f"{x['instructions']:,} | {x['instructions'] / x['macs']:.3f} |")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    from mobilenet_v1 import build

    from npukit.targets.boards import get_board

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=Path, default=REPO.parent / "shared" / "models")
    parser.add_argument("--boards", default=",".join(BOARDS))
    args = parser.parse_args()
    models = [args.models / "kws_int8.tflite", args.models / "resnet8_int8.tflite", build(0.25, 128)]
    costs = {"about": "instructions per MAC of npukit's tuned int8 kernels, per kind of layer, written by "
                      "benchmarks/cpu_costs.py", "measured_on": datetime.date.today().isoformat(), "cores": {}}
    with tempfile.TemporaryDirectory() as work:
        empty_db = Path(work) / "no-tuning.json"
        for board in args.boards.split(","):
            core = get_board(board).cpu.name
            layers, notes = [], []
            for model in models:
                print(f"{board}: {model.name}", file=sys.stderr)
                counted, note = layer_counts(model, board, empty_db)
                layers += counted
                notes += [note] if note else []
            costs["cores"][core] = {
                "board": board, "method": "npukit deploy --cpu-pipeline tuned, default kernel choices, "
                                          "per-dispatch instruction counts",
                "models": sorted({x["model"] for x in layers}), "instructions_per_mac": figures(layers),
                "notes": notes, "layers": layers}
    out = REPO / "compiler_plugin" / "npukit" / "exploration" / "cpu_costs.json"
    out.write_text(json.dumps(costs, indent=1) + "\n")
    reports = REPO / "benchmarks" / "reports" / "explore"
    reports.mkdir(parents=True, exist_ok=True)
    (reports / "cpu_costs.md").write_text(report(costs))
    print(f"wrote {out} and {reports / 'cpu_costs.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
