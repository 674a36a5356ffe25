"""ONNX QDQ models against their oracle, onnxruntime with graph optimizations
off: the largest difference in LSB per model and path.

    python benchmarks/onnx_qdq_accuracy.py [--seeds N] [--models NAME,...] \
        [--before before.json] [--out benchmarks/reports/zoo]

For every int8 ONNX QDQ model of the zoo (the shared MLPerf Tiny models and
the generated ones, tests/zoo/README.md), on N seeded inputs (the zoo's
inputs, tests/support/zoo_oracles.py): the host with the tuned pipeline on
IREE's runtime and as a static vm-c artifact on npukit's runtime, the stock
pipeline, and ``mynpu`` (embedded, npukit's runtime; the NPU computes
TFLite's fixed-point requantization). With ``--before`` (this script's JSON
from another version of npukit, e.g. run with that checkout's
``compiler_plugin`` on PYTHONPATH) the table shows that version's host
figures beside. Writes ``onnx_qdq.md`` and ``onnx_qdq.json``. A report,
not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))



def _max_lsb(loaded, run, steps: list[float | None]) -> int:
    """The largest difference in steps of the output's quantization: int8
    outputs in LSB, dequantized float outputs in units of their scale
    (rounded to the nearest step: the float products of equal steps differ
    in their last bits)."""
    import numpy as np

    worst = 0
    for x, want in zip(run.inputs, run.outputs):
        for o, (g, w) in enumerate(zip(loaded(*x), want)):
            diff = np.abs(np.asarray(g).reshape(w.shape).astype(np.float64) - w.astype(np.float64))
            if steps[o] is not None:
                diff = np.round(diff / steps[o])
            elif w.dtype.kind == "f":
                raise ValueError("a float output that no DequantizeLinear produces")
            worst = max(worst, int(diff.max(initial=0)))
    return worst


def _onnx_qdq_models(selected: set[str] | None) -> list:
    from zoo_selection import zoo_models

    return zoo_models("onnx", lambda record: record.arithmetic == "int8" and not record.oracle_limitations, selected)


PATHS = ("host", "npukit_runtime", "stock", "mynpu")


def measure(name: str, record, seeds: int, work: Path, wanted: tuple[str, ...] = PATHS) -> dict:
    import npukit
    from support.zoo_oracles import dequantized_steps, reference_run

    run = reference_run(record.path, record.input_range, seed=5, count=seeds)
    steps = dequantized_steps(record.path)
    out: dict = {"name": name, "macs": record.macs}
    paths = {
        "host": lambda: npukit.load(npukit.compile(record.path, out_dir=work / "host")),
        "npukit_runtime": lambda: npukit.load(npukit.compile(record.path, output="static", out_dir=work / "static"),
                                              runtime="npukit"),
        "stock": lambda: npukit.load(npukit.compile(record.path, cpu_pipeline="stock", out_dir=work / "stock")),
        "mynpu": lambda: npukit.load(npukit.compile(record.path, target="mynpu", output="embedded",
                                                    out_dir=work / "npu"), runtime="npukit"),
    }
    for key, load in paths.items():
        if key not in wanted:
            continue
        try:
            out[key] = _max_lsb(load(), run, steps)
        except Exception as e:  # noqa: BLE001 - a path that fails is reported with its one line
            out[key] = "error: " + (str(e).splitlines()[0] if str(e) else type(e).__name__)
    return out


def _report(results: list[dict], before: dict[str, dict], seeds: int, seconds: float) -> str:
    lines = ["# ONNX QDQ models against onnxruntime", "",
             "Written by `benchmarks/onnx_qdq_accuracy.py`: every int8 ONNX QDQ model of the zoo against "
             "onnxruntime with graph optimizations off (the oracle for ONNX models), on "
             f"{seeds} seeded inputs: the largest difference of any output, in steps of its quantization (LSB; "
             "a dequantized float output in units of its DequantizeLinear's scale). `host` is the tuned "
             "pipeline on IREE's runtime, `npukit runtime` the same as a static vm-c artifact on npukit's "
             "runtime, `stock` IREE's own code, `mynpu` the NPU (TFLite's fixed-point requantization, "
             f"see docs/cpu-pipelines.md, \"ONNX QDQ models\"). {len(results)} models in {seconds:.0f} s.", ""]
    head = "| model | MACs | host | npukit runtime | stock | mynpu |"
    rule = "|---|---:|---:|---:|---:|---:|"
    if before:
        head, rule = head + " host before |", rule + "---:|"
    lines += [head, rule]
    for r in sorted(results, key=lambda r: -r.get("macs", 0)):
        row = f"| {r['name']} | {r['macs']:,} | " + " | ".join(str(r.get(k, "")) for k in PATHS) + " |"
        if before:
            row += f" {before.get(r['name'], {}).get('host', '')} |"
        lines.append(row)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "zoo")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--models", help="comma-separated model names (default: every int8 ONNX QDQ zoo model)")
    parser.add_argument("--before", type=Path, help="this script's JSON from another version, shown beside")
    parser.add_argument("--json-only", action="store_true", help="write only onnx_qdq.json (for --before)")
    parser.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated, of {', '.join(PATHS)}")
    args = parser.parse_args(argv)
    models = _onnx_qdq_models(set(args.models.split(",")) if args.models else None)
    started = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory(prefix="npukit-onnx-qdq-") as work:
        for name, record in models:
            print(name, file=sys.stderr, flush=True)
            results.append(measure(name, record, args.seeds, Path(work) / name, tuple(args.paths.split(","))))
    seconds = time.perf_counter() - started
    before = {}
    if args.before:
        before = {r["name"]: r for r in json.loads(args.before.read_text())["models"]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "onnx_qdq.json").write_text(json.dumps({"seconds": round(seconds, 1), "seeds": args.seeds,
                                                        "models": results}, indent=1))
    if not args.json_only:
        (args.out / "onnx_qdq.md").write_text(_report(results, before, args.seeds, seconds))
    print(args.out / ("onnx_qdq.json" if args.json_only else "onnx_qdq.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
