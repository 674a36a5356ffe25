"""A recurrent model's time steps as a loop (npukit's form) or unrolled.

    python benchmarks/recurrent_time_loop.py [--model zoo/trained_lstm_int8.tflite] [--out benchmarks/reports/recurrent]

The TFLite frontend emits an LSTM's time steps as an ``scf.for`` around one
step's code; ``lower_graph(..., unroll_time_steps=True)`` emits the step once
per time step instead. Both forms of the model are compiled for the host and
for Cortex-M4 (static library), run on the host and on ``mps2-an386`` under
QEMU, and compared: compile time, host latency, instructions per inference,
flash, RAM and dispatches. Writes ``time_loop.md`` and ``time_loop.json``.
A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

import npukit
from npukit.deploy.deploy_model import deploy
from npukit.frontends.tflite.flatbuffer_reader import read_tflite
from npukit.frontends.tflite.importer import lower_graph

REPO = Path(__file__).resolve().parent.parent
BOARD = "mps2-an386"
FORMS = (("loop", False), ("unrolled", True))


def _write_form(model: Path, unroll: bool, path: Path) -> None:
    builder, _ = lower_graph(read_tflite(model), unroll_time_steps=unroll)
    builder.verify()
    path.write_bytes(builder.bytecode())


def _host_latency_us(result, x: np.ndarray, calls: int = 200) -> float:
    loaded = npukit.load(result)
    loaded(x)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        loaded(x)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main(argv: list[str] | None = None) -> int:
    models = Path(os.environ.get("NPUKIT_MODELS_DIR", REPO.parent / "shared" / "models"))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, default=models / "zoo" / "trained_lstm_int8.tflite")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "recurrent")
    p.add_argument("--work", type=Path, default=REPO / "build" / "recurrent_time_loop")
    args = p.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)

    rows, host_outputs = [], {}
    graph = read_tflite(args.model)
    input_shape = graph.tensors[graph.inputs[0]].shape
    x = np.random.default_rng(0).integers(-128, 128, input_shape).astype(np.int8)
    for form, unroll in FORMS:
        source = args.work / f"{args.model.stem}_{form}.mlirbc"
        _write_form(args.model, unroll, source)
        t0 = time.perf_counter()
        host = npukit.compile(source, out_dir=args.work / f"{form}-host", name=args.model.stem)
        host_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        board_artifact = npukit.compile(source, target="cortex-m4", output="static",
                                        out_dir=args.work / f"{form}-cortex-m4", name=args.model.stem)
        m4_seconds = time.perf_counter() - t0
        objects = {role: f for role, f in board_artifact.manifest["files"].items() if role == "static_library"}
        sizes = next(iter(objects.values()))["elf"]["sizes"]
        host_outputs[form] = npukit.load(host)(x)
        run = deploy(source, BOARD, samples=2, seed=1)
        row = {
            "form": form,
            "host_compile_seconds": round(host_seconds, 2),
            "cortex_m4_compile_seconds": round(m4_seconds, 2),
            "host_latency_us": round(_host_latency_us(host, x), 1),
            "instructions": run.instructions,
            "dispatches": run.dispatches,
            "flash_bytes": run.flash.total,
            "model_code_bytes": run.flash.model_code,
            "executables_text": sizes["text"],
            "ram_bytes": run.ram.total,
            "arena_high_water": run.ram.arena_high_water,
            "identical_to_host": run.outputs_identical_to_host,
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    same = all(np.array_equal(a, b) for a, b in zip(host_outputs["loop"], host_outputs["unrolled"]))

    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"model": args.model.name, "board": BOARD, "machine": platform.machine(), "cpus": os.cpu_count(),
            "forms_agree": same}
    (args.out / "time_loop.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    columns = [("form", "form"), ("host_compile_seconds", "host compile (s)"),
               ("cortex_m4_compile_seconds", "Cortex-M4 compile (s)"), ("host_latency_us", "host latency (us)"),
               ("instructions", f"instructions on {BOARD}"), ("dispatches", "dispatches"),
               ("executables_text", "executables .text (bytes)"), ("flash_bytes", "firmware flash (bytes)"),
               ("ram_bytes", "RAM (bytes)"), ("identical_to_host", "board = host")]
    lines = [
        "# Recurrent time steps: loop or unrolled",
        "",
        f"`{args.model.name}` (one UNIDIRECTIONAL_SEQUENCE_LSTM of "
        f"{input_shape[1]} time steps), the frontend's "
        "`scf.for` over time steps against the steps unrolled. Compile times are wall-clock on "
        f"{meta['machine']} ({meta['cpus']} CPUs, shared); host latency is the median of 200 calls on IREE's "
        f"runtime; instructions are one steady-state inference on {BOARD} under QEMU (`-icount shift=0`). "
        f"Both forms give the same outputs: {'yes' if same else 'NO'}.",
        "",
        "| " + " | ".join(title for _, title in columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for row in rows:
        lines.append("| " + " | ".join(str(row[key]) for key, _ in columns) + " |")
    (args.out / "time_loop.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
