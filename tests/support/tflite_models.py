"""Small .tflite models written in the tests, and .tflite files as editable
objects (TFLite's flatbuffer object API, as ai-edge-litert ships it).

``write_tflite`` builds a one-subgraph model from tensors and operators
wired as given (chains, any tensor type, any operator, unsupported ones
included); tflite_builder.py builds the layer sweeps' independent
one-operator branches. ``load_model``/``save_model`` turn a file into a
``schema.ModelT`` and back, for tests that change one field of a real model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

TYPES = {np.dtype(np.float32): schema.TensorType.FLOAT32, np.dtype(np.int8): schema.TensorType.INT8,
         np.dtype(np.int16): schema.TensorType.INT16, np.dtype(np.int32): schema.TensorType.INT32,
         np.dtype(np.int64): schema.TensorType.INT64, np.dtype(np.uint8): schema.TensorType.UINT8,
         np.dtype(np.complex64): schema.TensorType.COMPLEX64}


@dataclass
class Tensor:
    """A tensor: shape, element type (numpy dtype or a schema.TensorType
    value), per-tensor quantization and, for a constant, its data."""

    shape: tuple[int, ...]
    dtype: "type | int" = np.int8
    scale: float | None = None
    zero_point: int = 0
    data: np.ndarray | None = None
    name: str = ""


@dataclass
class Operator:
    opcode: str  # a schema.BuiltinOperator name
    inputs: list[int]
    outputs: list[int]
    options_type: str = "NONE"  # a schema.BuiltinOptions name
    options: object = None  # the matching schema.<Name>T


def _type(dtype) -> int:
    return dtype if isinstance(dtype, int) else TYPES[np.dtype(dtype)]


def write_tflite(path: Path, tensors: list[Tensor], operators: list[Operator], inputs: list[int],
                 outputs: list[int]) -> Path:
    model = schema.ModelT()
    model.version = 3
    model.buffers = [schema.BufferT()]
    model.operatorCodes = []
    codes: dict[str, int] = {}
    graph = schema.SubGraphT()
    graph.tensors, graph.operators = [], []
    for i, t in enumerate(tensors):
        tensor = schema.TensorT()
        tensor.shape = list(t.shape)
        tensor.type = _type(t.dtype)
        tensor.name = t.name or f"t{i}"
        if t.data is not None:
            buffer = schema.BufferT()
            buffer.data = np.frombuffer(np.ascontiguousarray(t.data).tobytes(), np.uint8)
            model.buffers.append(buffer)
            tensor.buffer = len(model.buffers) - 1
        else:
            tensor.buffer = 0
        if t.scale is not None:
            q = schema.QuantizationParametersT()
            q.scale, q.zeroPoint = [float(t.scale)], [int(t.zero_point)]
            tensor.quantization = q
        graph.tensors.append(tensor)
    for op in operators:
        if op.opcode not in codes:
            code = schema.OperatorCodeT()
            code.builtinCode = getattr(schema.BuiltinOperator, op.opcode)
            code.deprecatedBuiltinCode = min(code.builtinCode, 127)
            code.version = 1
            codes[op.opcode] = len(model.operatorCodes)
            model.operatorCodes.append(code)
        operator = schema.OperatorT()
        operator.opcodeIndex = codes[op.opcode]
        operator.inputs, operator.outputs = list(op.inputs), list(op.outputs)
        operator.builtinOptionsType = getattr(schema.BuiltinOptions, op.options_type)
        operator.builtinOptions = op.options
        graph.operators.append(operator)
    graph.inputs, graph.outputs = list(inputs), list(outputs)
    graph.name = "main"
    model.subgraphs = [graph]
    return save_model(model, path)


def load_model(path: Path) -> "schema.ModelT":
    return schema.ModelT.InitFromPackedBuf(Path(path).read_bytes(), 0)


def pack_model(model: "schema.ModelT") -> bytes:
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def save_model(model: "schema.ModelT", path: Path) -> Path:
    Path(path).write_bytes(pack_model(model))
    return Path(path)


def int8_add_model(path: Path, shape: tuple[int, ...] = (1, 4)) -> Path:
    """Two int8 inputs added: the smallest model every path supports."""
    q = dict(dtype=np.int8, scale=0.05, zero_point=0)
    return write_tflite(path, [Tensor(shape, **q, name="a"), Tensor(shape, **q, name="b"),
                               Tensor(shape, **q, name="sum")],
                        [Operator("ADD", [0, 1], [2], "AddOptions", schema.AddOptionsT())], [0, 1], [2])
