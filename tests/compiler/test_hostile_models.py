"""Malformed and hostile model files are refused in one line before anything
reads them unchecked: truncations, out-of-range offsets and indices, lying
vector lengths, absurd, negative and too many dimensions, cyclic and
dangling graph references, external data outside the model's directory,
enormous fields, and models over npukit's limits."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npukit
from npukit.errors import ModelError, ModelLimitError
from npukit.frontends import import_model
from support.tflite_models import int8_add_model, load_model, save_model

NPUKIT = [sys.executable, "-m", "npukit.cli.main"]


def _refused(path: Path, needle: str, cls=ModelError) -> str:
    with pytest.raises(cls) as info:
        import_model(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    assert needle in message, message
    return message


# TFLite ---------------------------------------------------------------------------------

def _kws(tmp_path: Path, shared_models: Path, change, name: str = "m.tflite") -> Path:
    model = load_model(shared_models / "kws_int8.tflite")
    change(model, model.subgraphs[0])
    return save_model(model, tmp_path / name)


def _set(obj, attr, value):
    setattr(obj, attr, value)


def _input(op, position, value):
    inputs = list(op.inputs)
    inputs[position] = value
    op.inputs = inputs


TFLITE_CASES = {
    "huge shape": (lambda m, g: _set(g.tensors[0], "shape", [1, 1 << 20, 1 << 20, 1]),
                   "has 1,099,511,627,776 elements, over npukit's limit", ModelLimitError),
    "negative dimension": (lambda m, g: (_set(g.tensors[0], "shape", [1, -49, 10, 1]),
                                         _set(g.tensors[0], "shapeSignature", None)),
                           "a negative dimension in shape [1, -49, 10, 1]", ModelError),
    "rank 9": (lambda m, g: _set(g.tensors[0], "shape", [1] * 9), "has 9 dimensions, over npukit's limit of 8",
               ModelLimitError),
    "buffer past the end": (lambda m, g: (_set(m.buffers[g.tensors[g.operators[0].inputs[1]].buffer], "offset", 1 << 40),
                                          _set(m.buffers[g.tensors[g.operators[0].inputs[1]].buffer], "size", 64)),
                            "lies past the end of the file", ModelError),
    "buffer of the wrong size": (lambda m, g: _set(m.buffers[g.tensors[g.operators[0].inputs[1]].buffer], "data",
                                                   np.zeros(3, np.uint8)), "holds 3 bytes for", ModelError),
    "dangling tensor index": (lambda m, g: _input(g.operators[2], 0, len(g.tensors) + 7),
                              "refers to tensor", ModelError),
    "cycle": (lambda m, g: _input(g.operators[1], 0, g.operators[4].outputs[0]),
              "is written later by operator 4 (a cycle)", ModelError),
    "written twice": (lambda m, g: _set(g.operators[3], "outputs", list(g.operators[1].outputs)),
                      "which operator 1 writes too", ModelError),
    "required input left out": (lambda m, g: _input(g.operators[0], 1, -1),
                                "input 1 is left out; CONV_2D needs its first 2 inputs", ModelError),
    "options of another operator": (lambda m, g: _set(g.operators[0], "builtinOptionsType", 9),
                                    "options of type", ModelError),
    "stride 0": (lambda m, g: _set(g.operators[0].builtinOptions, "strideW", 0),
                 "option stride_w is 0; it must be at least 1", ModelError),
    "NaN scale": (lambda m, g: _set(g.tensors[0].quantization, "scale", [float("nan")]),
                  "a quantization scale that is negative, infinite or NaN", ModelError),
    "unknown operator code": (lambda m, g: (_set(m.operatorCodes[0], "builtinCode", 1000),
                                            _set(m.operatorCodes[0], "deprecatedBuiltinCode", 127)),
                              "unknown builtin operator code 1000", ModelError),
    "unknown tensor type": (lambda m, g: _set(g.tensors[0], "type", 100), "unknown tensor type 100", ModelError),
    "output never computed": (lambda m, g: _set(g, "operators", list(g.operators)[:-1]),
                              "is never computed", ModelError),
}


@pytest.mark.parametrize("case", sorted(TFLITE_CASES))
def test_malformed_tflite_is_refused(tmp_path, shared_models, case):
    change, needle, cls = TFLITE_CASES[case]
    _refused(_kws(tmp_path, shared_models, change), needle, cls)


def test_tflite_truncated_and_lying_vector_lengths(tmp_path, shared_models):
    import tflite

    data = (shared_models / "kws_int8.tflite").read_bytes()
    for cut in (7, 100, len(data) // 2, len(data) - 1):
        path = tmp_path / f"cut{cut}.tflite"
        path.write_bytes(data[:cut])
        _refused(path, "not a valid TFLite model" if cut >= 8 else "not a TFLite flatbuffer")
    # The length word of the main subgraph's tensor vector claims 2^31 - 1 entries.
    subgraph = tflite.Model.GetRootAs(data, 0).Subgraphs(0)
    vector = subgraph._tab.Vector(subgraph._tab.Offset(4))  # field 0 of SubGraph: tensors
    lying = bytearray(data)
    struct.pack_into("<I", lying, vector - 4, 0x7FFFFFFF)
    path = tmp_path / "lying.tflite"
    path.write_bytes(bytes(lying))
    _refused(path, "the tensor list claims 2147483647 entries, more than the file can hold")


def test_limits_can_be_changed_by_environment(tmp_path, shared_models, monkeypatch):
    model = shared_models / "kws_int8.tflite"
    monkeypatch.setenv("NPUKIT_LIMIT_OPERATORS", "5")
    _refused(model, "the main subgraph has 13 operators, over npukit's limit of 5 operators (set "
                    "NPUKIT_LIMIT_OPERATORS to raise it)", ModelLimitError)
    _refused(shared_models / "kws_int8.onnx", "over npukit's limit of 5 operators", ModelLimitError)
    monkeypatch.setenv("NPUKIT_LIMIT_OPERATORS", "many")
    with pytest.raises(ModelLimitError, match="NPUKIT_LIMIT_OPERATORS='many' is not a number"):
        import_model(model)
    monkeypatch.delenv("NPUKIT_LIMIT_OPERATORS")
    monkeypatch.setenv("NPUKIT_LIMIT_FILE_BYTES", "1000")
    _refused(model, "the model file has 53,936 bytes, over npukit's limit of 1,000 bytes", ModelLimitError)


def test_pathological_but_well_formed_tflite_compiles(tmp_path):
    """A 2^28-element int8 ADD is within the limits: IREE compiles it (shapes are static; no memory is touched)."""
    result = npukit.compile(int8_add_model(tmp_path / "big.tflite", (1, 1 << 28)), out_dir=tmp_path / "out")
    assert result.manifest["entry_points"][0]["inputs"][0]["shape"] == [1, 1 << 28]


# ONNX -----------------------------------------------------------------------------------

def _graph_model(path: Path, nodes, inputs, outputs, initializers=(), opset: int = 17) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    path.write_bytes(model.SerializeToString())
    return path


def _vi(name: str, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _weight_model(path: Path, weight: onnx.TensorProto) -> Path:
    return _graph_model(path, [helper.make_node("Add", ["x", "w"], ["y"], name="add")], [_vi("x", [4])],
                        [_vi("y", [4])], [weight])


def _onnx_cases(tmp: Path) -> dict:
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    cases = {}
    bad = onnx.TensorProto()
    bad.CopyFrom(w)
    bad.dims[0] = -4
    cases["negative dimension"] = (_weight_model(tmp / "neg.onnx", bad), "a negative dimension in shape [-4]")
    short = onnx.TensorProto()
    short.CopyFrom(w)
    short.raw_data = short.raw_data[:10]
    cases["data shorter than the shape"] = (_weight_model(tmp / "short.onnx", short), "10 bytes of data for 4 FLOAT")
    huge = onnx.TensorProto()
    huge.CopyFrom(w)
    huge.dims[0] = 1 << 40
    cases["absurd tensor size"] = (_weight_model(tmp / "huge.onnx", huge), "over npukit's limit")
    cases["absurd input shape"] = (_graph_model(tmp / "in.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                                                [_vi("x", [1 << 20, 1 << 20, 4])], [_vi("y", [1 << 20, 1 << 20, 4])]),
                                   "has 4,398,046,511,104 elements, over npukit's limit")
    cases["rank 20"] = (_graph_model(tmp / "rank.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                                     [_vi("x", [1] * 20)], [_vi("y", [1] * 20)]), "20 dimensions, over npukit's limit")
    cases["dangling input"] = (_graph_model(tmp / "dangling.onnx", [helper.make_node("Add", ["x", "nowhere"], ["y"])],
                                            [_vi("x", [4])], [_vi("y", [4])]),
                               "input 'nowhere' is not computed before the node (a dangling or cyclic reference)")
    cases["cycle"] = (_graph_model(tmp / "cycle.onnx", [helper.make_node("Add", ["x", "b"], ["a"], name="first"),
                                                         helper.make_node("Relu", ["a"], ["b"], name="second")],
                                   [_vi("x", [4])], [_vi("b", [4])]),
                      "node 0 ('first', Add)")
    cases["defined twice"] = (_graph_model(tmp / "twice.onnx", [helper.make_node("Relu", ["x"], ["y"]),
                                                                 helper.make_node("Neg", ["x"], ["y"])],
                                           [_vi("x", [4])], [_vi("y", [4])]), "'y' is defined twice")
    cases["opset 1000"] = (_graph_model(tmp / "opset.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                                        [_vi("x", [4])], [_vi("y", [4])], opset=1000), "opset version 1000")
    return cases


@pytest.mark.parametrize("case", ["negative dimension", "data shorter than the shape", "absurd tensor size",
                                  "absurd input shape", "rank 20", "dangling input", "cycle", "defined twice",
                                  "opset 1000"])
def test_malformed_onnx_is_refused(tmp_path, case):
    path, needle = _onnx_cases(tmp_path)[case]
    _refused(path, needle)


def test_onnx_truncated_and_not_utf8(tmp_path, shared_models):
    data = (shared_models / "kws_int8.onnx").read_bytes()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 3])
    _refused(path, "not a readable ONNX model")
    model = onnx.load(shared_models / "kws_int8.onnx")
    name = model.graph.node[3].name.encode()
    patched = data.replace(name, name[:-1] + b"\xff")
    path = tmp_path / "latin.onnx"
    path.write_bytes(patched)
    _refused(path, "is not UTF-8 (graph, node ")


def _external_model(directory: Path, location: str, offset: int = 0, length: int | None = None) -> Path:
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    raw = w.raw_data
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length or len(raw)))):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    directory.mkdir(parents=True, exist_ok=True)
    return _weight_model(directory / "model.onnx", w)


@pytest.mark.parametrize("location,needle", [
    ("../secret.bin", "outside the model's directory"),
    ("/etc/hostname", "outside the model's directory"),
    ("sub/../../secret.bin", "outside the model's directory"),
    ("link.bin", "leads outside the model's directory"),
    ("missing.bin", "the external data file 'missing.bin' is missing"),
    ("weights.bin@end", "past the end of 'weights.bin'"),
])
def test_onnx_external_data_stays_in_the_models_directory(tmp_path, location, needle):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.arange(4, dtype=np.float32).tobytes())
    directory = tmp_path / "model"
    directory.mkdir()
    (directory / "link.bin").symlink_to(secret)
    (directory / "weights.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    offset = 0
    if location.endswith("@end"):
        location, offset = location.removesuffix("@end"), 8
    path = _external_model(directory, location, offset)
    _refused(path, needle)
    # The whole command: one line, nothing read from outside, nothing written.
    out = tmp_path / "out"
    proc = subprocess.run([*NPUKIT, "compile", str(path), "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr.splitlines() == [f"npukit: error: {_refused(path, needle)}"]
    assert not out.exists()


def test_onnx_external_data_inside_the_directory_is_read(tmp_path):
    directory = tmp_path / "model"
    directory.mkdir()
    (directory / "weights.bin").write_bytes(bytes(16) + np.array([1, 2, 3, 4], np.float32).tobytes())
    result = npukit.compile(_external_model(directory, "weights.bin", offset=16), out_dir=tmp_path / "out")
    x = np.array([10, 20, 30, 40], np.float32)
    np.testing.assert_array_equal(npukit.run(result, x)[0], x + [1, 2, 3, 4])


def test_onnx_enormous_fields(tmp_path, shared_models):
    """Megabytes of documentation, names and attribute values: read, and a refusal's line stays short."""
    model = onnx.load(shared_models / "kws_int8.onnx")
    model.doc_string = "d" * (4 << 20)
    model.graph.node[0].name = "n" * (1 << 20)
    path = tmp_path / "doc.onnx"
    onnx.save(model, path)
    import_model(path)
    model.graph.node[2].input[0] = "x" * (1 << 20)
    onnx.save(model, path)
    assert len(_refused(path, "is not computed before the node")) < 400
    extra = model.graph.node[1].attribute.add()
    extra.CopyFrom(helper.make_attribute("huge", [7] * (1 << 20)))
    model.graph.node[2].input[0] = model.graph.node[1].output[0]
    onnx.save(model, path)
    _refused(path, "Unrecognized attribute: huge")


