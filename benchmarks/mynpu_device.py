"""The mynpu device: its code size on Cortex-M4 and the simulator's speed on
this machine.

    python benchmarks/mynpu_device.py [--models DIR] [--out benchmarks/reports/mynpu]

Code size: the device's C files (stream validator/executor, mynpu-v1
container, HAL loader and dispatch, simulator backend) compiled by
arm-none-eabi-gcc for Cortex-M4 at -Os, text + rodata per file, with and
without status messages.

Throughput: simulated MACs per second of host time for three convolution
streams run on the C simulator through npukit.mynpu.simulator (ctypes; the
call overhead is included): the first layer of kws_int8 (from the model), and
two synthetic layers of resnet8's shapes (16 channels at 32x32, 64 at 8x8).

Writes ``mynpu.md`` and ``mynpu.json``. A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from npukit.mynpu.isa import HardwareConfig
from npukit.mynpu.simulator import run_stream
from npukit.runtime.sources import include_dirs, runtime_source_root

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from support.mynpu_streams import ConvLayer, conv_macs, conv_stream, tflite_first_conv  # noqa: E402

DEVICE_FILES = ("stream.c", "executable_format.c", "mynpu_executable.c", "simulator_backend.c")
CORTEX_M4_FLAGS = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-Os",
                   "-ffunction-sections", "-fdata-sections", "-DNPUKIT_BARE_METAL=1",
                   "-DNPUKIT_NO_SYSTEM_ALLOCATOR=1"]
VARIANTS = (("with messages", ("-DNPUKIT_STATUS_MESSAGES=1",)), ("no messages", ("-DNPUKIT_STATUS_MESSAGES=0",)))


def code_size() -> dict[str, dict[str, int]]:
    root = runtime_source_root()
    includes = [f"-I{d}" for d in include_dirs(root)]
    sizes: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for variant, defines in VARIANTS:
            sizes[variant] = {}
            for name in DEVICE_FILES:
                obj = Path(tmp) / (name + ".o")
                subprocess.run(["arm-none-eabi-gcc", *CORTEX_M4_FLAGS, *defines, *includes, "-c",
                                str(root / "hal_driver" / "src" / "mynpu" / name), "-o", str(obj)], check=True)
                out = subprocess.run(["arm-none-eabi-size", "-A", str(obj)], check=True, capture_output=True,
                                     text=True).stdout
                total = sum(int(line.split()[1]) for line in out.splitlines()
                            if line.startswith((".text", ".rodata")))
                sizes[variant][name] = total
            sizes[variant]["total"] = sum(sizes[variant].values())
    return sizes


def synthetic(shape_in, out_channels, stride, seed) -> ConvLayer:
    rng = np.random.default_rng(seed)
    h, w, c = shape_in
    oh, ow = -(-h // stride), -(-w // stride)
    return ConvLayer((h, w, c), (oh, ow, out_channels), rng.integers(-128, 128, (out_channels, 3, 3, c), np.int8),
                     rng.integers(-5000, 5000, out_channels, np.int32), [(1 << 30, -8)] * out_channels, -3, 4,
                     (stride, stride), (1, 1), True)


def throughput(layer: ConvLayer, config: HardwareConfig, seconds: float = 2.0) -> dict:
    stream, constants, tile = conv_stream(layer, config)
    x = np.random.default_rng(0).integers(-128, 128, layer.input_shape, dtype=np.int8)
    out = np.zeros(layer.output_shape, np.int8)
    runs, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds or runs < 3:
        run = run_stream(config, stream, [x, out], constants)
        runs += 1
    elapsed = time.perf_counter() - started
    macs = conv_macs(layer)
    return {"macs": macs, "runs": runs, "seconds_per_run": elapsed / runs, "macs_per_second": macs * runs / elapsed,
            "simulated_cycles": run.counters.cycles, "tile_channels": tile}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=Path, default=Path(os.environ.get("NPUKIT_MODELS_DIR",
                                                                          REPO.parent / "shared" / "models")))
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "mynpu")
    args = parser.parse_args()
    config = HardwareConfig()
    kws, _ = tflite_first_conv(args.models / "kws_int8.tflite")
    layers = {
        "kws_int8 conv 1 (49x10x1 -> 25x5x64, 10x4 s2)": kws,
        "3x3 conv 32x32x16 -> 32x32x16": synthetic((32, 32, 16), 16, 1, 1),
        "3x3 conv 8x8x64 -> 8x8x64": synthetic((8, 8, 64), 64, 1, 2),
    }
    report = {"code_size_cortex_m4": code_size(),
              "throughput": {name: throughput(layer, config) for name, layer in layers.items()},
              "config": config.__dict__}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "mynpu.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = ["# mynpu device", "", "## Code size on Cortex-M4 (-Os, text + rodata, bytes)", "",
             "| file | " + " | ".join(v for v, _ in VARIANTS) + " |", "|---|" + "---:|" * len(VARIANTS)]
    for name in (*DEVICE_FILES, "total"):
        lines.append(f"| {name} | " + " | ".join(f"{report['code_size_cortex_m4'][v][name]:,}"
                                                 for v, _ in VARIANTS) + " |")
    lines += ["", f"## Simulator throughput on this host (default configuration: {config.pes} PEs, "
              f"{config.sram_bytes // 1024} KiB SRAM)", "",
              "| layer | MACs | host time per run | simulated MACs/s | simulated cycles |", "|---|---:|---:|---:|---:|"]
    for name, t in report["throughput"].items():
        lines.append(f"| {name} | {t['macs']:,} | {t['seconds_per_run'] * 1e3:.2f} ms | "
                     f"{t['macs_per_second'] / 1e6:.0f} M | {t['simulated_cycles']:,} |")
    (args.out / "mynpu.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
