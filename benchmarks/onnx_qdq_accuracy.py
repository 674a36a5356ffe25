"""ONNX QDQ models against their oracle, onnxruntime with graph optimizations
off: the largest difference in LSB per model and path.

    python benchmarks/onnx_qdq_accuracy.py [--seeds N] [--models NAME,...] \
        [--board mps2-an386] [--before before.json] [--out benchmarks/reports/zoo]

For every int8 ONNX QDQ model of the zoo (the shared MLPerf Tiny models and
the generated ones, tests/zoo/README.md), on N seeded inputs (the zoo's
inputs, tests/support/zoo_oracles.py): the host with the tuned pipeline on
IREE's runtime and as a static vm-c artifact on npukit's runtime, the stock
pipeline, and ``mynpu`` (embedded, npukit's runtime; the NPU computes
TFLite's fixed-point requantization). With ``--board``, each model is also
deployed to that board (`npukit deploy`, static, QEMU with -icount) with the
tuned pipeline: its instructions per inference and per MAC, and whether
every sample's outputs equal the host's. With ``--before`` (this script's
JSON from another version of npukit, e.g. run with that checkout's
``compiler_plugin`` on PYTHONPATH) the tables show that version's host and
board figures beside. Writes ``onnx_qdq.md`` and ``onnx_qdq.json``. A
report, not a test.
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


def measure_board(record, board: str, seeds: int) -> dict:
    """The tuned build on ``board``: instructions per inference and per MAC
    (the first sample) and whether every sample equals the host's outputs."""
    from npukit.deploy.deploy_model import deploy

    try:
        result = deploy(record.path, board, samples=seeds, seed=5)
    except Exception as e:  # noqa: BLE001 - a model that does not deploy is reported with its one line
        return {"error": str(e).splitlines()[0] if str(e) else type(e).__name__}
    return {"instructions": result.instructions, "macs": result.macs,
            "per_mac": round(result.instructions / result.macs, 2) if result.macs else None,
            "identical": all(s.identical_to_host for s in result.samples)}


def _board_report(results: list[dict], before: dict[str, dict], board: str) -> list[str]:
    lines = ["", f"## Instructions on {board}", "",
             f"The tuned build deployed to {board} (`npukit deploy`, static library, QEMU with -icount): "
             "instructions per inference and per MAC (the MACs of the compiled model's contractions), and "
             "whether every sample's outputs are identical to the host's."
             + (" `before`: the same from the version the --before JSON was written with." if before else ""), ""]
    head, rule = "| model | MACs | instructions | per MAC | identical to host |", "|---|---:|---:|---:|:-:|"
    if before:
        head, rule = head + " per MAC before |", rule + "---:|"
    lines += [head, rule]
    for r in sorted(results, key=lambda r: -r.get("macs", 0)):
        b = r.get("board")
        if b is None:
            continue
        if "error" in b:
            row = f"| {r['name']} | | error: {b['error']} | | |"
        else:
            row = (f"| {r['name']} | {b['macs']:,} | {b['instructions']:,} | {b['per_mac']} | "
                   f"{'yes' if b['identical'] else 'NO'} |")
        if before:
            row += f" {before.get(r['name'], {}).get('board', {}).get('per_mac', '')} |"
        lines.append(row)
    return lines


def _report(results: list[dict], before: dict[str, dict], seeds: int, seconds: float, board: str | None) -> str:
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
    host_before = any("host" in r for r in before.values())  # a --before run may have measured the board only
    if host_before:
        head, rule = head + " host before |", rule + "---:|"
    lines += [head, rule]
    for r in sorted(results, key=lambda r: -r.get("macs", 0)):
        row = f"| {r['name']} | {r['macs']:,} | " + " | ".join(str(r.get(k, "")) for k in PATHS) + " |"
        if host_before:
            row += f" {before.get(r['name'], {}).get('host', '')} |"
        lines.append(row)
    if board:
        lines += _board_report(results, before, board)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "zoo")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--models", help="comma-separated model names (default: every int8 ONNX QDQ zoo model)")
    parser.add_argument("--before", type=Path, help="this script's JSON from another version, shown beside")
    parser.add_argument("--json-only", action="store_true", help="write only onnx_qdq.json (for --before)")
    parser.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated, of {', '.join(PATHS)}")
    parser.add_argument("--board", help="also deploy each model to this board and count its instructions")
    args = parser.parse_args(argv)
    models = _onnx_qdq_models(set(args.models.split(",")) if args.models else None)
    started = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory(prefix="npukit-onnx-qdq-") as work:
        for name, record in models:
            print(name, file=sys.stderr, flush=True)
            results.append(measure(name, record, args.seeds, Path(work) / name,
                                   tuple(p for p in args.paths.split(",") if p)))
            if args.board:
                results[-1]["board"] = measure_board(record, args.board, args.seeds)
    seconds = time.perf_counter() - started
    before = {}
    if args.before:
        before = {r["name"]: r for r in json.loads(args.before.read_text())["models"]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "onnx_qdq.json").write_text(json.dumps({"seconds": round(seconds, 1), "seeds": args.seeds,
                                                        "board": args.board, "models": results}, indent=1))
    if not args.json_only:
        (args.out / "onnx_qdq.md").write_text(_report(results, before, args.seeds, seconds, args.board))
    print(args.out / ("onnx_qdq.json" if args.json_only else "onnx_qdq.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