def test_onnx_operator_limit_counts_subgraphs(tmp_path, monkeypatch):
    body = helper.make_graph([helper.make_node("Relu", ["x"], [f"b{i}"]) for i in range(3)], "body", [],
                             [_vi("b2", [4])])
    path = _graph_model(tmp_path / "if.onnx", [helper.make_node("If", ["c"], ["y"], then_branch=body,
                                                                 else_branch=body)],
                        [helper.make_tensor_value_info("c", TensorProto.BOOL, []), _vi("x", [4])], [_vi("y", [4])])
    monkeypatch.setenv("NPUKIT_LIMIT_OPERATORS", "6")
    _refused(path, "the model has 7 operators, over npukit's limit of 6", ModelLimitError)


def test_pathological_but_well_formed_onnx_compiles(tmp_path):
    """A 2^28-element tensor is within the limits and compiles; 2^31 + 1 elements are refused."""
    n = 1 << 28
    path = _graph_model(tmp_path / "big.onnx", [helper.make_node("Add", ["a", "b"], ["c"])],
                        [_vi("a", [n]), _vi("b", [n])], [_vi("c", [n])])
    result = npukit.compile(path, out_dir=tmp_path / "out")
    assert result.manifest["entry_points"][0]["outputs"][0]["shape"] == [n]
    path = _graph_model(tmp_path / "bigger.onnx", [helper.make_node("Relu", ["a"], ["c"])],
                        [_vi("a", [(1 << 31) + 1])], [_vi("c", [(1 << 31) + 1])])
    _refused(path, "2,147,483,649 elements, over npukit's limit of 2,147,483,648 elements", ModelLimitError)


def test_an_import_crash_is_one_line(tmp_path, monkeypatch):
    """A crash inside a library during the import ends the import's child process only: one line naming the step."""
    model = tmp_path / "add.onnx"
    _graph_model(model, [helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [4])], [_vi("y", [4])])
    # The child imports sitecustomize from PYTHONPATH: make ONNX's shape inference kill its process.
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import os, signal, onnx.shape_inference\n"
        "onnx.shape_inference.infer_shapes = lambda *a, **k: os.kill(os.getpid(), signal.SIGSEGV)\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]))
    out = tmp_path / "out"
    with pytest.raises(ModelError, match=r"ONNX's shape inference crashed \(SIGSEGV\) on this model"):
        npukit.compile(model, out_dir=out)
    assert not out.exists()
