"""The manifest's MAC count: one multiply-accumulate per point of every
contraction's iteration space, none for elementwise work."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import npukit


def _model(path, nodes, inputs, outputs, weights):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              [numpy_helper.from_array(w.astype(np.float32), n) for n, w in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_conv_depthwise_matmul_and_elementwise(tmp_path):
    rng = np.random.default_rng(0)
    f = TensorProto.FLOAT
    path = _model(
        tmp_path / "net.onnx",
        [
            helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),               # 3->8, 3x3, 8x8
            helper.make_node("Relu", ["c1"], ["r1"]),
            helper.make_node("Conv", ["r1", "w2"], ["c2"], group=8, strides=[2, 2]),      # depthwise 3x3 -> 3x3
            helper.make_node("Flatten", ["c2"], ["flat"]),
            helper.make_node("MatMul", ["flat", "w3"], ["y"]),                            # 72 -> 10
        ],
        [helper.make_tensor_value_info("x", f, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", f, [1, 10])],
        {"w1": rng.standard_normal((8, 3, 3, 3)), "w2": rng.standard_normal((8, 1, 3, 3)),
         "w3": rng.standard_normal((72, 10))},
    )
    result = npukit.compile(path, out_dir=tmp_path / "out")
    conv = 1 * 8 * 8 * 8 * 3 * 3 * 3       # N*Cout*H*W * Cin*Kh*Kw
    depthwise = 1 * 8 * 3 * 3 * 3 * 3      # N*C*Ho*Wo * Kh*Kw (stride 2, no padding: 8x8 -> 3x3)
    matmul = 72 * 10
    assert result.manifest["macs"] == conv + depthwise + matmul
    assert sum(d["macs"] for d in result.dispatches) == result.manifest["macs"]


def test_elementwise_only_program_has_no_macs(tmp_path):
    f = TensorProto.FLOAT
    path = _model(tmp_path / "add.onnx", [helper.make_node("Mul", ["x", "x"], ["y"])],
                  [helper.make_tensor_value_info("x", f, [4, 4])], [helper.make_tensor_value_info("y", f, [4, 4])],
                  {})
    assert npukit.compile(path, out_dir=tmp_path / "out").manifest["macs"] == 0


def test_mlperf_models_match_their_published_mac_counts(shared_models, artifact_cache):
    # MLPerf Tiny: DS-CNN KWS about 2.7 M MACs, ResNet-8 about 12.5 M.
    assert 2.6e6 < artifact_cache(shared_models / "kws_int8.onnx").manifest["macs"] < 2.8e6
    assert 12.4e6 < artifact_cache(shared_models / "resnet8_int8.onnx").manifest["macs"] < 12.6e6
