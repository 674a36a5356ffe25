"""int8 SOFTMAX against TFLite's reference kernels, in both of its forms: a
softmax of at most INLINE_EXPONENTIAL_ELEMENTS elements computes its
exponentials in line, a larger one reads them from a table. Each branch is
checked on inputs that spread over the whole int8 range, that lie close
together (differences near 0, where exp is steepest in its last bits), that
take the extremes, and on rows of one value. (Rows are at most 500 long:
TFLite's reference kernel aborts on a row whose exponentials sum to 512 or
more, e.g. 600 values within 8 of each other at scale 0.07.)"""

from __future__ import annotations

import numpy as np
import pytest

import npukit
from npukit.frontends.tflite.softmax import INLINE_EXPONENTIAL_ELEMENTS
from support.tflite_builder import Branch, Spec, build_model, run_reference

INT8_OUT = (np.int8, 1 / 256, -128)
INT16_OUT = (np.int16, 1 / 32768, 0)


def _softmax(shape, scale, zero_point, beta=1.0, out=INT8_OUT) -> Branch:
    dtype, out_scale, out_zp = out
    return Branch("SOFTMAX", [Spec(shape, np.int8, scale, zero_point)], [Spec(shape, dtype, out_scale, out_zp)],
                  {"beta": beta})


# (shape, input scale, zero point, beta, output): scales from 1/256 to 4 (a table with and without a zero
# tail, differences below the kernel's diff_min), betas other than 1, int16 outputs, rank 1 to 3.
INLINE = [
    _softmax((1, 10), 1 / 16, 0),
    _softmax((1, 12), 0.14469251, -20),
    _softmax((4, 10), 0.3, 5, beta=2.0),
    _softmax((2, 33), 0.02, -9, beta=0.5, out=INT16_OUT),
    _softmax((2, 500), 0.07, 3),
    _softmax((3, 5, 7), 1 / 256, 0),
    _softmax((1, 1), 0.1, 0),
    _softmax((6,), 4.0, -128),
    _softmax((2, 16), 0.011, 100, beta=0.7, out=INT16_OUT),
]
TABLE = [
    _softmax((8, 200), 0.0625, 0),
    _softmax((3, 400), 0.14469251, -20, out=INT16_OUT),
]


def _inputs(branches: list[Branch], rng: np.random.Generator) -> list[list[np.ndarray]]:
    """Four calls: the whole int8 range, values within 8 of a random centre,
    only -128 and 127, and each row one value."""
    calls = []
    for kind in ("spread", "close", "extremes", "constant"):
        xs = []
        for b in branches:
            shape = b.inputs[0].shape
            if kind == "spread":
                x = rng.integers(-128, 128, shape)
            elif kind == "close":
                x = rng.integers(-120, 112) + rng.integers(0, 9, shape)
            elif kind == "extremes":
                x = rng.choice([-128, 127], shape)
            else:
                x = np.broadcast_to(rng.integers(-128, 128, shape[:-1] + (1,)), shape)
            xs.append(np.ascontiguousarray(x, dtype=np.int8))
        calls.append(xs)
    return calls


@pytest.mark.parametrize("branches", [INLINE, TABLE], ids=["inline", "table"])
def test_int8_softmax_equals_reference_kernels(branches, tmp_path):
    small = [int(np.prod(b.inputs[0].shape)) <= INLINE_EXPONENTIAL_ELEMENTS for b in branches]
    assert all(small) if branches is INLINE else not any(small)
    path = tmp_path / "softmax.tflite"
    build_model(branches, path)
    compiled = npukit.load(npukit.compile(path, out_dir=tmp_path / "host"))
    for call, xs in enumerate(_inputs(branches, np.random.default_rng(23))):
        for b, (want, got) in enumerate(zip(run_reference(path, xs), compiled(*xs))):
            spec = branches[b].inputs[0]
            assert got.dtype == want.dtype and np.array_equal(got, want), \
                f"call {call}, softmax {spec.shape} scale {spec.scale}: {np.sum(got != want)} of {want.size} " \
                f"outputs differ, at most by {np.max(np.abs(got.astype(np.int64) - want))}"


@pytest.mark.parametrize("shape,table", [((1, 10), False), ((8, 200), True)])
def test_only_a_large_softmax_keeps_a_table(shape, table, tmp_path):
    """A classifier's softmax keeps no table of exponentials among the
    model's constants; a softmax of more elements than the bound does."""
    path = tmp_path / "softmax.tflite"
    build_model([_softmax(shape, 1 / 16, 0)], path)
    result = npukit.compile(path, out_dir=tmp_path / "host")
    pooled = sum(p["bytes"] for p in result.manifest.get("constant_pools") or [])
    assert (pooled >= 4 * 128) == table, f"{pooled} bytes of constants"
