"""ONNX QDQ models compute the graph's float requantization, as onnxruntime
(graph optimizations off, the oracle for ONNX models) does.

An ONNX QDQ layer is DequantizeLinear -> the layer in float ->
QuantizeLinear, which rounds half to even. TFLite's fixed-point
requantization of the same layer rounds half away from zero and works on a
31-bit multiplier, so it differs by one step wherever a value lies (within
about 2^-20 of a step) half way between two steps; a softmax after the
classifier spreads one step of a logit over several steps of the
probabilities. That was the cause of the MLPerf Tiny ONNX models' 5 and 6 LSB
(kws_int8.onnx, resnet8_int8.onnx) when the tuned CPU pipeline computed
TFLite's arithmetic for them. The tuned pipeline's kernels now repeat the
float epilogue operation by operation (layer_recognition.float_parameters);
the mynpu pairing keeps TFLite's fixed point (the NPU's arithmetic), which
shows the cause on the same model.

What remains is onnxruntime's own float32 summation (see the bound below
and docs/cpu-pipelines.md, "ONNX QDQ models").
"""

from __future__ import annotations

import numpy as np
import pytest

import npukit
from support.onnx_models import qdq_classifier_model
from support.oracles import OnnxRuntimeReference

SAMPLES = 8


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = qdq_classifier_model(tmp_path_factory.mktemp("qdq") / "qdq_classifier.onnx")
    rng = np.random.default_rng(3)
    inputs = [rng.integers(-128, 128, (1, 8, 8, 8), dtype=np.int8) for _ in range(SAMPLES)]
    oracle = OnnxRuntimeReference(path)
    return path, inputs, [oracle(x) for x in inputs]


def _max_lsb(loaded, inputs, wants) -> list[int]:
    """Per output, the largest difference from the oracle over the samples."""
    worst = [0, 0]
    for x, want in zip(inputs, wants):
        for o, (got, w) in enumerate(zip(loaded(x), want)):
            worst[o] = max(worst[o], int(np.abs(got.astype(np.int64) - w.astype(np.int64)).max()))
    return worst


def test_tuned_kernels_compute_the_graphs_float_rounding(model, tmp_path):
    path, inputs, wants = model
    result = npukit.compile(path, out_dir=tmp_path / "host")  # the tuned pipeline is the default
    operations = [d.get("operation") for d in result.manifest["cpu_kernels"].values()]
    assert "convolution + relu" in operations  # the layer with the ties runs in npukit's kernel
    assert _max_lsb(npukit.load(result), inputs, wants) == [0, 0]
    static = npukit.compile(path, output="static", out_dir=tmp_path / "static")
    assert _max_lsb(npukit.load(static, runtime="npukit"), inputs, wants) == [0, 0]


def test_fixed_point_requantization_differs_by_more_than_one_step(model, tmp_path):
    """The old cause, on the same model: TFLite's fixed point (what mynpu
    computes) is more than one step away from the graph's probabilities."""
    path, inputs, wants = model
    result = npukit.compile(path, target="mynpu", output="embedded", out_dir=tmp_path / "npu")
    logits, probabilities = _max_lsb(npukit.load(result, runtime="npukit"), inputs, wants)
    assert logits >= 1 and probabilities > 1, (logits, probabilities)


# The bound. onnxruntime sums a Conv's or MatMul's dequantized products in
# float32; npukit sums the integers exactly and then computes the graph's
# float requantization. Where the exact value lies within float32 rounding of
# a half step, the two round apart: by one step, in the layer where it
# happens. Later layers take that step as input, and a softmax spreads a
# step of its logits over several steps of the probabilities, so the bound
# is per layer: a layer whose int8 inputs agree with onnxruntime's is within
# one step of its output.


def _int8_sources(model, tensor: str) -> set[str]:
    """The int8 tensors (QuantizeLinear outputs, graph inputs) a tensor is
    computed from, through the float nodes between."""
    producers = {out: node for node in model.graph.node for out in node.output}
    constants = {t.name for t in model.graph.initializer}
    found, stack, seen = set(), [tensor], set()
    while stack:
        name = stack.pop()
        if name in seen or name in constants or not name:
            continue
        seen.add(name)
        node = producers.get(name)
        if node is None or (node.op_type == "QuantizeLinear" and name != tensor):
            found.add(name)
            continue
        stack.extend(node.input)
    return found


@pytest.mark.parametrize("name", ["kws_int8", "resnet8_int8"])
def test_each_layer_within_one_step_of_onnxruntime(name, shared_models, tmp_path, rng):
    import onnx
    from onnx import shape_inference

    from support.models import MLPERF_MODELS, random_inputs

    model = onnx.load(shared_models / f"{name}.onnx")
    inferred = shape_inference.infer_shapes(model)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in inferred.graph.value_info}
    outputs = [o.name for o in model.graph.output]
    layers = [n.output[0] for n in model.graph.node if n.op_type == "QuantizeLinear"]
    for tensor in layers:
        if tensor not in outputs:
            model.graph.output.append(onnx.helper.make_tensor_value_info(tensor, onnx.TensorProto.INT8,
                                                                         shapes[tensor]))
    path = tmp_path / f"{name}_layers.onnx"
    onnx.save(model, path)
    names = [o.name for o in model.graph.output]
    sources = {tensor: _int8_sources(model, tensor) for tensor in layers}
    oracle = OnnxRuntimeReference(path)
    loaded = npukit.load(npukit.compile(path, out_dir=tmp_path / "host"))
    spec = next(m for m in MLPERF_MODELS if m.name == name)
    shape = tuple(d.dim_value or 1 for d in model.graph.input[0].type.tensor_type.shape.dim)
    checked = 0
    for x in random_inputs(spec, shape, rng, 24):
        got = dict(zip(names, (np.asarray(g) for g in loaded(x))))
        want = dict(zip(names, oracle(x)))
        for tensor in layers:
            if not all(s not in want or np.array_equal(got[s].reshape(-1), want[s].reshape(-1))
                       for s in sources[tensor]):
                continue  # an input already differs: the layer carries that on
            step = int(np.abs(got[tensor].reshape(-1).astype(np.int64) -
                              want[tensor].reshape(-1).astype(np.int64)).max())
            assert step <= 1, f"{name}: layer {tensor!r} differs by {step} LSB on inputs that agree"
            checked += 1
    assert checked >= 24 * len(layers) // 2, checked


@pytest.mark.parametrize("name", ["kws_int8", "resnet8_int8"])
def test_tuned_kernels_equal_irees_float_code_bit_for_bit(name, shared_models, artifact_cache, rng):
    """The float output stage is IREE's f32 epilogue, operation for operation:
    the tuned build and the stock one (IREE's own code for every layer) give
    the same bytes, including on inputs where both differ from onnxruntime."""
    from support.models import MLPERF_MODELS, random_inputs

    tuned = npukit.load(artifact_cache(shared_models / f"{name}.onnx"))
    stock = npukit.load(artifact_cache(shared_models / f"{name}.onnx", cpu_pipeline="stock"))
    spec = next(m for m in MLPERF_MODELS if m.name == name)
    shape = (1, 49, 10, 1) if name == "kws_int8" else (1, 32, 32, 3)
    for x in random_inputs(spec, shape, rng, 60):
        np.testing.assert_array_equal(tuned(x)[0], stock(x)[0])
