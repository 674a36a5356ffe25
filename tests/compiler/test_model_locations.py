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
