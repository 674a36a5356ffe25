"""The shared models on the QEMU boards: flash, RAM and instructions, npukit
against stock IREE settings, measured in one run.

    python benchmarks/board_report.py [--models DIR] [--boards mps2-an386,virt-rv32imf] [--jobs 2]

Every model is deployed twice per board with ``npukit deploy`` (static
library, seeded random input, QEMU ``-icount shift=0``):

- npukit: npukit's defaults for the board's CPU preset (the tuned CPU
  pipeline: npukit's int8 kernels);
- stock: what ``iree-compile`` does by default for the same target: the same
  triple, CPU and features (without them nothing runs on the board), but its
  own execution model (async, which needs the full HAL), its 64-bit VM index
  type and IREE's own CPU code (the stock CPU pipeline).

Both run on npukit's runtime (the only IREE-compatible runtime that runs on
these boards), so the columns compare what the compiler settings cost.
Instructions are the board's count for one steady-state inference (mps2
boards count in steps of 40 instructions, virt counts each with minstret).

Writes ``boards.md`` and ``boards.json`` to the output directory. A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODELS = ("kws_int8", "resnet8_int8", "kws_f32", "resnet8_f32")
BOARDS = ("mps2-an386", "virt-rv32imf")


@dataclass(frozen=True)
class Configuration:
    name: str
    execution_model: str | None
    iree_flags: tuple[str, ...]
    cpu_pipeline: str


CONFIGURATIONS = (
    Configuration("npukit", None, (), "tuned"),
    Configuration("stock", "async", ("--iree-vm-target-index-bits=64",), "stock"),
)


def measure(model: Path, board: str, config: Configuration) -> dict:
    from npukit.deploy.deploy_model import deploy

    started = time.monotonic()
    try:
        result = deploy(model, board, mode="static", execution_model=config.execution_model,
                        iree_flags=config.iree_flags, cpu_pipeline=config.cpu_pipeline, seed=0)
    except Exception as e:  # a failed configuration is a figure too
        return {"model": model.stem, "board": board, "configuration": config.name, "error": str(e).splitlines()[0]}
    figures = result.to_json()
    figures.pop("outputs")
    figures.update(model=model.stem, configuration=config.name, seconds=round(time.monotonic() - started, 1))
    return figures


def _ratio(stock: dict, npukit: dict, key: str) -> float | None:
    if "error" in stock or "error" in npukit or not npukit.get(key):
        return None
    return stock[key] / npukit[key]


def markdown(rows: list[dict], boards: list[str], models: list[str]) -> str:
    by_key = {(r["model"], r["board"], r["configuration"]): r for r in rows}
    lines = ["# The shared models on the QEMU boards", "",
             "Static library, one steady-state inference, `qemu -icount shift=0`. npukit: npukit's defaults (the "
             "tuned CPU pipeline); stock: `iree-compile`'s defaults for the same target (async execution model, "
             "64-bit VM index, IREE's own CPU code), "
             "both on npukit's runtime. Flash is text + rodata; RAM is static data + arena high-water + stack "
             "high-water. Ratios are stock / npukit (above 1: npukit is smaller or faster).", ""]
    for board in boards:
        lines += [f"## {board}", "",
                  "| model | flash npukit | flash stock | ratio | RAM npukit | RAM stock | ratio | "
                  "instructions npukit | instructions stock | ratio | instr/MAC npukit | instr/MAC stock | "
                  "outputs = host |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for model in models:
            n, s = by_key.get((model, board, "npukit")), by_key.get((model, board, "stock"))
            if n is None or s is None:
                continue
            cells = [model]
            for key in ("flash_bytes", "ram_bytes", "instructions"):
                cells += [f"{n[key]:,}" if key in n else "fails", f"{s[key]:,}" if key in s else "fails"]
                r = _ratio(s, n, key)
                cells.append(f"{r:.2f}" if r is not None else "-")
            for row in (n, s):
                ipm = row.get("instructions_per_mac")
                cells.append(f"{ipm:.2f}" if ipm is not None else "-")
            cells.append("/".join("yes" if row.get("outputs_match_host") else "no" for row in (n, s)))
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        for model in models:
            n = by_key.get((model, board, "npukit"))
            if n and "flash" in n:
                f, r = n["flash"], n["ram"]
                lines.append(f"- {model} npukit flash split: model code {f['model_code']:,}, constants "
                             f"{f['constants']:,}, runtime {f['runtime']:,}, other {f['other']:,} B; RAM: static "
                             f"{r['static_data']:,}, arena {r['arena_high_water']:,}, stack {r['stack_high_water']:,} B")
        errors = [r for r in rows if r["board"] == board and "error" in r]
        lines += [f"- {r['model']} {r['configuration']} failed: {r['error']}" for r in errors]
        lines.append("")
    lines += ["Published anchors (real Cortex-M4 cycles, not QEMU instructions): TFLite Micro with CMSIS-NN "
              "runs KWS at about 8 cycles per MAC; the best commercial stacks at 1.6 to 2.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", type=Path,
                   default=Path(os.environ.get("NPUKIT_MODELS_DIR", REPO.parent / "shared" / "models")))
    p.add_argument("--model-names", default=",".join(MODELS), help="comma-separated (default: all four)")
    p.add_argument("--boards", default=",".join(BOARDS), help="comma-separated (default: %(default)s)")
    p.add_argument("--jobs", type=int, default=2, help="deploys at a time (default: 2)")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "boards")
    args = p.parse_args(argv)
    models = args.model_names.split(",")
    boards = args.boards.split(",")
    jobs = [(args.models / f"{m}.onnx", b, c) for b in boards for m in models for c in CONFIGURATIONS]
    for path, _, _ in jobs:
        if not path.is_file():
            sys.exit(f"{path}: no such model (set --models or NPUKIT_MODELS_DIR)")
    started = time.monotonic()
    rows = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(measure, *job) for job in jobs]
        for i, future in enumerate(futures, 1):
            row = future.result()
            rows.append(row)
            what = (f"{row['instructions']:,} instructions, flash {row['flash_bytes']:,} B, RAM {row['ram_bytes']:,} B"
                    if "error" not in row else f"failed: {row['error']}")
            print(f"[{i}/{len(jobs)}] {row['model']} on {row['board']} ({row['configuration']}): {what}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"seconds": round(time.monotonic() - started, 1), "configurations": [c.__dict__ for c in CONFIGURATIONS],
              "results": rows}
    (args.out / "boards.json").write_text(json.dumps(report, indent=2, default=list) + "\n")
    (args.out / "boards.md").write_text(markdown(rows, boards, models))
    print(f"wrote {args.out / 'boards.md'} in {report['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
