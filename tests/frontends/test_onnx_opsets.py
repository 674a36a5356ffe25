"""ONNX models of opsets older than IREE 3.13's importer lowers some operators in (BatchNormalization
before version 15, MaxPool before 12): converted by ONNX's version converter, then compared to
onnxruntime; the conversion is a note on the import, never silent."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import npukit


def _model(opset: int, rng) -> "onnx.ModelProto":  # noqa: F821
    channels = 4
    weights = rng.uniform(-0.5, 0.5, (channels, 3, 3, 3)).astype(np.float32)
    params = {"scale": rng.uniform(0.5, 1.5, channels), "offset": rng.uniform(-1, 1, channels),
              "mean": rng.uniform(-0.2, 0.2, channels), "variance": rng.uniform(0.5, 2.0, channels)}
    initializers = [numpy_helper.from_array(weights, "w")] + [
        numpy_helper.from_array(v.astype(np.float32), k) for k, v in params.items()]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "scale", "offset", "mean", "variance"], ["b"], name="bn",
                              epsilon=1e-3, momentum=0.9),
             helper.make_node("Relu", ["b"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["y"], name="pool", kernel_shape=[2, 2], strides=[2, 2])]
    graph = helper.make_graph(nodes, "legacy", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels, 4, 4])],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return model


@pytest.mark.parametrize("opset", [9, 11, 14])
def test_older_opsets_are_converted_and_exact_to_onnxruntime(opset, tmp_path):
    import onnx
    import onnxruntime as ort

    rng = np.random.default_rng(opset)
    path = tmp_path / f"legacy{opset}.onnx"
    onnx.save(_model(opset, rng), path)
    result = npukit.compile(path, out_dir=tmp_path / "out")
    assert any(f"opset {opset} converted to 15" in note for note in result.manifest["warnings"]), \
        result.manifest["warnings"]
    x = rng.uniform(-2, 2, (1, 3, 8, 8)).astype(np.float32)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = np.asarray(npukit.load(result)(x)[0]).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_dimension_declared_as_minus_one_is_unknown(tmp_path):
    """Exporters that declare an unknown size as -1 (PaddlePaddle's): read as ONNX's unknown dimension."""
    import onnx

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "minus_one",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 3])])
    path = tmp_path / "minus_one.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    result = npukit.compile(path, out_dir=tmp_path / "out")
    assert any("dynamic dimensions: x" in note for note in result.manifest["warnings"])
    x = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)
    np.testing.assert_array_equal(np.asarray(npukit.load(result)(x)[0]), np.maximum(x, 0))
