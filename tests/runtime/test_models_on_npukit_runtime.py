"""npukit's runtime runs the MLPerf Tiny models exactly like IREE's runtime.

Each model is compiled as static and as embedded artifacts, in both execution
models, for the host; npukit's C runtime (built for this machine) must give
outputs bit-identical to IREE's stock runtime running the .vmfb of the same
model and flags.
"""

from __future__ import annotations

import numpy as np
import pytest

import npukit
from support.models import MLPERF_MODELS, random_inputs

COMBINATIONS = [
    ("static", "inline-dynamic"),
    ("static", "async"),
    ("embedded", "inline-dynamic"),
    ("embedded", "async"),
]


@pytest.mark.parametrize("mode,execution_model", COMBINATIONS, ids=[f"{m}-{e}" for m, e in COMBINATIONS])
@pytest.mark.parametrize("model", MLPERF_MODELS, ids=lambda m: m.name)
def test_bit_identical_to_stock_runtime(model, mode, execution_model, shared_models, artifact_cache, rng):
    onnx_path = shared_models / f"{model.name}.onnx"
    stock = npukit.load(artifact_cache(onnx_path))
    artifact = artifact_cache(onnx_path, "host", mode, execution_model=execution_model)
    assert artifact.manifest["execution_model"] == execution_model
    ours = npukit.load(artifact, runtime="npukit")
    shape = tuple(artifact.entry_points[0].inputs[0].shape)
    for x in random_inputs(model, shape, rng, 4):
        want = stock(x)
        got = ours(x)
        assert len(got) == len(want) == 1
        assert got[0].dtype == want[0].dtype and got[0].shape == want[0].shape
        np.testing.assert_array_equal(got[0], want[0])
    stats = ours.native.stats()
    assert stats["invocation_count"] == 4
    assert stats["dispatch_count"] == 4 * len(artifact.dispatches)
    assert 0 < stats["arena_high_water_mark"] < stats["arena_capacity"]
