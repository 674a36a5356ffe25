"""The TFLite frontend: import time per model, a whole `npukit compile` of a
.tflite against the same model's .onnx, and whether any layer of a .tflite
model is kept from the NPU or the tuned kernels for a bias reason.

    python benchmarks/tflite_frontend.py [--models DIR] [--rounds 7] [--out benchmarks/reports/tflite]

Writes ``tflite_frontend.md`` and ``.json``. The compile times are medians of
alternating runs of the `npukit compile` command (the .tflite, then the
.onnx, repeated) on this machine; the import times are medians of
repeated imports in this process.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _import_seconds(path: Path, repeats: int) -> float:
    from npukit.frontends import import_model

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        import_model(path)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _compile_command_seconds(model: Path, work: Path) -> float:
    npukit = Path(sys.executable).parent / "npukit"
    out = work / f"{model.stem}-{model.suffix[1:]}"
    start = time.perf_counter()
    subprocess.run([str(npukit), "compile", str(model), "-o", str(out)], check=True, capture_output=True)
    return time.perf_counter() - start


def _bias_reasons(model: Path, work: Path) -> list[str]:
    """Every NPU and tuned-kernel refusal that mentions a bias."""
    import npukit

    found = []
    for target, kwargs in (("mynpu", {"output": "embedded"}), ("host", {}), ("cortex-m4", {"output": "static"})):
        result = npukit.compile(model, target=target, out_dir=work / f"{model.stem}-{target}", **kwargs)
        rows = (result.manifest.get("mynpu") or {}).get("dispatches", [])
        found += [f"{target} {r['name']}: {r['reason']}" for r in rows if "bias" in r.get("reason", "")]
        kernels = result.manifest.get("cpu_kernels") or {}
        found += [f"{target} {k}: {v['reason']}" for k, v in kernels.items() if "bias" in v.get("reason", "")]
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", type=Path,
                   default=Path(os.environ.get("NPUKIT_MODELS_DIR", REPO.parent / "shared" / "models")))
    p.add_argument("--rounds", type=int, default=7, help="alternating compile rounds (default 7)")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "tflite")
    args = p.parse_args(argv)
    models = sorted(args.models.glob("*.tflite")) + sorted((args.models / "zoo").glob("*.tflite"))
    report: dict = {"host": platform.processor() or platform.machine(),
                    "tensorflow_installed": importlib.util.find_spec("tensorflow") is not None,
                    "imports": {}, "bias_refusals": {}}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for model in models:
            try:
                report["imports"][model.name] = round(_import_seconds(model, 5), 4)
            except Exception as e:  # noqa: BLE001 - a model the frontend refuses is reported as such
                report["imports"][model.name] = f"refused: {str(e).splitlines()[0]}"
        pairs = {"tflite": [], "onnx": []}
        for _ in range(args.rounds):
            pairs["tflite"].append(_compile_command_seconds(args.models / "kws_int8.tflite", work))
            pairs["onnx"].append(_compile_command_seconds(args.models / "kws_int8.onnx", work))
        report["compile_kws_int8"] = {k: {"median": round(statistics.median(v), 3), "runs": [round(t, 3) for t in v]}
                                      for k, v in pairs.items()}
        for model in models:
            if isinstance(report["imports"][model.name], str):
                continue
            report["bias_refusals"][model.name] = _bias_reasons(model, work)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tflite_frontend.json").write_text(json.dumps(report, indent=2) + "\n")
    compile_times = report["compile_kws_int8"]
    lines = [
        "# The TFLite frontend", "",
        f"Host: {report['host']}; TensorFlow installed: {'yes' if report['tensorflow_installed'] else 'no'}.", "",
        f"`npukit compile kws_int8.tflite` (host): median {compile_times['tflite']['median']:.2f} s; the same model's "
        f".onnx: {compile_times['onnx']['median']:.2f} s ({args.rounds} alternating rounds each: "
        f"{', '.join(f'{t:.2f}' for t in compile_times['tflite']['runs'])} / "
        f"{', '.join(f'{t:.2f}' for t in compile_times['onnx']['runs'])}).", "",
        "| model | import (median of 5) | layers refused for a bias reason (mynpu, host and cortex-m4 kernels) |",
        "|---|---:|---|",
    ]
    for name, seconds in report["imports"].items():
        refused = report["bias_refusals"].get(name)
        shown = f"{seconds * 1000:.1f} ms" if isinstance(seconds, float) else seconds
        lines.append(f"| {name} | {shown} | {'none' if refused == [] else '; '.join(refused) if refused else '-'} |")
    (args.out / "tflite_frontend.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
