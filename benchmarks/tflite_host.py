""".tflite models on the host the way a user calls them: ``npukit.load`` of
the tuned pipeline's .vmfb against the TFLite interpreter, one thread.

    python benchmarks/tflite_host.py [--models DIR] [--select a,b] [--min-macs N] [--runs 300] [--no-tune]
                                     [--extra a.tflite,...]

- models: every int8 .tflite model of the zoo (benchmarks/zoo_selection.py:
  the shared MLPerf Tiny models, the third-party zoo and the generated
  models; recurrent ones excluded) above ``--min-macs`` (1M by default), or
  those ``--select`` names (file names or stems), plus ``--extra`` files;

- latency: the median (and fastest) wall time and the median CPU time of
  the calling thread over ``--runs`` calls of each after warm-up, timed in
  ten alternating rounds (TFLite, TFLite without its default delegate,
  npukit, TFLite, ...) so that a shared host's slow phases weigh on all
  alike. A TFLite call is ``set_tensor`` + ``invoke`` + ``get_tensor``; an
  npukit call is the loaded model's ``__call__`` on the same int8 input.
  "TFLite" is the interpreter as it comes (its default XNNPACK delegate),
  "TFLite builtin" is ``BUILTIN_WITHOUT_DEFAULT_DELEGATES``;
- exactness: whether npukit's output equals TFLite's reference kernels
  (``BUILTIN_REF``) on that input;
- per dispatch: the same compile as an embedded artifact on npukit's
  runtime with its dispatch hook; each dispatch's median wall time (the
  hook's call into Python included) and who runs it: npukit's layer kernels
  (operation and weight form) or IREE's own code generation (why not);
- tuning: unless ``--no-tune``, ``npukit tune`` on the host first, into a
  database of its own that the builds read.

Writes ``tflite_host.md`` and ``tflite_host.json`` to the output directory.
A run of ``--select``ed models replaces their rows (and tuning rows) in the
report already there and keeps the others, ordered by MACs; each row says
the load it was measured at.
A report, not a test.
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
MIN_MACS = 1_000_000  # the models the host-speed goal covers
ROUNDS = 10
DISPATCH_RUNS = 100


def _times(call, runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each call (the calling thread's CPU time: both
    run on it, one thread; a loaded host's waits for a core stay out)."""
    wall, cpu = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.thread_time()
        call()
        cpu.append(time.thread_time() - start_cpu)
        wall.append(time.perf_counter() - start)
    return wall, cpu


