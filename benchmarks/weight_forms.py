"""The tuned kernels' convolution weight forms on Cortex-M4: int8 weights
(the model's own bytes, SXTB16 in the dot product) against int16-widened
ones (twice the weight bytes), with the parameter blocks they make.

    python benchmarks/weight_forms.py [--models NAME,...] [--forms int8,int16] [--out benchmarks/reports/cpu]
                                      [--baseline OLD.json --baseline-name TEXT]

For each model (kws_int8 and resnet8_int8 from the shared models, and the
zoo's mobilenet_v1_025_96_gray, ds_cnn_s and mobilenet_v2_035_96_rgb int8
models; tests/zoo/README.md) and each weight form, ``npukit deploy`` on
``mps2-an386`` (static, tuned pipeline, no tuning database) with every
convolution and fully connected layer that offers both forms forced to the
one measured (``kernel_choices``; depthwise layers keep their default): instructions per
inference and per MAC (QEMU ``-icount``, in the board timer's steps of 40),
the model's constants in flash (rodata), the bytes of all layers'
parameter blocks (words, per-channel tables and packed weights, summed over
the layers, as the compile makes them) and whether the board's outputs
equal the host's.

``--baseline`` is an earlier run's weight_forms.json (another commit's
code, named by ``--baseline-name``): the report then gives its figures
beside this run's.

Writes ``weight_forms.md`` and ``weight_forms.json``. A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "compiler_plugin"))
sys.path.insert(0, str(REPO / "benchmarks"))

BOARD = "mps2-an386"
FORMS = ("int8", "int16")
SHARED = ("kws_int8", "resnet8_int8")
ZOO = ("mobilenet_v1_025_96_gray-int8", "ds_cnn_s-int8", "mobilenet_v2_035_96_rgb-int8")


def _model_path(name: str) -> Path:
    if name in SHARED:
        return Path(os.environ.get("NPUKIT_MODELS_DIR", REPO.parent / "shared" / "models")) / f"{name}.tflite"
    from zoo_selection import int8_tflite_models

    found = int8_tflite_models({name})
    if not found:
        raise SystemExit(f"{name}: no such int8 .tflite model in the zoo")
    return found[0][1].path


def _block_bytes(model: Path, chosen: dict, work: Path) -> tuple[int, int]:
    """(bytes, count) of the layers' parameter blocks in the model's static
    library for cortex-m4: its npukit_layer_* read-only symbols."""
    import subprocess

    import npukit

    result = npukit.compile(model, target="cortex-m4", output="static", out_dir=work / "blocks",
                            kernel_choices=chosen)
    sizes = []
    for obj in Path(result.directory).glob("*.o"):
        listing = subprocess.run(["arm-none-eabi-nm", "-S", str(obj)], check=True, capture_output=True, text=True)
        for line in listing.stdout.splitlines():
            fields = line.split()
            if len(fields) == 4 and fields[3].startswith("npukit_layer_"):
                sizes.append(int(fields[1], 16))
    return sum(sizes), len(sizes)


def _forced(model: Path, form: str, work: Path) -> dict:
    """kernel_choices with every layer that offers both weight forms forced to ``form``."""
    import npukit
    from npukit.cpu.kernel_choice import KernelChoice

    result = npukit.compile(model, target="cortex-m4", output="static", out_dir=work / f"probe-{form}")
    chosen = {}
    for entry in (result.manifest.get("cpu_kernels") or {}).values():
        offered = {c["weights"] for c in entry.get("candidates", ())}
        if {"int8", "int16"} <= offered:  # a convolution or fully connected layer with the choice of forms
            chosen[entry["layer"]] = KernelChoice(weights=form)
    return chosen


def measure(name: str, form: str) -> dict:
    from npukit.deploy.deploy_model import deploy

    model = _model_path(name)
    with tempfile.TemporaryDirectory(prefix="npukit-forms-") as tmp:
        chosen = _forced(model, form, Path(tmp))
        block_bytes, blocks = _block_bytes(model, chosen, Path(tmp))
        result = deploy(model, BOARD, seed=0, kernel_choices=chosen)
    return {"model": name, "form": form, "forced_layers": len(chosen), "macs": result.macs,
            "instructions": result.instructions, "instructions_per_mac": result.instructions_per_mac,
            "constants": result.flash.constants, "block_bytes": block_bytes, "blocks": blocks,
            "identical": result.outputs_match_host}


def _comparison(rows: list[dict], baseline: list[dict], name: str) -> list[str]:
    old = {(r["model"], r["form"]): r for r in baseline if "error" not in r}
    lines = ["", f"## Against {name}", "",
             "| model | weights | instructions before | after | change | instr/MAC before | after | "
             "block bytes before | after | change |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        b = old.get((r["model"], r["form"]))
        if b is None or "error" in r:
            continue
        lines.append(f"| {r['model']} | {r['form']} | {b['instructions']:,} | {r['instructions']:,} | "
                     f"{100 * (r['instructions'] / b['instructions'] - 1):+.1f}% | {b['instructions_per_mac']:.3f} | "
                     f"{r['instructions_per_mac']:.3f} | {b['block_bytes']:,} | {r['block_bytes']:,} | "
                     f"{r['block_bytes'] - b['block_bytes']:+,} |")
    return lines


def report(rows: list[dict], seconds: float, baseline: list[dict] | None = None, baseline_name: str = "") -> str:
    lines = ["# Convolution weight forms on Cortex-M4", "",
             "Written by `benchmarks/weight_forms.py`: `npukit deploy` on `mps2-an386` (static, tuned pipeline, "
             "no tuning database) with every convolution and fully connected layer that offers both forms forced "
             "to the one measured; depthwise layers keep their default form. Instructions per inference come from "
             "QEMU `-icount` "
             "in the board timer's steps of 40. Block bytes: the parameter blocks of all layers the kernels run "
             "(words, per-channel tables, packed weights), as the compile makes them; constants: the model's "
             "rodata in flash (blocks and IREE's constant pool).", "",
             "| model | weights | layers forced | MACs | instructions | instr/MAC | block bytes | constants | "
             "outputs = host |", "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['form']} | {r['error']} | | | | | | |")
            continue
        lines.append(f"| {r['model']} | {r['form']} | {r['forced_layers']} | {r['macs']:,} | "
                     f"{r['instructions']:,} | {r['instructions_per_mac']:.3f} | {r['block_bytes']:,} | "
                     f"{r['constants']:,} | {'yes' if r['identical'] else 'NO'} |")
    if baseline:
        lines += _comparison(rows, baseline, baseline_name or "the baseline")
    lines += ["", f"{len(rows)} builds in {seconds:.0f} s.", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(SHARED + ZOO), help="comma-separated model names")
    parser.add_argument("--forms", default=",".join(FORMS), help="comma-separated weight forms")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "cpu")
    parser.add_argument("--baseline", type=Path, help="an earlier run's weight_forms.json to compare with")
    parser.add_argument("--baseline-name", default="", help="what the baseline measured (a commit)")
    args = parser.parse_args()
    baseline = json.loads(args.baseline.read_text()) if args.baseline else None
    start = time.time()
    rows = []
    for name in args.models.split(","):
        for form in args.forms.split(","):
            try:
                rows.append(measure(name, form))
            except Exception as e:  # noqa: BLE001 - a model that fails is reported, with its one line
                rows.append({"model": name, "form": form, "error": str(e).splitlines()[0] if str(e) else repr(e)})
            print(json.dumps(rows[-1]), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "weight_forms.json").write_text(json.dumps(rows, indent=1) + "\n")
    (args.out / "weight_forms.md").write_text(report(rows, time.time() - start, baseline, args.baseline_name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
