"""Small ONNX models built in the tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def single_op_model(path: Path, op: str, inputs, outputs, node_name: str = "", **attrs) -> Path:
    """A one-node model; inputs/outputs are (name, TensorProto type, shape)."""
    node = helper.make_node(op, [i[0] for i in inputs], [o[0] for o in outputs], name=node_name, **attrs)
    graph = helper.make_graph(
        [node],
        "single_op",
        [helper.make_tensor_value_info(*i) for i in inputs],
        [helper.make_tensor_value_info(*o) for o in outputs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def add_model(path: Path) -> Path:
    return single_op_model(
        path, "Add", [("a", TensorProto.FLOAT, [2, 3]), ("b", TensorProto.FLOAT, [2, 3])], [("c", TensorProto.FLOAT, [2, 3])]
    )


def unsupported_op_model(path: Path) -> Path:
    """DFT: IREE 3.13's ONNX lowering has no pattern for it (a clean compile error)."""
    return single_op_model(
        path, "DFT", [("x", TensorProto.FLOAT, [1, 8, 1])], [("y", TensorProto.FLOAT, [1, 8, 2])], node_name="spectrum"
    )


def crashing_op_model(path: Path) -> Path:
    """Unique: IREE 3.13 crashes (SIGSEGV) while lowering it."""
    return single_op_model(path, "Unique", [("x", TensorProto.FLOAT, [8])], [("y", TensorProto.FLOAT, [None])])


def qdq_classifier_model(path: Path, seed: int = 0) -> Path:
    """An ONNX QDQ classifier, as onnxruntime's quantizer writes one: int8
    input [1, 8, 8, 8] -> Conv 3x3 16 + ReLU -> QuantizeLinear -> MatMul + Add
    -> QuantizeLinear (logits) -> Softmax -> QuantizeLinear (probabilities,
    scale 1/256). Every scale is a power of two, so the convolution's float
    requantization is exact and one accumulator in sixteen lies exactly half
    way between two output steps: there rounding half to even (the graph's
    QuantizeLinear) and half away from zero (TFLite's fixed point) differ,
    and the softmax spreads a one-step difference of a logit over several
    steps of the probabilities."""
    rng = np.random.default_rng(seed)
    c_in, c_out, hw, classes = 8, 16, 8, 10

    def scalar(value, dtype=np.float32):
        return np.array(dtype(value))

    inits = {
        "x_scale": scalar(2 ** -3), "x_zp": scalar(0, np.int8),
        "w_q": rng.integers(-3, 4, size=(c_out, c_in, 3, 3), dtype=np.int8), "w_scale": scalar(2 ** -5),
        "w_zp": scalar(0, np.int8),
        "b_q": rng.integers(-500, 500, size=c_out, dtype=np.int32), "b_scale": scalar(2 ** -8),
        "b_zp": scalar(0, np.int32),
        "y_scale": scalar(2 ** -4), "y_zp": scalar(-128, np.int8),
        "flat": np.array([1, c_out * hw * hw], np.int64),
        "w2_q": rng.integers(-20, 21, size=(c_out * hw * hw, classes), dtype=np.int8), "w2_scale": scalar(2 ** -10),
        "w2_zp": scalar(0, np.int8),
        "b2_q": rng.integers(-20000, 20000, size=classes, dtype=np.int32), "b2_scale": scalar(2 ** -14),
        "b2_zp": scalar(0, np.int32),
        "l_scale": scalar(2 ** -3), "l_zp": scalar(0, np.int8),
        "p_scale": scalar(1 / 256), "p_zp": scalar(-128, np.int8),
    }
    node = helper.make_node
    nodes = [
        node("DequantizeLinear", ["x", "x_scale", "x_zp"], ["x_f"]),
        node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["w_f"]),
        node("DequantizeLinear", ["b_q", "b_scale", "b_zp"], ["b_f"]),
        node("Conv", ["x_f", "w_f", "b_f"], ["conv"], pads=[1, 1, 1, 1]),
        node("Relu", ["conv"], ["relu"]),
        node("QuantizeLinear", ["relu", "y_scale", "y_zp"], ["y"]),
        node("Reshape", ["y", "flat"], ["y_flat"]),
        node("DequantizeLinear", ["y_flat", "y_scale", "y_zp"], ["flat_f"]),
        node("DequantizeLinear", ["w2_q", "w2_scale", "w2_zp"], ["w2_f"]),
        node("DequantizeLinear", ["b2_q", "b2_scale", "b2_zp"], ["b2_f"]),
        node("MatMul", ["flat_f", "w2_f"], ["mm"]),
        node("Add", ["mm", "b2_f"], ["fc"]),
        node("QuantizeLinear", ["fc", "l_scale", "l_zp"], ["logits"]),
        node("DequantizeLinear", ["logits", "l_scale", "l_zp"], ["logits_f"]),
        node("Softmax", ["logits_f"], ["p_f"], axis=-1),
        node("QuantizeLinear", ["p_f", "p_scale", "p_zp"], ["p"]),
    ]
    graph = helper.make_graph(
        nodes, "qdq_classifier", [helper.make_tensor_value_info("x", TensorProto.INT8, [1, c_in, hw, hw])],
        [helper.make_tensor_value_info("logits", TensorProto.INT8, [1, classes]),
         helper.make_tensor_value_info("p", TensorProto.INT8, [1, classes])],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path
