"""Building .tflite models in the tests with exact parameters: one operator
per branch, several independent branches per model (so one compile and one
firmware cover a sweep of layer parameters), with TFLite's flatbuffer object
API as ai-edge-litert ships it.

A branch is ``Branch(op, inputs, outputs, options)`` with tensors given as
``Spec``s; constant tensors carry their data. ``run_reference`` runs a model
on TFLite's reference kernels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

_TYPES = {np.dtype(np.float32): schema.TensorType.FLOAT32, np.dtype(np.int8): schema.TensorType.INT8,
          np.dtype(np.int16): schema.TensorType.INT16, np.dtype(np.int32): schema.TensorType.INT32,
          np.dtype(np.int64): schema.TensorType.INT64, np.dtype(np.uint8): schema.TensorType.UINT8}

# Builtin option classes by operator.
_OPTIONS = {
    "CONV_2D": ("Conv2DOptions", schema.Conv2DOptionsT),
    "DEPTHWISE_CONV_2D": ("DepthwiseConv2DOptions", schema.DepthwiseConv2DOptionsT),
    "FULLY_CONNECTED": ("FullyConnectedOptions", schema.FullyConnectedOptionsT),
    "AVERAGE_POOL_2D": ("Pool2DOptions", schema.Pool2DOptionsT),
    "MAX_POOL_2D": ("Pool2DOptions", schema.Pool2DOptionsT),
    "ADD": ("AddOptions", schema.AddOptionsT),
    "SUB": ("SubOptions", schema.SubOptionsT),
    "MUL": ("MulOptions", schema.MulOptionsT),
    "SOFTMAX": ("SoftmaxOptions", schema.SoftmaxOptionsT),
    "RESHAPE": ("ReshapeOptions", schema.ReshapeOptionsT),
    "CONCATENATION": ("ConcatenationOptions", schema.ConcatenationOptionsT),
    "MEAN": ("ReducerOptions", schema.ReducerOptionsT),
    "LEAKY_RELU": ("LeakyReluOptions", schema.LeakyReluOptionsT),
    "TRANSPOSE_CONV": ("TransposeConvOptions", schema.TransposeConvOptionsT),
    "STRIDED_SLICE": ("StridedSliceOptions", schema.StridedSliceOptionsT),
    "RESIZE_BILINEAR": ("ResizeBilinearOptions", schema.ResizeBilinearOptionsT),
    "RESIZE_NEAREST_NEIGHBOR": ("ResizeNearestNeighborOptions", schema.ResizeNearestNeighborOptionsT),
    "SUM": ("ReducerOptions", schema.ReducerOptionsT),
    "REDUCE_MAX": ("ReducerOptions", schema.ReducerOptionsT),
    "REDUCE_MIN": ("ReducerOptions", schema.ReducerOptionsT),
}


@dataclass
class Spec:
    """A tensor: shape, dtype, quantization (scale and zero point, per tensor
    or per channel along ``axis``) and, for a constant, its data."""

    shape: tuple[int, ...]
    dtype: type = np.int8
    scale: "float | np.ndarray | None" = None
    zero_point: "int | np.ndarray" = 0
    axis: int = 0
    data: np.ndarray | None = None

    @staticmethod
    def constant(data: np.ndarray, scale=None, zero_point=0, axis: int = 0) -> "Spec":
        data = np.asarray(data)
        return Spec(tuple(data.shape), data.dtype.type, scale, zero_point, axis, data)


@dataclass
class Branch:
    op: str
    inputs: list["Spec | None"]
    outputs: list[Spec]
    options: dict = field(default_factory=dict)


def _quantization(spec: Spec):
    if spec.scale is None:
        return None
    q = schema.QuantizationParametersT()
    scales = np.atleast_1d(np.asarray(spec.scale, np.float32))
    zero_points = np.atleast_1d(np.asarray(spec.zero_point, np.int64))
    if zero_points.size == 1 and scales.size > 1:
        zero_points = np.full(scales.size, zero_points[0])
    q.scale = [float(s) for s in scales]
    q.zeroPoint = [int(z) for z in zero_points]
    q.quantizedDimension = spec.axis
    return q


def build_model(branches: list[Branch], path: Path | None = None) -> bytes:
    """A model of independent branches; inputs are the branches' non-constant
    input tensors, outputs their outputs, in branch order."""
    model = schema.ModelT()
    model.version = 3
    model.buffers = [schema.BufferT()]
    subgraph = schema.SubGraphT()
    subgraph.tensors, subgraph.operators, subgraph.inputs, subgraph.outputs = [], [], [], []
    codes: dict[str, int] = {}
    model.operatorCodes = []

    def tensor(spec: Spec, name: str) -> int:
        t = schema.TensorT()
        t.shape = list(spec.shape)
        t.type = _TYPES[np.dtype(spec.dtype)]
        t.name = name
        t.quantization = _quantization(spec)
        buffer = schema.BufferT()
        if spec.data is not None:
            buffer.data = np.frombuffer(np.ascontiguousarray(spec.data.astype(spec.dtype)).tobytes(), np.uint8)
        model.buffers.append(buffer)
        t.buffer = len(model.buffers) - 1
        subgraph.tensors.append(t)
        return len(subgraph.tensors) - 1

    for b, branch in enumerate(branches):
        if branch.op not in codes:
            code = schema.OperatorCodeT()
            value = getattr(schema.BuiltinOperator, branch.op)
            code.builtinCode, code.deprecatedBuiltinCode, code.version = value, min(value, 127), 1
            model.operatorCodes.append(code)
            codes[branch.op] = len(model.operatorCodes) - 1
        op = schema.OperatorT()
        op.opcodeIndex = codes[branch.op]
        op.inputs = []
        for i, spec in enumerate(branch.inputs):
            if spec is None:
                op.inputs.append(-1)
                continue
            index = tensor(spec, f"b{b}_in{i}")
            op.inputs.append(index)
            if spec.data is None:
                subgraph.inputs.append(index)
        op.outputs = [tensor(spec, f"b{b}_out{i}") for i, spec in enumerate(branch.outputs)]
        subgraph.outputs.extend(op.outputs)
        if branch.op in _OPTIONS:
            name, cls = _OPTIONS[branch.op]
            options = cls()
            for key, value in branch.options.items():
                setattr(options, key, value)
            op.builtinOptionsType = getattr(schema.BuiltinOptions, name)
            op.builtinOptions = options
        subgraph.operators.append(op)
    model.subgraphs = [subgraph]
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    data = bytes(builder.Output())
    if path is not None:
        path.write_bytes(data)
    return data


def run_reference(model: "bytes | Path", inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The model's outputs on TFLite's reference kernels."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kwargs = {"model_path": str(model)} if isinstance(model, Path) else {"model_content": model}
    interpreter = Interpreter(**kwargs, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def random_input(spec: Spec, rng: np.random.Generator) -> np.ndarray:
    if np.dtype(spec.dtype).kind == "f":
        return rng.uniform(-2, 2, spec.shape).astype(spec.dtype)
    info = np.iinfo(spec.dtype)
    return rng.integers(info.min, info.max + 1, spec.shape, dtype=spec.dtype)