def _interleaved_ms(calls: dict, runs: int) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Each call's median and fastest wall ms and median CPU ms over ROUNDS
    alternating rounds."""
    per_round = max(1, runs // ROUNDS)
    for call in calls.values():
        _times(call, max(5, runs // 10))  # warm-up
    samples: dict[str, list[float]] = {name: [] for name in calls}
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(ROUNDS):
        for name, call in calls.items():
            wall, thread = _times(call, per_round)
            samples[name] += wall
            cpu[name] += thread
    return ({name: round(statistics.median(t) * 1e3, 4) for name, t in samples.items()},
            {name: round(min(t) * 1e3, 4) for name, t in samples.items()},
            {name: round(statistics.median(t) * 1e3, 4) for name, t in cpu.items()})


def _interpreter(path: Path, resolver: str):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interpreter = Interpreter(model_path=str(path), num_threads=1,
                              experimental_op_resolver_type=getattr(OpResolverType, resolver))
    interpreter.allocate_tensors()
    inp, out = interpreter.get_input_details()[0], interpreter.get_output_details()[0]

    def call(x):
        interpreter.set_tensor(inp["index"], x)
        interpreter.invoke()
        return interpreter.get_tensor(out["index"])

    return call, inp


def dispatch_rows(path: Path, x: np.ndarray, work: Path) -> list[dict]:
    """Each dispatch's median wall time on npukit's runtime and who runs it."""
    import npukit
    from npukit.runtime.binding import NpukitRuntimeModel

    result = npukit.compile(path, target="host", output="embedded", out_dir=work / "embedded", cpu_pipeline="tuned")
    model = NpukitRuntimeModel(result, profile_dispatches=True)
    samples: dict[str, list[float]] = {}
    try:
        for run in range(DISPATCH_RUNS + 5):
            model.dispatch_seconds.clear()
            model(x)
            if run >= 5:
                for export, seconds in model.dispatch_seconds.items():
                    samples.setdefault(export, []).append(seconds)
    finally:
        model.close()
    kernels = result.manifest.get("cpu_kernels") or {}
    macs = {d["name"]: d["macs"] for d in result.manifest["dispatches"]}
    rows = []
    for export, seconds in samples.items():
        entry = kernels.get(export, {})
        if "layer" in entry:
            runs_it = f"npukit: {entry['operation']} ({entry['choice']['weights']} weights)"
        else:
            runs_it = f"IREE: {entry.get('reason', 'not a layer')}"
        rows.append({"dispatch": export, "macs": macs.get(export, 0), "npukit": "layer" in entry,
                     "runs_it": runs_it, "us": round(statistics.median(seconds) * 1e6, 2)})
    return rows


def model_row(path: Path, runs: int, work: Path) -> dict:
    import npukit

    tflite, inp = _interpreter(path, "AUTO")
    builtin, _ = _interpreter(path, "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    reference, _ = _interpreter(path, "BUILTIN_REF")
    x = np.random.default_rng(0).integers(-128, 128, inp["shape"], dtype=np.int8).astype(inp["dtype"])
    started = time.monotonic()
    result = npukit.compile(path, out_dir=work / "vmfb", cpu_pipeline="tuned")
    compile_s = time.monotonic() - started
    model = npukit.load(result)
    expected = reference(x)
    got = model(x)[0].reshape(expected.shape)
    medians, fastest, cpu = _interleaved_ms({"tflite": lambda: tflite(x), "tflite_builtin": lambda: builtin(x),
                               "npukit": lambda: model(x)}, runs)
    dispatches = dispatch_rows(path, x, work)
    return {"model": path.stem, "macs": sum(d["macs"] for d in dispatches), "compile_s": round(compile_s, 1),
            "equal_to_reference": bool(np.array_equal(got, expected)),
            **{f"{k}_ms": v for k, v in medians.items()}, **{f"{k}_fastest_ms": v for k, v in fastest.items()},
            **{f"{k}_cpu_ms": v for k, v in cpu.items()},
            "load_average": round(os.getloadavg()[0], 1), "dispatches": dispatches,
            # How the compile whose outputs were compared ran: the pipeline (a failed tuned compile falls back to
            # the stock one), its notes, and the layers on a tuning database entry.
            "pipeline": result.manifest.get("cpu_pipeline"), "warnings": result.manifest.get("warnings", []),
            "tuned_layers": sorted({(e["layer"], e["choice"]["weights"], e["choice"]["conv_form"])
                                    for e in (result.manifest.get("cpu_kernels") or {}).values() if e.get("tuned")})}


def tune_row(path: Path, runs: int) -> dict:
    from npukit.tuning.tuning_search import tune

    result = tune(path, "host", runs=runs)
    changed = [r for r in result.layers if r.best != 0]
    return {"model": path.stem, "seconds": round(result.seconds, 1), "layers": len(result.layers),
            "changed": len(changed), "choices": sorted({r.choice.describe() for r in result.layers})}


def markdown(host_cpu: dict, rows: list[dict], tuning: list[dict]) -> str:
    lines = ["# .tflite models on the host: npukit's tuned pipeline against the TFLite interpreter", "",
             ("Generated by `benchmarks/tflite_host.py`. Median latency of one call, one thread: `npukit.load(...)` "
             "of the tuned .vmfb (IREE `local-sync`) against the TFLite interpreter's `set_tensor` + `invoke` + "
             "`get_tensor` (`num_threads=1`; \"TFLite\" with its default XNNPACK delegate, \"builtin\" without "
             "it), timed in ten alternating rounds. On a shared host the fastest call of each is given too, and "
             "the 1-minute load average after the model's timing, and the median CPU time of a call (the "
             "calling thread's, on which both run): on a host loaded beyond its cores a call's wall time "
             "includes waiting for one."), "",
             f"{host_cpu['name']}; npukit's x86 kernels: {host_cpu['kernels']}.", "",
             ("| model | MACs | TFLite | TFLite builtin | npukit tuned | npukit / TFLite | npukit / builtin | "
             "fastest: TFLite, npukit, ratio | CPU time: TFLite, npukit, ratio | load | = TFLite reference | compile |"),
             "|---|---:|---:|---:|---:|---:|---:|---|---|---:|---|---:|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['macs'] / 1e6:.1f} M | {r['tflite_ms']:.3f} ms | "
                     f"{r['tflite_builtin_ms']:.3f} ms | {r['npukit_ms']:.3f} ms | "
                     f"{r['npukit_ms'] / r['tflite_ms']:.2f} | {r['npukit_ms'] / r['tflite_builtin_ms']:.2f} | "
                     f"{r['tflite_fastest_ms']:.3f}, {r['npukit_fastest_ms']:.3f} ms, "
                     f"{r['npukit_fastest_ms'] / r['tflite_fastest_ms']:.2f} | "
                     f"{r['tflite_cpu_ms']:.3f}, {r['npukit_cpu_ms']:.3f} ms, "
                     f"{r['npukit_cpu_ms'] / r['tflite_cpu_ms']:.2f} | {r['load_average']} | "
                     f"{'yes' if r['equal_to_reference'] else 'NO'} | {r['compile_s']:.1f} s |")
    within = [r for r in rows if r["npukit_ms"] <= 1.3 * r["tflite_ms"]]
    within_cpu = [r for r in rows if r["npukit_cpu_ms"] <= 1.3 * r["tflite_cpu_ms"]]
    lines += ["", f"npukit at most 1.3x TFLite: {len(within)} of {len(rows)} models by median wall time, "
              f"{len(within_cpu)} by median CPU time."]
    lines += ["", ("## Per dispatch (npukit's runtime with its dispatch hook; the hook adds a call into Python "
              "around each dispatch)"), ""]
    for r in rows:
        ours = sum(d["us"] for d in r["dispatches"] if d["npukit"])
        iree = sum(d["us"] for d in r["dispatches"] if not d["npukit"])
        lines += [f"### {r['model']}", "",
                  (f"npukit's layer kernels {ours:.1f} us in {sum(d['npukit'] for d in r['dispatches'])} dispatches; "
                  f"IREE's own code {iree:.1f} us in {sum(not d['npukit'] for d in r['dispatches'])} dispatches."),
                  "", "| dispatch | MACs | who runs it | us |", "|---|---:|---|---:|"]
        for d in sorted(r["dispatches"], key=lambda d: -d["us"]):
            lines.append(f"| {d['dispatch']} | {d['macs']:,} | {d['runs_it']} | {d['us']:.2f} |")
        lines.append("")
    if tuning:
        lines += ["## Tuning (`npukit tune --target host`, before the builds above)", "",
                  "| model | wall time | layers | changed from the default | choices |", "|---|---:|---:|---:|---|"]
        for t in tuning:
            lines.append(f"| {t['model']} | {t['seconds']:.0f} s | {t['layers']} | {t['changed']} | "
                         f"{'; '.join(t['choices'])} |")
    return "\n".join(lines) + "\n"


def merged(previous: Path, host_cpu: dict, rows: list[dict], tuning: list[dict]) -> tuple[list[dict], list[dict]]:
    """This run's rows in place of the same models' in the report at
    ``previous`` (from the same host CPU and kernels), the others kept;
    models by MACs, largest first."""
    if not previous.exists():
        return rows, tuning
    old = json.loads(previous.read_text())
    if old.get("host_cpu") != host_cpu:
        sys.exit(f"{previous} was measured on {old.get('host_cpu')}, this run on {host_cpu}: not merged "
                 "(write it elsewhere with --out, or rerun every model)")
    names = {r["model"] for r in rows}
    rows = sorted([r for r in old["models"] if r["model"] not in names] + rows, key=lambda r: -r["macs"])
    tuning = [t for t in old.get("tuning", []) if t["model"] not in names] + tuning
    return rows, tuning


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    shared = Path(os.environ.get("NPUKIT_MODELS_DIR", REPO.parent / "shared" / "models"))
    p.add_argument("--models", type=Path, default=shared, help="the MLPerf Tiny models (default: %(default)s)")
    p.add_argument("--select", default="", help="comma-separated zoo model names or stems (default: all above "
                   "--min-macs)")
    p.add_argument("--min-macs", type=int, default=MIN_MACS, help="the smallest model measured (default: %(default)s)")
    p.add_argument("--extra", default="", help="comma-separated further .tflite files")
    p.add_argument("--runs", type=int, default=300, help="calls timed per build (default: %(default)s)")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "cpu")
    p.add_argument("--no-tune", action="store_true", help="skip npukit tune: the builds use the defaults")
    args = p.parse_args(argv)
    os.environ["NPUKIT_MODELS_DIR"] = str(args.models)  # where the zoo's catalogue looks
    sys.path.insert(0, str(REPO / "benchmarks"))
    from zoo_selection import int8_tflite_models

    selected = {s for s in args.select.split(",") if s}
    found = [(r.macs, r.path) for _, r in int8_tflite_models(selected or None) if selected or r.macs > args.min_macs]
    paths = [path for _, path in sorted(found, key=lambda m: -m[0])] + [Path(e) for e in args.extra.split(",") if e]
    if not paths:
        sys.exit(f"no models selected from {args.models} and the generated zoo (set --models, --select or "
                 "NPUKIT_MODELS_DIR)")
    tuning_dir = tempfile.TemporaryDirectory(prefix="npukit-tflite-tuning-")
    os.environ["NPUKIT_TUNING_DB"] = str(Path(tuning_dir.name) / "tuning.json")  # this run's results only
    tuning = []
    if not args.no_tune:
        for path in paths:
            print(f"{path.stem}: tuning", flush=True)
            tuning.append(tune_row(path, max(args.runs // 3, 20)))
    rows = []
    with tempfile.TemporaryDirectory(prefix="npukit-tflite-host-") as tmp:
        for path in paths:
            print(f"{path.stem}: timing", flush=True)
            rows.append(model_row(path, args.runs, Path(tmp) / path.stem))
    from npukit.cpu.layer_kernels import host_vector_kernels
    from npukit.cpu.tuning_database import host_cpu_name

    host_cpu = {"name": host_cpu_name(), "kernels": host_vector_kernels()}
    args.out.mkdir(parents=True, exist_ok=True)
    if selected:
        rows, tuning = merged(args.out / "tflite_host.json", host_cpu, rows, tuning)
    (args.out / "tflite_host.json").write_text(json.dumps({"host_cpu": host_cpu, "models": rows,
                                                           "tuning": tuning}, indent=2) + "\n")
    text = markdown(host_cpu, rows, tuning)
    (args.out / "tflite_host.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
