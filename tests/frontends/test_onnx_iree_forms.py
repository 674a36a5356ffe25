"""ONNX forms IREE 3.13 cannot compile, rewritten at import into equal forms it can: wide reflect pads as
gathers, convolutions with one output position along an axis without the input they never read, and the
small constant computations (pads, reshape targets) that hide the shapes those rewrites need. Each sweep is
one model of independent branches, compared with onnxruntime."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import npukit
from npukit.frontends.onnx_constant_folding import fold_small_constants
from npukit.frontends.onnx_reflect_pad import reflect_indices


def _model(nodes, inputs, outputs, initializers, opset):
    """A model whose outputs without a shape get the one ONNX's shape inference gives them."""
    import onnx

    model = helper.make_model(helper.make_graph(nodes, "forms", inputs, outputs, initializers),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


def _compile_and_compare(tmp_path, model, feeds, exact):
    import onnx
    import onnxruntime as ort

    path = tmp_path / "forms.onnx"
    onnx.save(model, path)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]).run(None, feeds)
    result = npukit.compile(path, out_dir=tmp_path / "out")
    got = npukit.load(result)(*feeds.values())
    for g, w, name in zip(got, want, [o.name for o in model.graph.output]):
        g = np.asarray(g).reshape(w.shape)
        if exact:
            np.testing.assert_array_equal(g, w, err_msg=name)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=name)


#: (input shape, pads as ONNX gives them, axes or None)
REFLECT_PADS = [
    ((1, 576), [0, 64, 0, 64], None),  # IREE's own lowering fails on this one
    ((2, 100), [0, 3, 0, 7], None),
    ((1, 3, 40, 40), [0, 0, 1, 3, 0, 0, 2, 0], None),
    ((3, 17), [2, 16, 0, 5], None),
    ((2, 9, 130), [5, 99], [-1]),
]


def test_reflect_pads_sweep(tmp_path):
    rng = np.random.default_rng(0)
    nodes, inputs, outputs, initializers, feeds = [], [], [], [], {}
    for k, (shape, pads, axes) in enumerate(REFLECT_PADS):
        names = [f"x{k}", f"pads{k}"] + (["", f"axes{k}"] if axes else [])
        initializers.append(numpy_helper.from_array(np.array(pads, np.int64), f"pads{k}"))
        if axes:
            initializers.append(numpy_helper.from_array(np.array(axes, np.int64), f"axes{k}"))
        nodes.append(helper.make_node("Pad", names, [f"y{k}"], name=f"pad{k}", mode="reflect"))
        inputs.append(helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, list(shape)))
        outputs.append(helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, None))
        feeds[f"x{k}"] = rng.standard_normal(shape).astype(np.float32)
    # Pads computed from constants, as exporters write them: folded at import, then a gather.
    nodes += [helper.make_node("Constant", [], ["head"], value=numpy_helper.from_array(np.array([0, 4], np.int64))),
              helper.make_node("Constant", [], ["count"], value=numpy_helper.from_array(np.array([1], np.int64))),
              helper.make_node("ConstantOfShape", ["count"], ["zero"],
                               value=numpy_helper.from_array(np.array([0], np.int64))),
              helper.make_node("Constant", [], ["tail"], value=numpy_helper.from_array(np.array([90], np.int64))),
              helper.make_node("Concat", ["head", "zero", "tail"], ["computed_pads"], axis=0),
              helper.make_node("Pad", ["xc", "computed_pads"], ["yc"], name="computed", mode="reflect")]
    inputs.append(helper.make_tensor_value_info("xc", TensorProto.FLOAT, [1, 576]))
    outputs.append(helper.make_tensor_value_info("yc", TensorProto.FLOAT, None))
    feeds["xc"] = rng.standard_normal((1, 576)).astype(np.float32)
    model = _model(nodes, inputs, outputs, initializers, opset=18)
    _compile_and_compare(tmp_path, model, feeds, exact=True)


