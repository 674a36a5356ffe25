"""One copy of each weight: the constants no dispatch reads any more leave
IREE's constant pool (npukit/passes/unread_constants.py). The outputs of the
compiled models stay exact: tests/zoo compares every zoo model's tuned build
with TFLite's reference kernels, and the board deploys with the host."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import npukit
from npukit.passes.unread_constants import _ALIGNMENT, _kept_layout
from support.models import MLPERF_MODELS, random_inputs


@dataclass
class _Pool:
    """A pool of elements of the given sizes (what _kept_layout reads)."""

    sizes: list[int]

    @property
    def elements(self) -> list[str]:
        return [f"dense<{i + 1}> : tensor<{n}xi8>" for i, n in enumerate(self.sizes)]

    @property
    def size(self) -> int:
        return sum(self.sizes)

    def element_sizes(self) -> list[int]:
        return self.sizes


@pytest.mark.parametrize("sizes, read", [
    ([100, 28, 64, 40, 7, 300], [(128, 192)]),  # one element in the middle
    ([100, 28, 64, 40, 7, 300], [(100, 110), (130, 190), (235, 240)]),  # a run of three, then one more
    ([64, 64, 64], [(0, 64), (128, 192)]),
    ([3, 5, 1000], [(3, 8)]),
    ([16, 16], []),
])
def test_kept_elements_move_by_multiples_of_the_alignment(sizes, read):
    pool = _Pool(sizes)
    texts, moves = _kept_layout(pool, read)
    starts = np.cumsum([0, *sizes]).tolist()
    kept = [i for i in range(len(sizes)) if any(a < starts[i + 1] and b > starts[i] for a, b in read)]
    assert [t for t in texts if not t.startswith("dense<0>")] == [pool.elements[i] for i in kept]
    laid = 0
    for old, end, new in moves:
        assert (old - new) % _ALIGNMENT == 0 and new >= laid
        laid = new + end - old
    # Every read range lies in one moved run, and the composite's texts lay the runs out where the moves say.
    for a, b in read:
        assert sum(old <= a and b <= end for old, end, _ in moves) == 1
    layout = 0
    for t in texts:
        layout += int(t.rsplit("<", 1)[1].split("x")[0])
    assert layout == laid


def test_kws_keeps_only_what_the_softmax_reads(shared_models, artifact_cache):
    """kws_int8's tuned Cortex-M4 build: every layer runs the kernels with
    its weights in its parameter block (the convolution, four depthwise and
    four pointwise layers, the fully connected layer, the average pool and
    the softmax's maximum: 12) and the rest of the int8 softmax, which IREE
    still runs, computes its exponentials in line, so no dispatch reads the
    pool: it keeps the one byte that leaves it a valid resource."""
    result = artifact_cache(shared_models / "kws_int8.tflite", "cortex-m4", "static")
    (pool,) = result.manifest["constant_pools"]
    assert pool["bytes"] == 22016 and pool["kept"] == 1 and "reason" not in pool, pool
    constants = result.manifest["kernel_constants"]
    assert constants["int16_layers"] == 0 and constants["layers"] == 12
    assert constants["kernel_constants"] == constants["with_int8_weights"]


def test_npu_layers_leave_the_pool(shared_models, artifact_cache):
    """The static mynpu build: the NPU's streams hold the layers' weights;
    IREE's pool keeps only what the CPU's dispatches read."""
    result = artifact_cache(shared_models / "kws_int8.tflite", "mynpu+cortex-m4", "static")
    (pool,) = result.manifest["constant_pools"]
    assert pool["kept"] <= 2048 < pool["bytes"]


def test_host_build_with_moved_constants_equals_the_stock_build(shared_models, artifact_cache, rng):
    """resnet8_int8.tflite on the host: IREE's dispatches that stay (the
    average pool and softmax) read constants that moved; the outputs equal
    IREE's stock build, which keeps the pool whole."""
    tuned = artifact_cache(shared_models / "resnet8_int8.tflite")
    stock = artifact_cache(shared_models / "resnet8_int8.tflite", cpu_pipeline="stock")
    assert stock.manifest["constant_pools"] == []
    (pool,) = tuned.manifest["constant_pools"]
    assert pool["kept"] < pool["bytes"] // 10
    model = next(m for m in MLPERF_MODELS if m.name == "resnet8_int8")
    a, b = npukit.load(tuned), npukit.load(stock)
    for x in random_inputs(model, (1, 32, 32, 3), rng, 5):
        np.testing.assert_array_equal(a(x), b(x))
