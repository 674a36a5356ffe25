"""The int8 models with IREE's own CPU code (stock) and with npukit's tuned
CPU pipeline (``cpu_pipeline="tuned"``), measured in one run.

    python benchmarks/cpu_pipelines.py [--models DIR] [--boards mps2-an386,virt-rv32imf] [--runs 200]

- host: the .vmfb of each pipeline on IREE's stock runtime with one thread
  (``local-sync``), against the TFLite interpreter with one thread; median
  latency of ``--runs`` inferences of each after warm-up, timed in ten
  alternating rounds (TFLite, stock, tuned, TFLite, ...) so that a shared
  host's slow phases weigh on all three alike; the spread of the per-round
  tuned / TFLite ratios is reported too;
- boards: ``npukit deploy`` (static library, QEMU ``-icount shift=0``) of
  each pipeline: instructions per inference and per MAC, flash, and whether
  the board's outputs equal the host's (same pipeline);
- compile seconds of each pipeline;
- tuning: unless ``--no-tune``, ``npukit tune`` first runs for each model on
  the host and on each board, into a database of its own that the tuned
  builds below then read; its wall time and what it chose are reported.

Writes ``cpu_pipelines.md`` and ``cpu_pipelines.json`` to the output
directory. A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
MODELS = ("kws_int8", "resnet8_int8")
BOARDS = ("mps2-an386", "virt-rv32imf")
PIPELINES = ("stock", "tuned")


ROUNDS = 10


def _times(call, x, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call(x)
        times.append(time.perf_counter() - start)
    return times


def _interleaved_ms(calls: dict, x, runs: int) -> tuple[dict, list[float]]:
    """Median ms of each call over ROUNDS alternating rounds of runs / ROUNDS
    inferences each, and the per-round ratios of the last call to the first."""
    per_round = max(1, runs // ROUNDS)
    for call in calls.values():
        _times(call, x, max(5, runs // 10))  # warm-up
    samples = {name: [] for name in calls}
    ratios = []
    for _ in range(ROUNDS):
        medians = []
        for name, call in calls.items():
            times = _times(call, x, per_round)
            samples[name] += times
            medians.append(statistics.median(times))
        ratios.append(medians[-1] / medians[0])
    return {name: round(statistics.median(t) * 1e3, 4) for name, t in samples.items()}, ratios


def host_row(models: Path, name: str, runs: int, work: Path) -> dict:
    import iree.runtime as rt
    from ai_edge_litert.interpreter import Interpreter

    import npukit

    interpreter = Interpreter(model_path=str(models / f"{name}.tflite"), num_threads=1)
    interpreter.allocate_tensors()
    inp, out = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
    x = np.random.default_rng(0).integers(-128, 128, inp["shape"], dtype=np.int8)

    def tflite(v):
        interpreter.set_tensor(inp["index"], v)
        interpreter.invoke()
        return interpreter.get_tensor(out["index"])

    row = {"model": name}
    calls = {"tflite": tflite}
    for pipeline in PIPELINES:
        started = time.monotonic()
        result = npukit.compile(models / f"{name}.onnx", out_dir=work / f"{name}-host-{pipeline}",
                                cpu_pipeline=pipeline)
        row[f"{pipeline}_compile_s"] = round(time.monotonic() - started, 2)
        module = rt.load_vm_flatbuffer_file(str(result.files["vmfb"]), driver="local-sync")
        calls[pipeline] = module[result.manifest["entry_points"][0]["name"]]
    medians, ratios = _interleaved_ms(calls, x, runs)  # the tuned pipeline last: ratios are tuned / TFLite
    row.update({f"{call}_ms": ms for call, ms in medians.items()})
    row["tuned_over_tflite_rounds"] = [round(min(ratios), 2), round(statistics.median(ratios), 2),
                                       round(max(ratios), 2)]
    return row


def board_row(models: Path, name: str, board: str, pipeline: str) -> dict:
    from npukit.deploy.deploy_model import deploy

    try:
        result = deploy(models / f"{name}.onnx", board, mode="static", cpu_pipeline=pipeline, seed=0)
    except Exception as e:  # a failed configuration is a figure too
        return {"model": name, "board": board, "pipeline": pipeline, "error": str(e).splitlines()[0]}
    return {"model": name, "board": board, "pipeline": pipeline, "instructions": result.instructions,
            "instructions_per_mac": round(result.instructions / result.macs, 3) if result.macs else None,
            "flash_bytes": result.flash.total, "ram_bytes": result.ram.total,
            "outputs_match_host": result.outputs_match_host}


def tune_row(models: Path, name: str, target: str, runs: int) -> dict:
    from npukit.tuning.tuning_search import tune

    result = tune(models / f"{name}.onnx", target, runs=runs)
    changed = [r for r in result.layers if r.best != 0]
    return {"model": name, "target": target, "seconds": round(result.seconds, 1), "layers": len(result.layers),
            "changed": len(changed), "choices": sorted({r.choice.describe() for r in result.layers}),
            "default_total": result.default_total, "tuned_total": result.tuned_total}


def markdown(host_cpu: dict, host: list[dict], boards: list[dict], tuning: list[dict]) -> str:
    lines = ["# CPU pipelines: stock IREE against npukit's tuned pipeline", "",
             "Generated by `benchmarks/cpu_pipelines.py`. Host: median latency of one inference, one thread "
             "(IREE `local-sync`, TFLite interpreter `num_threads=1`). Boards: static library, one steady-state "
             "inference under QEMU `-icount shift=0` (mps2 boards count in steps of 40).", "",
             "## Host", "",
             f"{host_cpu['name']}; npukit's x86 kernels: {host_cpu['kernels']}.", "",
             "| model | TFLite | stock | tuned | stock / tuned | tuned / TFLite | tuned / TFLite per round: min, median, max | "
             "compile stock | compile tuned |",
             "|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in host:
        lo, mid, hi = r["tuned_over_tflite_rounds"]
        lines.append(f"| {r['model']} | {r['tflite_ms']:.3f} ms | {r['stock_ms']:.3f} ms | {r['tuned_ms']:.3f} ms | "
                     f"{r['stock_ms'] / r['tuned_ms']:.2f} | {r['tuned_ms'] / r['tflite_ms']:.2f} | "
                     f"{lo:.2f}, {mid:.2f}, {hi:.2f} | {r['stock_compile_s']:.1f} s | {r['tuned_compile_s']:.1f} s |")
    by_key = {(r["model"], r["board"], r["pipeline"]): r for r in boards}
    for board in dict.fromkeys(r["board"] for r in boards):
        lines += ["", f"## {board}", "",
                  "| model | instructions stock | instructions tuned | stock / tuned | instr/MAC stock | "
                  "instr/MAC tuned | flash stock | flash tuned | outputs = host |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for model in dict.fromkeys(r["model"] for r in boards):
            s, t = by_key.get((model, board, "stock")), by_key.get((model, board, "tuned"))
            if s is None or t is None:
                continue
            if "error" in s or "error" in t:
                lines.append(f"| {model} | {s.get('error', s.get('instructions'))} | "
                             f"{t.get('error', t.get('instructions'))} | | | | | | |")
                continue
            lines.append(f"| {model} | {s['instructions']:,} | {t['instructions']:,} | "
                         f"{s['instructions'] / t['instructions']:.2f} | {s['instructions_per_mac']:.2f} | "
                         f"{t['instructions_per_mac']:.2f} | {s['flash_bytes']:,} | {t['flash_bytes']:,} | "
                         f"{'yes' if s['outputs_match_host'] else 'no'}/{'yes' if t['outputs_match_host'] else 'no'} |")
    if tuning:
        lines += ["", "## Tuning (`npukit tune`, before the tuned builds above)", "",
                  "| model | target | wall time | layers | changed from the default | choices |",
                  "|---|---|---:|---:|---:|---|"]
        for r in tuning:
            lines.append(f"| {r['model']} | {r['target']} | {r['seconds']:.0f} s | {r['layers']} | {r['changed']} | "
                         f"{'; '.join(r['choices'])} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", type=Path,
                   default=Path(os.environ.get("NPUKIT_MODELS_DIR", REPO.parent / "shared" / "models")))
    p.add_argument("--boards", default=",".join(BOARDS), help="comma-separated (default: %(default)s)")
    p.add_argument("--runs", type=int, default=200, help="host inferences timed per build (default: 200)")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "cpu")
    p.add_argument("--no-tune", action="store_true", help="skip npukit tune: the tuned builds use the defaults")
    args = p.parse_args(argv)
    for name in MODELS:
        if not (args.models / f"{name}.onnx").is_file():
            sys.exit(f"{args.models / name}.onnx: no such model (set --models or NPUKIT_MODELS_DIR)")
    tuning_dir = tempfile.TemporaryDirectory(prefix="npukit-cpu-tuning-")
    os.environ["NPUKIT_TUNING_DB"] = str(Path(tuning_dir.name) / "tuning.json")  # this run's results only
    tuning = []
    if not args.no_tune:
        for target in ("host", *args.boards.split(",")):
            for name in MODELS:
                print(f"{name}: tuning for {target}", flush=True)
                tuning.append(tune_row(args.models, name, target, max(args.runs // 5, 20)))
    with tempfile.TemporaryDirectory(prefix="npukit-cpu-pipelines-") as tmp:
        host = []
        for name in MODELS:
            print(f"{name}: host", flush=True)
            host.append(host_row(args.models, name, args.runs, Path(tmp)))
    boards = []
    for board in args.boards.split(","):
        for name in MODELS:
            for pipeline in PIPELINES:
                print(f"{name}: {board} ({pipeline})", flush=True)
                boards.append(board_row(args.models, name, board, pipeline))
    args.out.mkdir(parents=True, exist_ok=True)
    from npukit.cpu.layer_kernels import host_vector_kernels
    from npukit.cpu.tuning_database import host_cpu_name

    host_cpu = {"name": host_cpu_name(), "kernels": host_vector_kernels()}
    (args.out / "cpu_pipelines.json").write_text(json.dumps({"host_cpu": host_cpu, "host": host, "boards": boards,
                                                             "tuning": tuning}, indent=2) + "\n")
    text = markdown(host_cpu, host, boards, tuning)
    (args.out / "cpu_pipelines.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
