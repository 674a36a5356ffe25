"""--input-shape and --input-value: an ONNX model's unknown input dimensions fixed at import, and inputs made
constants, checked against the model; the shape option named in the error of a compile that dynamic shapes
make fail; a branch on a fixed input settled at import."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import npukit
from npukit.errors import CompileError, ModelError, TargetError
from npukit.frontends.input_shapes import input_shapes_from, parse_input_shape
from npukit.frontends.input_values import input_values_from


def _save(tmp_path, name, nodes, inputs, outputs, initializers=(), opset=17):
    import onnx

    model = helper.make_model(helper.make_graph(nodes, name, inputs, outputs, list(initializers)),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    return path


def _onnxruntime(path, feeds):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]).run(None, feeds)


def _dynamic_conv(tmp_path):
    weights = np.random.default_rng(0).uniform(-0.5, 0.5, (4, 3, 3, 3)).astype(np.float32)
    return _save(tmp_path, "dynamic_conv", [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1] * 4)],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, "height", "width"])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4, "height", "width"])],
                 [numpy_helper.from_array(weights, "w")])


def test_a_fixed_shape_is_compiled_and_exact_to_onnxruntime(tmp_path):
    path = _dynamic_conv(tmp_path)
    result = npukit.compile(path, out_dir=tmp_path / "out", input_shapes={"x": (1, 3, 12, 10)})
    assert [tuple(t.shape) for t in result.entry_points[0].inputs] == [(1, 3, 12, 10)]
    assert "input x: shape ?x3x?x? fixed to 1x3x12x10" in result.manifest["warnings"]
    x = np.random.default_rng(1).uniform(-1, 1, (1, 3, 12, 10)).astype(np.float32)
    want = _onnxruntime(path, {"x": x})[0]
    got = np.asarray(npukit.load(result)(x)[0]).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_the_command_line_option_with_and_without_a_name(tmp_path, capsys):
    from npukit.cli.main import main

    path = _dynamic_conv(tmp_path)
    assert main(["compile", str(path), "-o", str(tmp_path / "named"), "--input-shape", "x=1x3x8x8"]) == 0
    assert "float32[1x3x8x8]" in capsys.readouterr().out
    assert main(["compile", str(path), "-o", str(tmp_path / "unnamed"), "--input-shape", "2,3,6,6"]) == 0
    assert "float32[2x3x6x6]" in capsys.readouterr().out


def test_a_named_dimension_takes_its_size_in_every_input(tmp_path):
    path = _save(tmp_path, "two_inputs", [helper.make_node("Add", ["a", "b"], ["y"], name="add")],
                 [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", 5]),
                  helper.make_tensor_value_info("b", TensorProto.FLOAT, ["batch", 5])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 5])])
    result = npukit.compile(path, out_dir=tmp_path / "out", input_shapes=["a=3x5"])
    assert [tuple(t.shape) for t in result.entry_points[0].inputs] == [(3, 5), (3, 5)]
    assert "input b: shape ?x5 fixed to 3x5 (named dimensions batch as in the shapes given)" in \
        result.manifest["warnings"]
    a, b = np.arange(15, dtype=np.float32).reshape(3, 5), np.ones((3, 5), np.float32)
    np.testing.assert_array_equal(np.asarray(npukit.load(result)(a, b)[0]).reshape(3, 5), a + b)


@pytest.mark.parametrize("shapes, message", [
    ({"y": (1, 3, 8, 8)}, "has no input 'y'; its inputs are x (?x3x?x?)"),
    ({"x": (1, 3, 8)}, "input 'x' has 4 dimensions (?x3x?x?), the shape given has 3 (1x3x8)"),
    ({"x": (1, 4, 8, 8)}, "input 'x' has size 3 in dimension 1 (?x3x?x?); the shape given (1x4x8x8) must keep it"),
])
def test_shapes_that_do_not_fit_the_model_are_refused_by_name(tmp_path, shapes, message):
    path = _dynamic_conv(tmp_path)
    with pytest.raises(ModelError, match=str(path)) as error:
        npukit.compile(path, out_dir=tmp_path / "out", input_shapes=shapes)
    assert message in str(error.value)
    assert not (tmp_path / "out").exists()


def test_unnamed_dimensions_take_any_size_and_a_shape_without_a_name_needs_one_input(tmp_path):
    """PaddlePaddle's exporter names every unknown dimension "?": not one dimension, sizes of their own."""
    weights = np.random.default_rng(3).uniform(-0.5, 0.5, (2, 3, 3, 3)).astype(np.float32)
    path = _save(tmp_path, "paddle_like", [helper.make_node("Conv", ["x", "w"], ["y"], name="conv")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["?", 3, "?", "?"])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["?", 2, "?", "?"])],
                 [numpy_helper.from_array(weights, "w")])
    result = npukit.compile(path, out_dir=tmp_path / "out", input_shapes=["x=1x3x6x9"])
    assert [tuple(t.shape) for t in result.entry_points[0].inputs] == [(1, 3, 6, 9)]
    two = _save(tmp_path, "two_inputs", [helper.make_node("Add", ["a", "b"], ["y"], name="add")],
                [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", 5]),
                 helper.make_tensor_value_info("b", TensorProto.FLOAT, ["batch", 5])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 5])])
    with pytest.raises(ModelError, match="the model has 2 inputs, a \\(\\?x5\\), b \\(\\?x5\\); name the one"):
        npukit.compile(two, out_dir=tmp_path / "two", input_shapes=["2x5"])


