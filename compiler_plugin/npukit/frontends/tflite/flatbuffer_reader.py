"""Reading a .tflite flatbuffer into plain Python values, checked.

The schema's generated readers (the ``tflite`` package) follow offsets
wherever the bytes point. Everything here is read through them inside one
guard: any inconsistency in the file (an offset or vector past the end, a
length that cannot fit, an unknown enumeration value, a tensor whose data
does not match its shape) becomes a ModelError that names the file and what
was being read, never an exception from inside the reader, a hang or a
crash. Nothing of TensorFlow is needed.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from npukit.errors import ModelError
from npukit.frontends.limits import ModelLimits, limits

# tflite.TensorType value -> (name, numpy dtype or None when npukit has no use for the contents).
_TENSOR_TYPES: dict[int, tuple[str, object]] = {
    0: ("float32", np.float32), 1: ("float16", np.float16), 2: ("int32", np.int32), 3: ("uint8", np.uint8),
    4: ("int64", np.int64), 5: ("string", None), 6: ("bool", np.bool_), 7: ("int16", np.int16),
    8: ("complex64", np.complex64), 9: ("int8", np.int8), 10: ("float64", np.float64),
    11: ("complex128", np.complex128), 12: ("uint64", np.uint64), 13: ("resource", None), 14: ("variant", None),
    15: ("uint32", np.uint32), 16: ("uint16", np.uint16), 17: ("int4", None),
}



@dataclass(frozen=True)
class Quantization:
    """Affine quantization: real = scale * (q - zero_point), per tensor or per
    slice along ``dimension``."""

    scales: np.ndarray  # float32
    zero_points: np.ndarray  # int64
    dimension: int

    @property
    def per_channel(self) -> bool:
        return self.scales.size > 1

    @property
    def scale(self) -> np.float32:
        """The one scale of a per-tensor quantization."""
        return np.float32(self.scales[0])

    @property
    def zero_point(self) -> int:
        return int(self.zero_points[0])


@dataclass
class Tensor:
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    data: np.ndarray | None  # the contents of a constant tensor, shaped
    quantization: Quantization | None
    is_variable: bool = False

    @property
    def elements(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def describe(self) -> str:
        return f"tensor {self.index} '{self.name}' ({self.dtype}[{','.join(map(str, self.shape))}])"


@dataclass
class Operator:
    index: int
    opcode: str  # the builtin operator's name, or "CUSTOM:<name>"
    version: int
    inputs: tuple[int, ...]  # -1: an optional input left out
    outputs: tuple[int, ...]
    intermediates: tuple[int, ...]
    options: dict[str, object] = field(default_factory=dict)
    # The options table's type (a schema BuiltinOptions name), "" when there is none.
    options_type: str = ""

    def describe(self) -> str:
        return f"operator {self.index} ({self.opcode})"

    def option(self, name: str, default=None):
        """A builtin option by its snake_case name; ``default`` only when the
        operator has no options table at all (the schema's defaults then).
        A name the table does not have is a programming error, not a default."""
        if not self.options:
            return default
        if name not in self.options:
            raise KeyError(f"{self.opcode} has no option '{name}' (it has {', '.join(sorted(self.options))})")
        return self.options[name]


@dataclass
class TfliteGraph:
    """The main subgraph of a .tflite model."""

    path: Path
    tensors: list[Tensor]
    operators: list[Operator]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    description: str = ""
    subgraph_count: int = 1
    #: The subgraphs a CALL_ONCE of the main subgraph runs (by index), read as graphs of their own.
    init_subgraphs: dict[int, "TfliteGraph"] = field(default_factory=dict)


def _snake(name: str) -> str:
    """CamelCase as snake_case, acronyms and single capitals split too
    (DilationHFactor -> dilation_h_factor)."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


class _Reader:
    """Checked access to the generated readers of one buffer."""

    def __init__(self, path: Path, data: bytes, model_limits: ModelLimits) -> None:
        import tflite

        self.tflite = tflite
        self.path = path
        self.data = data
        self.limits = model_limits
        self.where = "the model header"
        self.builtin_names = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
        self.option_classes = {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")}
        self.option_classes_2 = {v: k for k, v in vars(tflite.BuiltinOptions2).items() if not k.startswith("_")}

    def fail(self, reason: str) -> ModelError:
        return ModelError(f"{self.path}: not a valid TFLite model: {reason} (reading {self.where})")

    def count(self, length: int, what: str, item_bytes: int = 4) -> int:
        """A vector's length, refused when the vector cannot fit in the file."""
        if length < 0 or length * item_bytes > len(self.data):
            raise self.fail(f"{what} claims {length} entries, more than the file can hold")
        return length

    def within(self, what: str, value: int, name: str, unit: str) -> None:
        if value > getattr(self.limits, name):
            raise self.limits.exceeded(self.path, what, value, name, unit)

    def indices(self, array, what: str, limit: int, allow_missing: bool = False) -> tuple[int, ...]:
        values = tuple(int(v) for v in (array if array is not None and not isinstance(array, int) else ()))
        for v in values:
            if not (0 <= v < limit or (allow_missing and v == -1)):
                raise self.fail(f"{what} refers to tensor {v}; the subgraph has {limit}")
        return values


def _options(reader: _Reader, op) -> dict[str, object]:
    """The operator's builtin options as a dict of snake_case names."""
    tflite = reader.tflite
    found: dict[str, object] = {}
    for kind_getter, table_getter, classes in ((op.BuiltinOptionsType, op.BuiltinOptions, reader.option_classes),
                                               (op.BuiltinOptions2Type, op.BuiltinOptions2,
                                                reader.option_classes_2)):
        kind = kind_getter()
        if kind == 0:
            continue
        name = classes.get(kind)
        if name is None or not hasattr(tflite, name):
            raise reader.fail(f"unknown builtin options type {kind}")
        table = table_getter()
        if table is None:
            continue
        options = getattr(tflite, name)()
        options.Init(table.Bytes, table.Pos)
        for attr in dir(options):
            if attr.startswith("_") or attr in ("Init", "GetRootAs") or attr.startswith("GetRootAs") or \
                    attr.endswith(("BufferHasIdentifier", "IsNone", "Length")):
                continue
            if attr.endswith("AsNumpy"):
                value = getattr(options, attr)()
                found[_snake(attr.removesuffix("AsNumpy"))] = np.array(value).copy() if not isinstance(value, int) \
                    else np.zeros(0, np.int32)
                continue
            if hasattr(options, attr + "AsNumpy"):
                continue  # a vector: read as numpy above
            method = getattr(options, attr)
            if callable(method):
                try:
                    value = method()
                except TypeError:
                    continue  # an accessor that takes an index
                if isinstance(value, bytes):
                    value = value.decode("utf-8", "replace")
                if isinstance(value, (int, float, bool, str)):
                    found[_snake(attr)] = value
    return found


def _quantization(reader: _Reader, tensor, shape: tuple[int, ...]) -> Quantization | None:
    q = tensor.Quantization()
    if q is None:
        return None
    scales = q.ScaleAsNumpy()
    if isinstance(scales, int) or len(scales) == 0:
        return None
    reader.count(len(scales), "a quantization's scales")
    zero_points = q.ZeroPointAsNumpy()
    zero_points = np.zeros(len(scales), np.int64) if isinstance(zero_points, int) else \
        np.asarray(zero_points, np.int64).copy()
    scales = np.asarray(scales, np.float32).copy()
    if zero_points.size == 1 and scales.size > 1:
        zero_points = np.full(scales.size, zero_points[0], np.int64)
    if zero_points.size != scales.size:
        raise reader.fail(f"{scales.size} scales but {zero_points.size} zero points")
    dimension = int(q.QuantizedDimension())
    if scales.size > 1 and not (0 <= dimension < len(shape) and shape[dimension] == scales.size):
        raise reader.fail(f"{scales.size} per-channel scales along dimension {dimension} of a tensor of shape "
                          f"{list(shape)}")
    if not np.all(np.isfinite(scales)) or np.any(scales < 0):
        raise reader.fail("a quantization scale that is negative, infinite or NaN")
    return Quantization(scales, zero_points, dimension)


def _buffer_data(reader: _Reader, model, buffer_index: int, dtype_name: str, shape: tuple[int, ...],
                 sparsity=None):
    if buffer_index == 0 or buffer_index >= model.BuffersLength():
        return None
    buffer = model.Buffers(buffer_index)
    offset, size = int(buffer.Offset()), int(buffer.Size())
    if offset > 1:  # data stored after the flatbuffer (models over 2 GB)
        if offset + size > len(reader.data):
            raise reader.fail(f"buffer {buffer_index} lies past the end of the file")
        raw = reader.data[offset:offset + size]
    else:
        data = buffer.DataAsNumpy()
        if isinstance(data, int) or len(data) == 0:
            return None
        raw = data.tobytes()
    dtype = _TENSOR_TYPES[_tensor_type_code(dtype_name)][1]
    if dtype is None:
        return np.frombuffer(raw, np.uint8)
    if sparsity is not None:
        return _dense(reader, buffer_index, raw, np.dtype(dtype), shape, sparsity)
    elements = int(np.prod(shape, dtype=np.int64))
    if len(raw) != elements * np.dtype(dtype).itemsize:
        raise reader.fail(f"buffer {buffer_index} holds {len(raw)} bytes for {elements} {dtype_name} values")
    return np.frombuffer(raw, dtype).reshape(shape).copy()


def _dense(reader: _Reader, buffer_index: int, raw: bytes, dtype: np.dtype, shape: tuple[int, ...], sparsity):
    """A constant stored sparse, as the dense array its operators read (zeros where nothing is stored)."""
    from npukit.frontends.tflite.sparse_tensors import SparseTensorError, densify, read_sparsity

    if len(raw) % dtype.itemsize:
        raise reader.fail(f"buffer {buffer_index} holds {len(raw)} bytes, not a whole number of {dtype} values")
    try:
        return densify(np.frombuffer(raw, dtype), shape, **read_sparsity(sparsity))
    except SparseTensorError as e:
        raise reader.fail(f"a sparse constant whose encoding does not fit its shape {list(shape)}: {e}") from None


def _tensor_type_code(name: str) -> int:
    return next(code for code, (n, _) in _TENSOR_TYPES.items() if n == name)


def read_tflite(path: Path) -> TfliteGraph:
    """The main subgraph of the .tflite file at ``path`` (ModelError when the
    file is not a readable TFLite model)."""
    model_limits = limits()
    try:
        if path.stat().st_size > model_limits.file_bytes:
            raise model_limits.exceeded(path, "the model file", path.stat().st_size, "file_bytes", "bytes")
        data = path.read_bytes()
    except OSError as e:
        raise ModelError(f"{path}: cannot read the model: {e.strerror or e}") from None
    try:
        import tflite  # noqa: F401
    except ImportError:
        raise ModelError("reading .tflite models needs the 'tflite' schema package: pip install tflite") from None
    reader = _Reader(path, data, model_limits)
    try:
        return _read(reader)
    except ModelError:
        raise
    except (struct.error, IndexError):  # the generated readers followed an offset out of the file
        raise reader.fail("an offset or a length points past the end of the file") from None
    except Exception as e:  # noqa: BLE001 - any fault of the generated readers on malformed bytes
        detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if "buffer is smaller than requested size" in detail:
            detail = "a vector runs past the end of the file"
        raise reader.fail(f"the flatbuffer is inconsistent ({detail})") from None


def _read(reader: _Reader) -> TfliteGraph:
    tflite = reader.tflite
    data = reader.data
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise reader.fail("no 'TFL3' identifier")
    model = tflite.Model.GetRootAs(data, 0)
    reader.where = "the model's tables"
    subgraph_count = reader.count(model.SubgraphsLength(), "the subgraph list")
    if subgraph_count == 0:
        raise reader.fail("the model has no subgraph")
    reader.count(model.BuffersLength(), "the buffer list")
    code_count = reader.count(model.OperatorCodesLength(), "the operator code list")
    opcodes: list[tuple[str, int]] = []
    for i in range(code_count):
        reader.where = f"operator code {i}"
        code = model.OperatorCodes(i)
        builtin = max(int(code.BuiltinCode()), int(code.DeprecatedBuiltinCode()))
        name = reader.builtin_names.get(builtin)
        if name is None:
            raise reader.fail(f"unknown builtin operator code {builtin}")
        if name == "CUSTOM":
            custom = code.CustomCode()
            name = "CUSTOM:" + (custom.decode("utf-8", "replace") if custom else "?")
        opcodes.append((name, int(code.Version())))
    description = model.Description()
    budget = [0]  # the constant bytes of every subgraph read, against one limit
    graph = _subgraph(reader, model, opcodes, 0, budget)
    graph.description = description.decode("utf-8", "replace") if description else ""
    graph.subgraph_count = subgraph_count
    for op in graph.operators:
        if op.opcode != "CALL_ONCE":
            continue
        index = op.option("init_subgraph_index", 0)
        if not isinstance(index, int) or not 0 < index < subgraph_count:
            raise reader.fail(f"{op.describe()} runs subgraph {index}; the model has {subgraph_count} "
                              "(the main one is 0)")
        if index not in graph.init_subgraphs:
            graph.init_subgraphs[index] = _subgraph(reader, model, opcodes, index, budget)
    return graph


def _subgraph(reader: _Reader, model, opcodes: list[tuple[str, int]], number: int, budget: list[int]) -> TfliteGraph:
    """Subgraph ``number`` as a graph (``budget[0]``: the constant bytes read so far)."""
    subgraph = model.Subgraphs(number)
    where = "the main subgraph" if number == 0 else f"subgraph {number}"
    reader.where = where
    tensor_count = reader.count(subgraph.TensorsLength(), "the tensor list")
    reader.within(where, tensor_count, "tensors", "tensors")
    tensors: list[Tensor] = []
    for i in range(tensor_count):
        reader.where = f"tensor {i}" + ("" if number == 0 else f" of {where}")
        t = subgraph.Tensors(i)
        raw_shape = t.ShapeAsNumpy()
        shape = tuple(int(d) for d in (raw_shape if not isinstance(raw_shape, int) else ()))
        reader.within(f"tensor {i}", len(shape), "rank", "dimensions")
        signature = t.ShapeSignatureAsNumpy()
        if not isinstance(signature, int) and len(signature) == len(shape):
            # A dynamic dimension (-1 in the signature) is given its size in ``shape`` (1 for a batch).
            shape = tuple(s if s >= 0 else 1 for s in shape)
        if any(d < 0 for d in shape):
            raise reader.fail(f"a negative dimension in shape {list(shape)}")
        elements = math.prod(shape)
        reader.within(f"tensor {i} (shape {list(shape)})", elements, "tensor_elements", "elements")
        type_code = int(t.Type())
        if type_code not in _TENSOR_TYPES:
            raise reader.fail(f"unknown tensor type {type_code}")
        dtype, numpy_type = _TENSOR_TYPES[type_code]
        item_bytes = np.dtype(numpy_type).itemsize if numpy_type is not None else 1
        reader.within(f"tensor {i} (shape {list(shape)})", elements * item_bytes, "tensor_bytes", "bytes")
        name = t.Name()
        name = name.decode("utf-8", "replace") if name else f"tensor_{i}"
        quantization = _quantization(reader, t, shape)
        data = _buffer_data(reader, model, int(t.Buffer()), dtype, shape, t.Sparsity())
        if quantization is not None and data is None and np.any(quantization.scales == 0):
            raise reader.fail("a quantization scale of 0 on a tensor that operators compute")
        budget[0] += data.nbytes if data is not None else 0
        reader.within("the model's constants", budget[0], "constant_bytes", "bytes")
        tensors.append(Tensor(i, name, shape, dtype, data, quantization, bool(t.IsVariable())))
    operators: list[Operator] = []
    operator_count = reader.count(subgraph.OperatorsLength(), "the operator list")
    reader.within(where, operator_count, "operators", "operators")
    for i in range(operator_count):
        reader.where = f"operator {i}" + ("" if number == 0 else f" of {where}")
        op = subgraph.Operators(i)
        index = int(op.OpcodeIndex())
        if not 0 <= index < len(opcodes):
            raise reader.fail(f"operator code {index} of {len(opcodes)}")
        name, version = opcodes[index]
        inputs = reader.indices(op.InputsAsNumpy(), "an input", tensor_count, allow_missing=True)
        outputs = reader.indices(op.OutputsAsNumpy(), "an output", tensor_count)
        intermediates = reader.indices(op.IntermediatesAsNumpy(), "an intermediate", tensor_count)
        options_type = reader.option_classes.get(int(op.BuiltinOptionsType()), "") if op.BuiltinOptionsType() else ""
        operators.append(Operator(i, name, version, inputs, outputs, intermediates, _options(reader, op),
                                  options_type))
    reader.where = f"{where}'s inputs and outputs"
    inputs = reader.indices(subgraph.InputsAsNumpy(), "a model input", tensor_count)
    outputs = reader.indices(subgraph.OutputsAsNumpy(), "a model output", tensor_count)
    return TfliteGraph(reader.path, tensors, operators, inputs, outputs)

