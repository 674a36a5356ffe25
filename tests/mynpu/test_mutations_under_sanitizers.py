"""The mynpu device's validator and simulator against mutated executables,
under AddressSanitizer and UBSan (tests/c/mynpu_fuzz_test.c): random bit
flips and truncations of three valid mynpu-v1 executables are loaded and,
when accepted, executed with bindings and SRAM of exactly the declared sizes.
No crash, no sanitizer report, no hang (the timeout)."""

from __future__ import annotations

import re
import subprocess

import numpy as np

from npukit.mynpu.isa import HardwareConfig
from support.mynpu_streams import ConvLayer, conv_executable, every_instruction_executable, tflite_first_conv
from support.sanitized_runtime import sanitized_build

MUTATIONS = 150_000


def seeds(shared_models) -> list[bytes]:
    rng = np.random.default_rng(3)
    small = ConvLayer((8, 8, 8), (4, 4, 16), rng.integers(-128, 128, (16, 3, 3, 8), dtype=np.int8),
                      rng.integers(-999, 999, 16, dtype=np.int32), [(1 << 30, -7)] * 16, -5, 7, (2, 2), (1, 1), True)
    kws, _ = tflite_first_conv(shared_models / "kws_int8.tflite")
    return [
        every_instruction_executable(),
        conv_executable(small, HardwareConfig(sram_bytes=2048), double_buffered=True),  # 2 tiles
        conv_executable(kws, HardwareConfig(sram_bytes=8192)),  # a real layer in 2 tiles
    ]


def test_mutated_executables_never_crash(shared_models, tmp_path):
    program = sanitized_build() / "tests" / "c" / "mynpu_fuzz_test"
    paths = []
    for i, data in enumerate(seeds(shared_models)):
        paths.append(tmp_path / f"seed{i}.mnpu")
        paths[-1].write_bytes(data)
    proc = subprocess.run([str(program), *map(str, paths), str(MUTATIONS), "1"], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    found = re.search(r"mutations: (\d+) \((\d+) truncations\); rejected (\d+), accepted (\d+); executed (\d+)",
                      proc.stdout)
    assert found, proc.stdout
    total, truncations, rejected, accepted, executed = map(int, found.groups())
    assert total == MUTATIONS and truncations > 0
    assert rejected + accepted == MUTATIONS and rejected > 0 and executed > 0
