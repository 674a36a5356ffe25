"""npukit's runtime under AddressSanitizer and UndefinedBehaviorSanitizer.

The C unit tests, the embedded-ELF loader against corrupted images, and every
shared model in every mode and execution model: correct outputs on the heap
(where the sanitizers see each runtime object) and in an arena with the heap
forbidden; wrong input shapes and dtypes rejected with a status; arenas too
small for the model refused cleanly at every size, never overflowed.
"""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

import npukit
from support.models import MLPERF_MODELS, random_inputs
from support.sanitized_runtime import hal_element_type, model_check, sanitized_build

COMBINATIONS = [
    ("static", "inline-dynamic"),
    ("static", "async"),
    ("embedded", "inline-dynamic"),
    ("embedded", "async"),
]
ELF_MUTATIONS = 30000


@pytest.fixture(scope="session")
def sanitized():
    return sanitized_build()


def test_c_unit_tests(sanitized):
    proc = subprocess.run(["ctest", "--output-on-failure"], cwd=sanitized, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"100% tests passed, 0 tests failed out of [1-9]", proc.stdout), proc.stdout


def test_elf_loader_rejects_corrupted_images(sanitized, shared_models, artifact_cache):
    artifact = artifact_cache(shared_models / "kws_int8.onnx", "host", "embedded", execution_model="inline-dynamic")
    elf = artifact.files["embedded_executable"]
    proc = subprocess.run([str(sanitized / "tests" / "c" / "elf_loader_test"), str(elf), str(ELF_MUTATIONS)],
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    found = re.search(r"truncations: (\d+) rejected; mutations: (\d+) of (\d+) rejected", proc.stdout)
    assert found, proc.stdout
    truncations, rejected, total = map(int, found.groups())
    assert total == ELF_MUTATIONS and truncations > 0 and rejected > 0


@pytest.mark.parametrize("mode,execution_model", COMBINATIONS, ids=[f"{m}-{e}" for m, e in COMBINATIONS])
@pytest.mark.parametrize("model", MLPERF_MODELS, ids=lambda m: m.name)
def test_model_under_sanitizers(model, mode, execution_model, shared_models, artifact_cache, rng, tmp_path):
    onnx_path = shared_models / f"{model.name}.onnx"
    stock = npukit.load(artifact_cache(onnx_path))
    artifact = artifact_cache(onnx_path, "host", mode, execution_model=execution_model)
    checker = model_check(artifact, tmp_path / "check")
    entry = artifact.entry_points[0]
    shape = [int(d) for d in entry.inputs[0].shape]
    x = random_inputs(model, tuple(shape), rng, 1)[0]
    want = stock(x)

    # On the heap, then in an arena with the heap forbidden.
    high_water = None
    for arena_bytes in (0, 64 << 20):
        outputs, stats, proc = checker.run([x], tmp_path, arena_bytes=arena_bytes)
        assert proc.returncode == 0, proc.report
        np.testing.assert_array_equal(outputs[0], want[0])
        assert stats["invocation_count"] == 2 and stats["arena_invalid_frees"] == 0
        high_water = stats["arena_high_water_mark"]

    # Wrong shapes and dtypes: a status naming the problem, no crash.
    etype = hal_element_type(entry.inputs[0].dtype)
    other = hal_element_type("float32" if entry.inputs[0].dtype != "float32" else "int8")
    for spec in ([(etype, [shape[0] + 1, *shape[1:]])], [(etype, shape[1:])], [(other, shape)]):
        proc = checker.bad_input(spec)
        assert proc.returncode == 0, proc.report
        assert "INVALID_ARGUMENT" in proc.stdout, proc.report

    # Arenas from 0 bytes to just above the high-water mark.
    proc = checker.arena_sweep([x], tmp_path, high_water + 4096, 16)
    assert proc.returncode == 0, proc.report
    assert "RESOURCE_EXHAUSTED" in proc.stdout, proc.report