def test_reflect_indices_are_numpys_reflect_padding():
    for size, before, after in [(5, 4, 4), (2, 1, 1), (9, 0, 3), (9, 3, 0)]:
        x = np.arange(size)
        np.testing.assert_array_equal(reflect_indices(size, before, after), np.pad(x, (before, after), "reflect"))


#: (input spatial shape, kernel, stride, pads (begin..., end...), dilation): at least one axis has one output
#: position and input beyond the window it reads.
UNREAD_WINDOWS = [
    ((2,), 3, 2, [1, 1], 1),   # end padding unread
    ((4,), 3, 2, [0, 0], 1),   # input unread
    ((5,), 3, 4, [1, 2], 2),   # both: end padding cut, then one input position sliced
    ((2, 2), 3, 2, [1, 1, 1, 1], 1),
    ((2, 6), 3, 2, [1, 1, 1, 1], 1),  # one output row, three output columns
]


def test_convolutions_with_one_output_position_sweep(tmp_path):
    rng = np.random.default_rng(1)
    nodes, inputs, outputs, initializers, feeds = [], [], [], [], {}
    channels = 4
    for k, (spatial, kernel, stride, pads, dilation) in enumerate(UNREAD_WINDOWS):
        rank = len(spatial)
        weights = rng.uniform(-0.5, 0.5, (channels, channels) + (kernel,) * rank).astype(np.float32)
        initializers.append(numpy_helper.from_array(weights, f"w{k}"))
        nodes.append(helper.make_node("Conv", [f"x{k}", f"w{k}"], [f"y{k}"], name=f"conv{k}",
                                      kernel_shape=[kernel] * rank, strides=[stride] * rank, pads=pads,
                                      dilations=[dilation] * rank))
        inputs.append(helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [1, channels, *spatial]))
        outputs.append(helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, None))
        feeds[f"x{k}"] = rng.standard_normal((1, channels, *spatial)).astype(np.float32)
    _compile_and_compare(tmp_path, _model(nodes, inputs, outputs, initializers, opset=17), feeds, exact=False)


def test_constant_folding_computes_shape_arithmetic_and_leaves_weights_alone():
    """Quantized weights must reach IREE and npukit's recogniser as the model has them: only small integer
    computations are folded."""
    weights = numpy_helper.from_array(np.arange(-8, 8, dtype=np.int8).reshape(4, 4), "w")
    scale = numpy_helper.from_array(np.array(0.1, np.float32), "s")
    shape = numpy_helper.from_array(np.array([2, 2], np.int64), "half")
    nodes = [helper.make_node("DequantizeLinear", ["w", "s"], ["wf"]),
             helper.make_node("Concat", ["half", "half"], ["target"], axis=0),
             helper.make_node("Reshape", ["wf", "target"], ["wr"]),
             helper.make_node("Cast", ["w"], ["w32"], to=TensorProto.INT32),
             helper.make_node("Add", ["x", "wr"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2, 2, 2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2, 2, 2])],
                   [weights, scale, shape], opset=17)
    assert fold_small_constants(model) == 2  # the Concat and the int32 Cast
    assert [n.op_type for n in model.graph.node] == ["DequantizeLinear", "Reshape", "Add"]
    target = next(i for i in model.graph.initializer if i.name == "target")
    assert list(numpy_helper.to_array(target)) == [2, 2, 2, 2]
    assert "w32" not in {i.name for i in model.graph.initializer}  # computed, then dropped as nothing reads it


def test_random_operators_are_never_folded():
    """A Multinomial draw on constant logits gives integers like shape arithmetic, but a new draw per run."""
    logits = numpy_helper.from_array(np.zeros((1, 4), np.float32), "logits")
    nodes = [helper.make_node("Multinomial", ["logits"], ["draw"], sample_size=3, dtype=TensorProto.INT64),
             helper.make_node("Add", ["x", "draw"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.INT64, [1, 3])],
                   [helper.make_tensor_value_info("y", TensorProto.INT64, [1, 3])], [logits], opset=17)
    assert fold_small_constants(model) == 0
    assert [n.op_type for n in model.graph.node] == ["Multinomial", "Add"]
