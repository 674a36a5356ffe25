"""Tuned compiles keep a convolution's input padding inside its dispatch
(npukit.passes.fused_padding): the padded copy of a tensor, live beside the
tensor, disappears from the memory plan, the kernels and the NPU read the
padding themselves and the results stay TFLite's. A padded dispatch left to
IREE's code (a float layer) repeats the compile with IREE's padded copies."""

from __future__ import annotations

import numpy as np
import pytest

import npukit
from npukit.passes.fused_padding import FUSE_PADDING_FLAG
from support.tflite_builder import Branch, Spec, build_model, run_reference


@pytest.fixture(scope="module")
def kws(shared_models):
    return shared_models / "kws_int8.tflite"


def _inputs(n: int, shape) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    return [rng.integers(-128, 128, size=shape, dtype=np.int8) for _ in range(n)]


@pytest.mark.parametrize("target", ["cortex-m4", "mynpu"])
def test_kws_plan_holds_no_padded_copy(kws, tmp_path, target):
    """kws_int8.tflite's depthwise layers read 8,000-byte maps that IREE
    copied into 12,096-byte padded ones; with the padding in the layers, the
    transient memory is the two live maps, its lower bound."""
    result = npukit.compile(kws, target=target, output="static", out_dir=tmp_path / target)
    manifest = result.manifest
    assert FUSE_PADDING_FLAG in manifest["iree_flags"]
    assert not any("memcpy" in d["name"] for d in manifest["dispatches"]), manifest["dispatches"]
    bound = manifest["activations"]["lower_bound"]
    transient = [b["bytes"] for b in manifest["memory_plan"]["buffers"] if b["role"] == "transient"]
    assert transient and max(transient) <= bound, (transient, bound)
    if target == "cortex-m4":
        padded = [e for e in manifest["cpu_kernels"].values() if "padding" in e.get("layer", "")]
        assert len(padded) == 5, manifest["cpu_kernels"]  # the first convolution and the four depthwise layers


def test_kws_exact_on_kernels_and_npu(kws, tmp_path):
    host = npukit.compile(kws, out_dir=tmp_path / "host")
    npu = npukit.compile(kws, target="mynpu", output="embedded", out_dir=tmp_path / "npu")
    assert FUSE_PADDING_FLAG in host.manifest["iree_flags"] and FUSE_PADDING_FLAG in npu.manifest["iree_flags"]
    assert all(r["device"] == "mynpu" for r in npu.manifest["mynpu"]["dispatches"] if "conv" in r["name"])
    data = kws.read_bytes()
    for x in _inputs(3, (1, 49, 10, 1)):
        want = run_reference(data, [x])[0]
        assert np.array_equal(npukit.run(host, x)[0].reshape(want.shape), want)
        assert np.array_equal(npukit.run(npu, x, runtime="npukit")[0].reshape(want.shape), want)


def test_float_padded_layer_repeats_the_compile_with_padded_copies(tmp_path):
    """A float convolution (no kernel takes it) with SAME padding: IREE's
    code keeps its padded copy, the compile succeeds and computes TFLite's
    float result."""
    rng = np.random.default_rng(3)
    w = rng.uniform(-1, 1, (1, 3, 3, 4)).astype(np.float32)
    path = tmp_path / "float_conv.tflite"
    build_model([Branch("DEPTHWISE_CONV_2D", [Spec((1, 7, 6, 4), np.float32),
                                              Spec.constant(w),
                                              Spec.constant(rng.uniform(-1, 1, 4).astype(np.float32))],
                        [Spec((1, 7, 6, 4), np.float32)],
                        dict(padding=0, strideH=1, strideW=1, depthMultiplier=1, dilationHFactor=1,
                             dilationWFactor=1, fusedActivationFunction=0))], path)
    result = npukit.compile(path, out_dir=tmp_path / "out")
    assert result.manifest["cpu_pipeline"] == "tuned"
    assert FUSE_PADDING_FLAG not in result.manifest["iree_flags"]
    x = rng.uniform(-1, 1, (1, 7, 6, 4)).astype(np.float32)
    want = run_reference(path, [x])[0]
    np.testing.assert_allclose(npukit.run(result, x)[0].reshape(want.shape), want, rtol=1e-4, atol=1e-5)
