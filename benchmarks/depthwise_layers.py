"""The depthwise 3x3 layers of the zoo's MobileNetV2 and DS-CNN int8 models,
one layer per dispatch, on Cortex-M4 (``mps2-an386``): instructions per
dispatch and per MAC of the tuned kernels.

    python benchmarks/depthwise_layers.py [--layers NAME,...] [--out benchmarks/reports/cpu]

Each layer has the geometry of a DEPTHWISE_CONV_2D of mobilenet_v2_mult_s,
mobilenet_v2_035_96_rgb or ds_cnn_xs (channels, input size, stride, SAME
padding, the model's activation, per-channel weights, input zero point
-128; two of mult_s's also unpadded, the kernel without the padded
paths), with seeded random weights and biases (tests/kernels/layer_sweeps.py
makes them as its sweeps do). All layers are branches of one model, so one
compile and one firmware measure them: ``npukit deploy`` with
``profile_dispatches`` counts each dispatch's instructions (QEMU
``-icount``), and the board's outputs are checked against the host's.

Writes ``depthwise_layers.md`` and ``depthwise_layers.json``. A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "compiler_plugin"))
sys.path.insert(0, str(REPO / "tests"))

BOARD = "mps2-an386"
SAME, VALID, RELU, RELU6 = 0, 1, 1, 3
# name: (model, channels, multiplier, input (h, w), stride, activation[, padding])
LAYERS = {
    "mult_s_32x32x8_m2": ("mobilenet_v2_mult_s", 8, 2, (32, 32), 1, RELU6),
    "mult_s_32x32x32_s2": ("mobilenet_v2_mult_s", 32, 1, (32, 32), 2, RELU6),
    "mult_s_16x16x32": ("mobilenet_v2_mult_s", 32, 1, (16, 16), 1, RELU6),
    "mult_s_16x16x32_s2": ("mobilenet_v2_mult_s", 32, 1, (16, 16), 2, RELU6),
    "mult_s_8x8x64": ("mobilenet_v2_mult_s", 64, 1, (8, 8), 1, RELU6),
    "mult_s_8x8x64_s2": ("mobilenet_v2_mult_s", 64, 1, (8, 8), 2, RELU6),
    "mult_s_4x4x128": ("mobilenet_v2_mult_s", 128, 1, (4, 4), 1, RELU6),
    "035_48x48x16": ("mobilenet_v2_035_96_rgb", 16, 1, (48, 48), 1, RELU6),
    "035_48x48x48_s2": ("mobilenet_v2_035_96_rgb", 48, 1, (48, 48), 2, RELU6),
    "035_24x24x48": ("mobilenet_v2_035_96_rgb", 48, 1, (24, 24), 1, RELU6),
    "035_12x12x96": ("mobilenet_v2_035_96_rgb", 96, 1, (12, 12), 1, RELU6),
    "035_6x6x144": ("mobilenet_v2_035_96_rgb", 144, 1, (6, 6), 1, RELU6),
    "ds_cnn_xs_25x5x32": ("ds_cnn_xs", 32, 1, (25, 5), 1, RELU),
    # mult_s's 16x16x32 outputs without padding (VALID on a larger input): the kernel without the padded paths.
    "mult_s_16x16x32_valid": ("mobilenet_v2_mult_s", 32, 1, (18, 18), 1, RELU6, VALID),
    "mult_s_16x16x32_s2_valid": ("mobilenet_v2_mult_s", 32, 1, (33, 33), 2, RELU6, VALID),
}


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def measure(names: list[str]) -> list[dict]:
    from kernels.layer_sweeps import _depthwise_branches
    from npukit.deploy.deploy_model import deploy
    from support.tflite_builder import build_model

    cases = [(c, m, hw, (3, 3), (s, s), (1, 1), padding[0] if padding else SAME, act, True, -128, False)
             for _, c, m, hw, s, act, *padding in (LAYERS[n] for n in names)]
    branches = _depthwise_branches(np.random.default_rng(1), cases)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "depthwise_layers.tflite"
        build_model(branches, path)
        result = deploy(path, BOARD, samples=1, seed=0, profile_dispatches=True)
    if not all(s.identical_to_host for s in result.samples):
        raise SystemExit("the board's outputs differ from the host's")
    # Dispatches in branch order (their ordinal is the third part of the name).
    dispatches = sorted(result.dispatch_instructions.items(), key=lambda kv: int(kv[0].split("_")[2]))
    if len(dispatches) != len(names):
        raise SystemExit(f"{len(dispatches)} dispatches for {len(names)} layers: {dispatches}")
    rows = []
    for name, branch, (dispatch, count) in zip(names, branches, dispatches):
        model, c, m, (h, w), s, act, *padding = LAYERS[name]
        out = branch.outputs[0].shape
        macs = int(np.prod(out)) * 9
        rows.append({"layer": name, "model": model, "input": [h, w, c], "multiplier": m, "stride": s,
                     "padding": "valid" if padding and padding[0] == VALID else "same",
                     "activation": {RELU: "relu", RELU6: "relu6"}[act], "output": list(out[1:]), "macs": macs,
                     "instructions": count, "per_mac": round(count / macs, 3), "dispatch": dispatch})
    return rows


def write(rows: list[dict], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    commit = _commit()
    (out / "depthwise_layers.json").write_text(json.dumps({"board": BOARD, "commit": commit, "layers": rows},
                                                          indent=1) + "\n")
    lines = [f"# Depthwise 3x3 layers on {BOARD}", "",
             f"`benchmarks/depthwise_layers.py` on {commit}: each layer one dispatch of one model ("
             "per-channel int8 weights, input zero point -128, seeded weights), instructions counted per dispatch "
             "under QEMU `-icount`; the board's outputs equal the host's.", "",
             "| layer | model | input HxWxC | M | stride | padding | output HxWxC | MACs | instructions | per MAC |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['layer']} | {r['model']} | {'x'.join(map(str, r['input']))} | {r['multiplier']} | "
                     f"{r['stride']} | {r['padding']} | {'x'.join(map(str, r['output']))} | {r['macs']:,} | "
                     f"{r['instructions']:,} | {r['per_mac']:.3f} |")
    total_i, total_m = sum(r["instructions"] for r in rows), sum(r["macs"] for r in rows)
    lines += ["", f"All layers: {total_i:,} instructions for {total_m:,} MACs, {total_i / total_m:.3f} per MAC.", ""]
    (out / "depthwise_layers.md").write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default=",".join(LAYERS), help="comma-separated names (default: all)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "cpu")
    args = parser.parse_args()
    names = args.layers.split(",")
    unknown = [n for n in names if n not in LAYERS]
    if unknown:
        raise SystemExit(f"unknown layers {unknown}; known: {', '.join(LAYERS)}")
    rows = measure(names)
    write(rows, args.out)
    for r in rows:
        print(f"{r['layer']:22s} {r['instructions']:>10,} {r['per_mac']:6.3f} per MAC")


if __name__ == "__main__":
    main()
