"""ONNX QDQ models compute the graph's float requantization, as onnxruntime
(graph optimizations off, the oracle for ONNX models) does.

An ONNX QDQ layer is DequantizeLinear -> the layer in float ->
QuantizeLinear, which rounds half to even. TFLite's fixed-point
requantization of the same layer rounds half away from zero and works on a
31-bit multiplier, so it differs by one step wherever a value lies (within
about 2^-20 of a step) half way between two steps; a softmax after the
classifier spreads one step of a logit over several steps of the
probabilities. That was the cause of the MLPerf Tiny ONNX models' 5 and 6 LSB
(kws_int8.onnx, resnet8_int8.onnx) when the tuned CPU pipeline computed
TFLite's arithmetic for them. The tuned pipeline's kernels now repeat the
float epilogue operation by operation (layer_recognition.float_parameters);
the mynpu pairing keeps TFLite's fixed point (the NPU's arithmetic), which
shows the cause on the same model.
"""

from __future__ import annotations

import numpy as np
import pytest

import npukit
from support.onnx_models import qdq_classifier_model
from support.oracles import OnnxRuntimeReference

SAMPLES = 8


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = qdq_classifier_model(tmp_path_factory.mktemp("qdq") / "qdq_classifier.onnx")
    rng = np.random.default_rng(3)
    inputs = [rng.integers(-128, 128, (1, 8, 8, 8), dtype=np.int8) for _ in range(SAMPLES)]
    oracle = OnnxRuntimeReference(path)
    return path, inputs, [oracle(x) for x in inputs]


def _max_lsb(loaded, inputs, wants) -> list[int]:
    """Per output, the largest difference from the oracle over the samples."""
    worst = [0, 0]
    for x, want in zip(inputs, wants):
        for o, (got, w) in enumerate(zip(loaded(x), want)):
            worst[o] = max(worst[o], int(np.abs(got.astype(np.int64) - w.astype(np.int64)).max()))
    return worst


def test_tuned_kernels_compute_the_graphs_float_rounding(model, tmp_path):
    path, inputs, wants = model
    result = npukit.compile(path, out_dir=tmp_path / "host")  # the tuned pipeline is the default
    operations = [d.get("operation") for d in result.manifest["cpu_kernels"].values()]
    assert "convolution + relu" in operations  # the layer with the ties runs in npukit's kernel
    assert _max_lsb(npukit.load(result), inputs, wants) == [0, 0]
    static = npukit.compile(path, output="static", out_dir=tmp_path / "static")
    assert _max_lsb(npukit.load(static, runtime="npukit"), inputs, wants) == [0, 0]


def test_fixed_point_requantization_differs_by_more_than_one_step(model, tmp_path):
    """The old cause, on the same model: TFLite's fixed point (what mynpu
    computes) is more than one step away from the graph's probabilities."""
    path, inputs, wants = model
    result = npukit.compile(path, target="mynpu", output="embedded", out_dir=tmp_path / "npu")
    logits, probabilities = _max_lsb(npukit.load(result, runtime="npukit"), inputs, wants)
    assert logits >= 1 and probabilities > 1, (logits, probabilities)
