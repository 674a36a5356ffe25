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

_TYPES = {np.dtype(np.float32): schema.TensorType.FLOAT32, np.dtype(np.float16): schema.TensorType.FLOAT16,
          np.dtype(np.int8): schema.TensorType.INT8,
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
    "SPLIT_V": ("SplitVOptions", schema.SplitVOptionsT),
    "RESIZE_BILINEAR": ("ResizeBilinearOptions", schema.ResizeBilinearOptionsT),
    "RESIZE_NEAREST_NEIGHBOR": ("ResizeNearestNeighborOptions", schema.ResizeNearestNeighborOptionsT),
    "SUM": ("ReducerOptions", schema.ReducerOptionsT),
    "REDUCE_MAX": ("ReducerOptions", schema.ReducerOptionsT),
    "REDUCE_MIN": ("ReducerOptions", schema.ReducerOptionsT),
    "DEPTH_TO_SPACE": ("DepthToSpaceOptions", schema.DepthToSpaceOptionsT),
    "SPACE_TO_DEPTH": ("SpaceToDepthOptions", schema.SpaceToDepthOptionsT),
    "SHAPE": ("ShapeOptions", schema.ShapeOptionsT),
    "PACK": ("PackOptions", schema.PackOptionsT),
    "GATHER": ("GatherOptions", schema.GatherOptionsT),
    "SQUEEZE": ("SqueezeOptions", schema.SqueezeOptionsT),
    "CAST": ("CastOptions", schema.CastOptionsT),
    "REDUCE_PROD": ("ReducerOptions", schema.ReducerOptionsT),
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
    #: Stored sparse: SparseEncoding of ``data``.
    sparse: "SparseEncoding | None" = None

    @staticmethod
    def constant(data: np.ndarray, scale=None, zero_point=0, axis: int = 0) -> "Spec":
        data = np.asarray(data)
        return Spec(tuple(data.shape), data.dtype.type, scale, zero_point, axis, data)


DENSE, SPARSE_CSR = 0, 1


@dataclass
class SparseEncoding:
    """How a constant is stored sparse (TFLite's SparsityParameters): the walk's order over the tensor's
    dimensions and its blocked ones (``block_map[j]`` blocked by ``block_sizes[j]``), and each level's
    format (DENSE or SPARSE_CSR)."""

    traversal_order: list[int]
    formats: list[int]
    block_map: list[int] = field(default_factory=list)
    block_sizes: list[int] = field(default_factory=list)

    def encode(self, dense: np.ndarray):
        """The stored values and SparsityParametersT of ``dense``: a level in SPARSE_CSR keeps the
        coordinates under which anything is nonzero."""
        rank = dense.ndim
        split = []
        for d, size in enumerate(dense.shape):
            if d in self.block_map:
                block = self.block_sizes[self.block_map.index(d)]
                split += [size // block, block]
            else:
                split.append(size)
        expanded = dense.reshape(split)
        # Axes of ``expanded``: per original dimension its block index (and, when blocked, the position
        # in the block); ordered as the tensor's dimensions, then the blocked ones in block_map order.
        axis, outer, inner = 0, [], {}
        for d in range(rank):
            outer.append(axis)
            axis += 1
            if d in self.block_map:
                inner[d] = axis
                axis += 1
        order = outer + [inner[d] for d in self.block_map]
        walk = expanded.transpose(order).transpose(self.traversal_order)
        nodes = [walk]
        metadata = []
        for level, fmt in enumerate(self.formats):
            meta = schema.DimensionMetadataT()
            meta.format = fmt
            size = walk.shape[level]
            if fmt == DENSE:
                meta.denseSize = size
                nodes = [node[i] for node in nodes for i in range(size)]
            else:
                segments, indices, kept = [0], [], []
                for node in nodes:
                    for i in range(size):
                        if np.any(node[i] != 0):
                            indices.append(i)
                            kept.append(node[i])
                    segments.append(len(indices))
                nodes = kept
                for name, values in (("arraySegments", segments), ("arrayIndices", indices)):
                    vector = schema.Int32VectorT()
                    vector.values = list(values)
                    setattr(meta, name, vector)
                    setattr(meta, name + "Type", schema.SparseIndexVector.Int32Vector)
            metadata.append(meta)
        parameters = schema.SparsityParametersT()
        parameters.traversalOrder = list(self.traversal_order)
        parameters.blockMap = list(self.block_map)
        parameters.dimMetadata = metadata
        return np.array([np.asarray(node).item() for node in nodes], dense.dtype), parameters


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


def build_model(branches: list[Branch], path: Path | None = None, chain: bool = False) -> bytes:
    """A model of independent branches; inputs are the branches' non-constant
    input tensors, outputs their outputs, in branch order. With ``chain``, a
    Spec object used again is the same tensor (a branch input that is an
    earlier branch's output reads it; a model input read twice is one input),
    and the model's outputs are the outputs no branch reads."""
    model = schema.ModelT()
    model.version = 3
    model.buffers = [schema.BufferT()]
    subgraph = schema.SubGraphT()
    subgraph.tensors, subgraph.operators, subgraph.inputs, subgraph.outputs = [], [], [], []
    codes: dict[str, int] = {}
    model.operatorCodes = []
    known: dict[int, int] = {}  # id(Spec) -> its tensor (chain)
    read: set[int] = set()

    def tensor(spec: Spec, name: str) -> int:
        t = schema.TensorT()
        t.shape = list(spec.shape)
        t.type = _TYPES[np.dtype(spec.dtype)]
        t.name = name
        t.quantization = _quantization(spec)
        buffer = schema.BufferT()
        if spec.data is not None:
            stored = spec.data.astype(spec.dtype)
            if spec.sparse is not None:
                stored, t.sparsity = spec.sparse.encode(stored)
            buffer.data = np.frombuffer(np.ascontiguousarray(stored).tobytes(), np.uint8)
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
            if chain and id(spec) in known:
                op.inputs.append(known[id(spec)])
                read.add(known[id(spec)])
                continue
            index = tensor(spec, f"b{b}_in{i}")
            known[id(spec)] = index
            op.inputs.append(index)
            if spec.data is None:
                subgraph.inputs.append(index)
        op.outputs = [tensor(spec, f"b{b}_out{i}") for i, spec in enumerate(branch.outputs)]
        known.update((id(spec), index) for spec, index in zip(branch.outputs, op.outputs))
        subgraph.outputs.extend(op.outputs)
        if branch.op in _OPTIONS:
            name, cls = _OPTIONS[branch.op]
            options = cls()
            for key, value in branch.options.items():
                setattr(options, key, value)
            op.builtinOptionsType = getattr(schema.BuiltinOptions, name)
            op.builtinOptions = options
        subgraph.operators.append(op)
    subgraph.outputs = [index for index in subgraph.outputs if index not in read]
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
