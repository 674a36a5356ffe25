"""Epilogues that store in another layout than the contraction computes.

IREE fuses a transpose after a quantized layer into the layer's epilogue:
the contraction computes channels first and the epilogue writes channels
last (TFLite's micro_speech example, converted to ONNX, has such a
depthwise layer). The recogniser must carry each dimension's role through
the epilogue's indexing maps; reading the output with the contraction's
roles wrote channels where pixels go (a wrong answer, not an error).
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import npukit
from tests.support.oracles import assert_int8_close


def _transposed_conv_model(path, channels_in: int, channels_out: int, seed: int) -> None:
    """QDQ: int8 input [1, C, H, W] -> Conv 3x3 stride 2 + ReLU -> Q ->
    Transpose to [1, H, W, C] -> int8 output."""
    rng = np.random.default_rng(seed)
    w = rng.integers(-127, 128, size=(channels_out, channels_in, 3, 3), dtype=np.int8)
    w_scale = rng.uniform(0.002, 0.02, size=channels_out).astype(np.float32)
    bias = rng.integers(-3000, 3000, size=channels_out, dtype=np.int32)
    x_scale, y_scale = np.float32(0.05), np.float32(0.08)
    inits = [
        numpy_helper.from_array(np.array(x_scale), "x_scale"), numpy_helper.from_array(np.array(np.int8(3)), "x_zp"),
        numpy_helper.from_array(w, "w_q"), numpy_helper.from_array(w_scale, "w_scale"),
        numpy_helper.from_array(np.zeros(channels_out, np.int8), "w_zp"),
        numpy_helper.from_array(bias, "b_q"), numpy_helper.from_array(x_scale * w_scale, "b_scale"),
        numpy_helper.from_array(np.zeros(channels_out, np.int32), "b_zp"),
        numpy_helper.from_array(np.array(y_scale), "y_scale"), numpy_helper.from_array(np.array(np.int8(-20)), "y_zp"),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zp"], ["x_f"]),
        helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["w_f"], axis=0),
        helper.make_node("DequantizeLinear", ["b_q", "b_scale", "b_zp"], ["b_f"], axis=0),
        helper.make_node("Conv", ["x_f", "w_f", "b_f"], ["conv"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv"], ["relu"]),
        helper.make_node("QuantizeLinear", ["relu", "y_scale", "y_zp"], ["y_nchw"]),
        helper.make_node("Transpose", ["y_nchw"], ["y"], perm=[0, 2, 3, 1]),
    ]
    graph = helper.make_graph(nodes, "transposed_epilogue",
                              [helper.make_tensor_value_info("x", TensorProto.INT8, [1, channels_in, 12, 10])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, [1, 6, 5, channels_out])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


@pytest.mark.parametrize("channels_in,channels_out", [(1, 8), (4, 6)])
def test_tuned_kernels_follow_the_epilogue_layout(tmp_path, channels_in, channels_out):
    path = tmp_path / "transposed.onnx"
    _transposed_conv_model(path, channels_in, channels_out, seed=channels_out)
    result = npukit.compile(path, out_dir=tmp_path / "out")
    kernels = result.manifest["cpu_kernels"]
    if channels_in == 1:  # an input of one channel has no layout: the layer runs on the kernels
        assert any("operation" in entry for entry in kernels.values()), kernels
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.integers(-128, 128, size=(1, channels_in, 12, 10), dtype=np.int8)
        want = session.run(None, {"x": x})[0]
        got = npukit.run(result, x)[0]
        # The kernels requantize in TFLite's fixed point, onnxruntime in f32: at most one step apart.
        assert_int8_close(got, want, lsb=1)