@pytest.mark.parametrize("text", ["x=", "x=1x0x3", "x=1xax3", "=", "1x-2"])
def test_malformed_option_text_is_refused(text):
    with pytest.raises(TargetError, match="--input-shape"):
        input_shapes_from([text])


def test_option_text_forms():
    assert parse_input_shape("x=1x3x224x224") == ("x", (1, 3, 224, 224))
    assert parse_input_shape("input:0=1,576") == ("input:0", (1, 576))
    assert parse_input_shape("4x8") == (None, (4, 8))
    with pytest.raises(TargetError, match="given twice"):
        input_shapes_from(["x=1x2", "x=1x3"])
    with pytest.raises(TargetError, match="only for a model with one input"):
        input_shapes_from(["1x2", "y=1x3"])


def test_tflite_and_mlir_inputs_have_their_shapes_fixed(tmp_path):
    from support.tflite_builder import Branch, Spec, build_model

    path = tmp_path / "relu.tflite"
    build_model([Branch("RELU", [Spec((1, 4), np.float32)], [Spec((1, 4), np.float32)])], path)
    npukit.compile(path, out_dir=tmp_path / "same", input_shapes=["1x4"])
    fixed = "a .tflite model's inputs have fixed shapes, b0_in0 \\(1x4\\); --input-shape b0_in0=2x4 differs"
    with pytest.raises(ModelError, match=fixed):
        npukit.compile(path, out_dir=tmp_path / "other", input_shapes=["2x4"])
    mlir = tmp_path / "id.mlir"
    mlir.write_text("func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> { return %x : tensor<?xf32> }\n")
    with pytest.raises(ModelError, match="function signature fixes its input shapes"):
        npukit.compile(mlir, out_dir=tmp_path / "mlir", input_shapes=["4"])


def test_a_compile_that_dynamic_shapes_make_fail_names_the_option(tmp_path):
    """IREE 3.13 cannot compile a wide reflect pad of unknown length; the error says which inputs to fix, and
    with the shape fixed the model compiles (the pad becomes a gather) and equals onnxruntime."""
    pads = numpy_helper.from_array(np.array([0, 64, 0, 64], np.int64), "pads")
    path = _save(tmp_path, "reflect", [helper.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode="reflect")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "n"])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", "m"])], [pads])
    with pytest.raises(CompileError) as error:
        npukit.compile(path, out_dir=tmp_path / "dynamic")
    assert "inputs have unknown dimensions (x (?x?))" in str(error.value)
    assert "--input-shape x=1x1" in str(error.value)
    result = npukit.compile(path, out_dir=tmp_path / "fixed", input_shapes={"x": (1, 576)})
    x = np.random.default_rng(2).standard_normal((1, 576)).astype(np.float32)
    want = _onnxruntime(path, {"x": x})[0]
    np.testing.assert_array_equal(np.asarray(npukit.load(result)(x)[0]).reshape(want.shape), want)


