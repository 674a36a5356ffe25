"""Small programs that reach VM and HAL features the models do not: lists,
host-side scalar code, host reads and writes of buffers, multiple outputs,
and a module whose import the runtime lacks.

Each runs on npukit's runtime in the Python binding and, built with
AddressSanitizer and UBSan, on the system heap (where the sanitizers see every
runtime object) and in an arena with the heap forbidden.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import npukit
from npukit.errors import RunError
from support.sanitized_runtime import model_check

PROGRAMS = Path(__file__).parent / "programs"

COMBINATIONS = [
    ("static", "inline-dynamic"),
    ("static", "async"),
    ("embedded", "inline-dynamic"),
    ("embedded", "async"),
]
IDS = [f"{m}-{e}" for m, e in COMBINATIONS]

CASES = {
    "list_i32": lambda: [np.array([10, 20, 30, 40], np.int32)],
    "host_scalars": lambda: [np.array([1, 2, 3, 1000], np.float32), np.array([10, 20, 30, 40], np.float32)],
    "host_buffers": lambda: [np.arange(-3, 5, dtype=np.int32) * 7],
}

EXPECTED = {
    # list[1] = x[0]; result[2] = list[1] + size(list)
    "list_i32": lambda x: [np.array([10, 20, 12, 40], np.int32)],
    # d = y - x; d[3] = sqrt(d[0])^2 + (int64(x[3]))^2
    "host_scalars": lambda x, y: [np.array([9, 18, 27, 9 + 1000 * 1000], np.float32)],
    "host_buffers": lambda x: [np.where(np.arange(8) == 6, x[1] * x[6], x).astype(np.int32),
                               np.array([7, x[1], -7], np.int32)],
}


@pytest.mark.parametrize("mode,execution_model", COMBINATIONS, ids=IDS)
@pytest.mark.parametrize("program", sorted(CASES))
def test_program(program, mode, execution_model, tmp_path):
    source = PROGRAMS / f"{program}.mlir"
    inputs = CASES[program]()
    want = EXPECTED[program](*inputs)
    stock = npukit.run(npukit.compile(source, out_dir=tmp_path / "vmfb"), *inputs)
    for s, w in zip(stock, want):
        np.testing.assert_array_equal(s, w)

    artifact = npukit.compile(source, output=mode, execution_model=execution_model, out_dir=tmp_path / mode)
    got = npukit.run(artifact, *inputs, runtime="npukit")
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)

    checker = model_check(artifact, tmp_path / "check")
    for arena_bytes in (0, 1 << 20):
        outputs, stats, proc = checker.run(inputs, tmp_path, arena_bytes=arena_bytes)
        assert proc.returncode == 0, proc.report
        for g, w in zip(outputs, want):
            np.testing.assert_array_equal(g, w)
        assert stats["arena_invalid_frees"] == 0


@pytest.mark.parametrize("mode", ["static", "embedded"])
def test_missing_import_fails_loading_with_its_name(mode, tmp_path):
    artifact = npukit.compile(PROGRAMS / "missing_import.mlir", output=mode, out_dir=tmp_path / mode)
    with pytest.raises(RunError, match=r"imports 'custom\.scale' from module 'custom'"):
        npukit.run(artifact, np.zeros(4, np.float32), runtime="npukit")
    proc = model_check(artifact, tmp_path / "check").load()
    assert proc.returncode == 3, proc.report
    assert "custom.scale" in proc.stdout and "NOT_FOUND" in proc.stdout, proc.report
