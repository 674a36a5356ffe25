"""The stack bound read from each firmware's machine code against the stack
high-water mark measured on the board.

    python benchmarks/stack_bound.py [--boards mps2-an386,virt-rv32imf] [--models kws_int8.tflite,...]
                                     [--out benchmarks/reports/boards]

Each model is deployed with ``npukit deploy`` (static; the CPU build and the
``--npu mynpu`` build; seeded random input; the stack sized by the deploy
from the bound) and the report lists: the compile-time bound of one
dispatch (``<NAME>_DISPATCH_STACK_SIZE``), the bound of the whole firmware
from its reset code and of one ``<name>_run``, the stack the deploy gave
the firmware, the measured high-water mark, the bound over the measured
mark, and the recursion limits the bound relies on. Writes
``stack_bound.md`` and ``stack_bound.json``. A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODELS = ("kws_int8.tflite", "resnet8_int8.tflite", "kws_int8.onnx", "zoo/hello_world_int8.tflite",
          "zoo/micro_speech_quantized.tflite")


def measure(model: Path, board: str, npu: str | None) -> dict:
    from npukit.deploy.deploy_model import deploy

    r = deploy(model, board, npu=npu, seed=3)
    s = r.stack
    return {
        "model": str(model.relative_to(model.parents[1] if model.parent.name == "zoo" else model.parent)),
        "board": board, "build": npu or "CPU",
        "dispatch_bound": (r.artifact.manifest.get("stack") or {}).get("dispatch_stack"),
        "firmware_bound": s.bytes if s else None, "run_bound": s.model.bytes if s and s.model else None,
        "reason": s.whole.reason if s else None, "assumptions": list(s.whole.assumptions) if s else [],
        "stack_size": r.ram.stack_size, "measured": r.ram.stack_high_water,
        "outputs_match_host": r.outputs_match_host,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--boards", default="mps2-an386,virt-rv32imf")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "boards")
    args = p.parse_args()
    sys.path.insert(0, str(REPO / "tests"))
    from support.models import models_dir

    root = models_dir()
    rows = []
    for name in args.models.split(","):
        for board in args.boards.split(","):
            for npu in (None, "mynpu"):
                try:
                    rows.append(measure(root / name, board, npu))
                except Exception as e:  # a model a build cannot run: listed with the error
                    rows.append({"model": name, "board": board, "build": npu or "CPU", "error": str(e)[:200]})
                print(json.dumps(rows[-1]), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "stack_bound.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = ["# Stack bound against the measured high-water mark", "",
             "`python benchmarks/stack_bound.py`; bytes. Bound: read from the linked firmware's machine code "
             "before it runs (npukit.stack); measured: the painted stack's high-water mark after the runs.", "",
             "| model | board | build | dispatch bound | run bound | firmware bound | stack given | measured | "
             "bound / measured |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['board']} | {r['build']} | error: {r['error']} |||||")
            continue
        ratio = f"{r['firmware_bound'] / r['measured']:.3f}" if r["firmware_bound"] else "no bound"
        lines.append(f"| {r['model']} | {r['board']} | {r['build']} | {r['dispatch_bound'] or '-'} | "
                     f"{r['run_bound'] or '-'} | {r['firmware_bound'] or r['reason']} | {r['stack_size']} | "
                     f"{r['measured']} | {ratio} |")
    assumptions = sorted({a for r in rows for a in r.get("assumptions", [])})
    lines += ["", "The bounds rely on these stated recursion limits "
              "(npukit/stack/indirect_calls.py): " + (", ".join(assumptions) or "none") + "."]
    (args.out / "stack_bound.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    # No tuning results: the default kernel choices, as a fresh checkout compiles.
    os.environ.setdefault("NPUKIT_TUNING_DB", str(Path(tempfile.gettempdir()) / "npukit-stack-bound-no-tuning.json"))
    sys.exit(main())