def _branching(tmp_path):
    """y = If(mode == 1) then x * 2 (and, inside, If(len(x) == 4) then relu else neg) else x + 1."""
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    four = numpy_helper.from_array(np.array(4, np.int64), "four")
    inner = helper.make_node(
        "If", ["is_four"], ["t"], name="length_branch",
        then_branch=helper.make_graph([helper.make_node("Relu", ["doubled"], ["t_then"])], "then_inner", [],
                                      [helper.make_tensor_value_info("t_then", TensorProto.FLOAT, None)]),
        else_branch=helper.make_graph([helper.make_node("Neg", ["doubled"], ["t_else"])], "else_inner", [],
                                      [helper.make_tensor_value_info("t_else", TensorProto.FLOAT, None)]))
    then_branch = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["doubled"]), helper.make_node("Shape", ["x"], ["shape"]),
         helper.make_node("Gather", ["shape", "zero"], ["length"], axis=0),
         helper.make_node("Equal", ["length", "four"], ["is_four"]), inner], "then", [],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(0, np.int64), "zero")])
    else_branch = helper.make_graph([helper.make_node("Add", ["x", "one"], ["e"])], "else", [],
                                    [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Constant", [], ["wanted"], value=numpy_helper.from_array(np.array(1, np.int64))),
             helper.make_node("Equal", ["mode", "wanted"], ["is_wanted"]),
             helper.make_node("If", ["is_wanted"], ["y"], name="mode_branch", then_branch=then_branch,
                              else_branch=else_branch)]
    return _save(tmp_path, "branching", nodes,
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"]),
                  helper.make_tensor_value_info("mode", TensorProto.INT64, [])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])], [two, one, four])


@pytest.mark.parametrize("mode, length", [(1, 4), (1, 5), (0, 4)])
def test_branches_on_a_fixed_input_and_a_fixed_length_are_settled_at_import(tmp_path, mode, length):
    """IREE 3.13 lowers no If of this form; with the input made a constant and the length fixed, both Ifs
    are the branches they take, and the compiled model (without the input) equals onnxruntime's."""
    path = _branching(tmp_path)
    result = npukit.compile(path, out_dir=tmp_path / "out", input_values=[f"mode={mode}"],
                            input_shapes={"x": (length,)})
    assert [t.name for t in result.entry_points[0].inputs] == ["x"]
    assert f"input mode: fixed to {mode} (a constant of the model, no longer an input)" in result.manifest["warnings"]
    x = np.linspace(-2, 2, length).astype(np.float32)
    want = _onnxruntime(path, {"x": x, "mode": np.array(mode, np.int64)})[0]
    np.testing.assert_array_equal(np.asarray(npukit.load(result)(x)[0]).reshape(want.shape), want)


@pytest.mark.parametrize("values, message", [
    (["nothing=1"], "the model has no input 'nothing'; its inputs are x, mode"),
    (["mode=1,2"], "input 'mode' (a scalar) holds 1 values, 2 were given"),
    (["mode=1.5"], "input 'mode' is int64; [1.5] are not such values"),
    (["x=1"], "input 'x' (?) has dimensions of unknown size; fix them with --input-shape"),
])
def test_input_values_that_do_not_fit_the_model_are_refused_by_name(tmp_path, values, message):
    path = _branching(tmp_path)
    with pytest.raises(ModelError) as error:
        npukit.compile(path, out_dir=tmp_path / "out", input_values=values)
    assert message in str(error.value) and str(path) in str(error.value)


def test_input_value_forms_and_formats_without_them(tmp_path):
    assert input_values_from(["sr=16000", "gain=0.5,1,2"]) == {"sr": (16000.0,), "gain": (0.5, 1.0, 2.0)}
    assert input_values_from({"sr": 8000, "v": np.array([[1, 2]])}) == {"sr": (8000.0,), "v": (1.0, 2.0)}
    for bad in ("sr", "sr=", "=3", "sr=a"):
        with pytest.raises(TargetError, match="--input-value"):
            input_values_from([bad])
    from support.tflite_builder import Branch, Spec, build_model

    path = tmp_path / "relu.tflite"
    build_model([Branch("RELU", [Spec((1, 4), np.float32)], [Spec((1, 4), np.float32)])], path)
    with pytest.raises(ModelError, match="--input-value makes ONNX inputs constants; this model is not an ONNX"):
        npukit.compile(path, out_dir=tmp_path / "out", input_values=["b0_in0=1,2,3,4"])
