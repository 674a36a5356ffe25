"""Small ONNX models built in the tests."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper


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
