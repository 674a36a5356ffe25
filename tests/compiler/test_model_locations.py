"""IREE's diagnostics mapped back to the model's operators (frontends/model_locations.py)."""

from __future__ import annotations

from pathlib import Path

from npukit.frontends.imported_model import ImportedModel
from npukit.frontends.model_format import ModelFormat
from npukit.frontends.model_locations import explain_compile_error, strip_location


def test_tflite_location_names_the_operator():
    model = ImportedModel(Path("m.tflite"), ModelFormat.TFLITE, "m")
    diagnostics = ['error: loc("CUSTOM:my_op:7:out:0"): failed to legalize', 'note: loc("CONV_2D:3:conv1"): here']
    assert explain_compile_error(model, 'loc("CUSTOM:my_op:7:out:0"): failed to legalize', diagnostics) == \
        "m.tflite: operator 7 (CUSTOM:my_op, output 'out:0'): failed to legalize"
    assert explain_compile_error(model, "IREE crashed (SIGSEGV)", []) == "m.tflite: IREE crashed (SIGSEGV)"


def test_onnx_node_name_and_unlowered_operator():
    nodes = [("Conv", "conv1", ["c1"]), ("DFT", "", ["spectrum"]), ("DFT", "dft2", ["s2"])]
    model = ImportedModel(Path("m.onnx"), ModelFormat.ONNX, "m", onnx_nodes=nodes)
    message = "loc(\"conv1\"): 'func.func' op exceeded stack allocation limit"
    assert explain_compile_error(model, message, []) == \
        "m.onnx: node 'conv1' (Conv, output 'c1'): 'func.func' op exceeded stack allocation limit"
    text = "failed to legalize operation 'torch.operator'; operation onnx.DFT"
    assert explain_compile_error(model, text, ['%1 = "torch.operator"(%0) <{name = "onnx.DFT"}>']) == (
        "m.onnx: an unnamed DFT node, output 'spectrum' (and 1 more DFT nodes): IREE 3.13 has no lowering for the "
        "ONNX operator DFT in this form (failed to legalize operation 'torch.operator'; operation onnx.DFT)")


def test_location_prefixes_are_stripped():
    assert strip_location('loc("a\\"b"): message') == "message"
    assert strip_location('loc(fused["a", "b"]): message') == "message"
    assert strip_location("no location: message") == "no location: message"


def test_onnx_nodes_inside_if_bodies_are_named(tmp_path):
    """IREE's importer names a branch's operations after the branch's nodes: an error there names the node."""
    import onnx
    from onnx import TensorProto, helper

    from npukit.frontends.onnx_frontend import import_onnx

    def branch(name, op_type):
        node = helper.make_node(op_type, ["x"], [f"{name}_out"], name=name)
        return helper.make_graph([node], f"{name}_graph", [],
                                 [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [2])])

    condition = helper.make_node("Greater", ["x_sum", "zero"], ["cond"], name="compare")
    total = helper.make_node("ReduceSum", ["x"], ["x_sum"], name="total", keepdims=0)
    choose = helper.make_node("If", ["cond"], ["y"], name="choose",
                              then_branch=branch("then_relu", "Relu"), else_branch=branch("else_neg", "Neg"))
    graph = helper.make_graph(
        [total, condition, choose], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])])
    path = tmp_path / "branches.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    imported = import_onnx(path, "branches")
    assert ("Neg", "else_neg", ["else_neg_out"]) in imported.onnx_nodes
    message = "loc(\"else_neg\"): 'linalg.generic' op inferred input/output operand #0 has the wrong shape"
    assert explain_compile_error(imported, message, []) == (
        f"{path}: node 'else_neg' (Neg, output 'else_neg_out'): "
        "'linalg.generic' op inferred input/output operand #0 has the wrong shape")
