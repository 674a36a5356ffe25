"""What a .tflite file contains, read with the TFLite schema's generated
readers (the ``tflite`` package): operators, tensors with their quantization,
constant data, and the figures the catalogue derives from them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import tflite

_OPERATOR_NAMES = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
_TYPE_NAMES = {v: k.lower() for k, v in vars(tflite.TensorType).items() if not k.startswith("_")}
_NUMPY_TYPES = {
    "float32": np.float32, "float16": np.float16, "float64": np.float64, "int8": np.int8, "uint8": np.uint8,
    "int16": np.int16, "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32, "int64": np.int64,
    "uint64": np.uint64, "bool": np.bool_,
}

RECURRENT_OPERATORS = frozenset({
    "LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM", "SVDF", "RNN",
    "UNIDIRECTIONAL_SEQUENCE_RNN", "BIDIRECTIONAL_SEQUENCE_RNN",
})
# Operators whose non-constant inputs are tensors of the model's arithmetic
# only at one side (conversions at the model's edges).
_CONVERSIONS = frozenset({"QUANTIZE", "DEQUANTIZE"})
_INDEX_TYPES = frozenset({"int32", "int64", "bool"})


@dataclass(frozen=True)
class Tensor:
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    buffer: int
    variable: bool
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    quantized_dimension: int

    @property
    def size_bytes(self) -> int:
        itemsize = np.dtype(_NUMPY_TYPES[self.dtype]).itemsize if self.dtype in _NUMPY_TYPES else 1
        return int(np.prod(self.shape, dtype=np.int64)) * itemsize

    @property
    def per_channel(self) -> bool:
        return len(self.scales) > 1


@dataclass(frozen=True)
class Operator:
    name: str  # BuiltinOperator name, or "CUSTOM:<code>"
    inputs: tuple[int, ...]  # -1: an omitted optional input
    outputs: tuple[int, ...]
    # For convolutions: stride_h, stride_w, dilation_h, dilation_w,
    # fused_activation and (depthwise) depth_multiplier.
    options: tuple[tuple[str, int], ...] = ()

    def option(self, name: str) -> int:
        return dict(self.options)[name]


_OPTION_READERS = {
    "CONV_2D": (tflite.Conv2DOptions, ("StrideH", "StrideW", "DilationHFactor", "DilationWFactor",
                                       "FusedActivationFunction")),
    "DEPTHWISE_CONV_2D": (tflite.DepthwiseConv2DOptions, ("StrideH", "StrideW", "DilationHFactor",
                                                          "DilationWFactor", "FusedActivationFunction",
                                                          "DepthMultiplier")),
}
_OPTION_NAMES = {"StrideH": "stride_h", "StrideW": "stride_w", "DilationHFactor": "dilation_h",
                 "DilationWFactor": "dilation_w", "FusedActivationFunction": "fused_activation",
                 "DepthMultiplier": "depth_multiplier"}


def _options(name: str, op) -> tuple[tuple[str, int], ...]:
    if name not in _OPTION_READERS or op.BuiltinOptions() is None:
        return ()
    reader_type, getters = _OPTION_READERS[name]
    table = op.BuiltinOptions()
    reader = reader_type()
    reader.Init(table.Bytes, table.Pos)
    return tuple((_OPTION_NAMES[g], int(getattr(reader, g)())) for g in getters)


class TFLiteModel:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._data = self.path.read_bytes()
        self._model = tflite.Model.GetRootAsModel(self._data, 0)
        if self._model.SubgraphsLength() == 0:
            raise ValueError(f"{self.path}: the .tflite file has no subgraph")
        self._codes = [self._operator_name(self._model.OperatorCodes(i)) for i in range(self._model.OperatorCodesLength())]
        self.subgraphs = [self._read_subgraph(i) for i in range(self._model.SubgraphsLength())]

    @staticmethod
    def _operator_name(code) -> str:
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin == tflite.BuiltinOperator.CUSTOM:
            custom = code.CustomCode()
            return f"CUSTOM:{custom.decode() if custom else ''}"
        return _OPERATOR_NAMES.get(builtin, f"BUILTIN_{builtin}")

    def _read_subgraph(self, index: int) -> tuple[list[Tensor], list[Operator], tuple[int, ...], tuple[int, ...]]:
        graph = self._model.Subgraphs(index)
        tensors = []
        for t in range(graph.TensorsLength()):
            tensor = graph.Tensors(t)
            quant = tensor.Quantization()
            scales = tuple(float(s) for s in quant.ScaleAsNumpy()) if quant is not None and quant.ScaleLength() else ()
            zeros = tuple(int(z) for z in quant.ZeroPointAsNumpy()) if quant is not None and quant.ZeroPointLength() else ()
            tensors.append(Tensor(
                index=t, name=(tensor.Name() or b"").decode(errors="replace"),
                shape=tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else (),
                dtype=_TYPE_NAMES.get(tensor.Type(), f"type{tensor.Type()}"), buffer=tensor.Buffer(),
                variable=bool(tensor.IsVariable()), scales=scales, zero_points=zeros,
                quantized_dimension=quant.QuantizedDimension() if quant is not None else 0,
            ))
        operators = []
        for o in range(graph.OperatorsLength()):
            op = graph.Operators(o)
            name = self._codes[op.OpcodeIndex()]
            operators.append(Operator(
                name,
                tuple(int(i) for i in op.InputsAsNumpy()) if op.InputsLength() else (),
                tuple(int(i) for i in op.OutputsAsNumpy()) if op.OutputsLength() else (),
                _options(name, op),
            ))
        inputs = tuple(int(i) for i in graph.InputsAsNumpy()) if graph.InputsLength() else ()
        outputs = tuple(int(i) for i in graph.OutputsAsNumpy()) if graph.OutputsLength() else ()
        return tensors, operators, inputs, outputs

    # The main subgraph.
    @property
    def tensors(self) -> list[Tensor]:
        return self.subgraphs[0][0]

    @property
    def operators(self) -> list[Operator]:
        return self.subgraphs[0][1]

    @property
    def inputs(self) -> list[Tensor]:
        return [self.tensors[i] for i in self.subgraphs[0][2]]

    @property
    def outputs(self) -> list[Tensor]:
        return [self.tensors[i] for i in self.subgraphs[0][3]]

    def buffer_bytes(self, buffer: int) -> int:
        if buffer <= 0 or buffer >= self._model.BuffersLength():
            return 0
        entry = self._model.Buffers(buffer)
        if entry.Size():  # stored after the flatbuffer (models over 2 GB)
            return int(entry.Size())
        return int(entry.DataLength())

    def is_constant(self, tensor: Tensor) -> bool:
        return self.buffer_bytes(tensor.buffer) > 0

    def constant(self, tensor: Tensor) -> np.ndarray:
        """A constant tensor's values."""
        if not self.is_constant(tensor):
            raise ValueError(f"{self.path}: tensor {tensor.name!r} has no constant data")
        entry = self._model.Buffers(tensor.buffer)
        if entry.Size():
            raw = self._data[entry.Offset(): entry.Offset() + entry.Size()]
        else:
            raw = entry.DataAsNumpy().tobytes()
        return np.frombuffer(raw, dtype=_NUMPY_TYPES[tensor.dtype]).reshape(tensor.shape)

    @cached_property
    def operator_names(self) -> tuple[str, ...]:
        """Every operator in every subgraph, sorted, each once."""
        return tuple(sorted({op.name for _, operators, _, _ in self.subgraphs for op in operators}))

    @property
    def recurrent(self) -> bool:
        return bool(RECURRENT_OPERATORS & set(self.operator_names))

    @cached_property
    def oracle_limitations(self) -> tuple[str, ...]:
        """Why LiteRT's kernels (the .tflite oracle) cannot run this model, if they cannot.

        LiteRT's integer SVDF reads the time weights and the state as int16;
        an int8 SVDF written for older TFLite Micro releases has int8 ones,
        which LiteRT then reads and writes past their ends (heap corruption,
        seen as a double free or a crash)."""
        found = []
        for op in self.operators:
            if op.name != "SVDF" or self.tensors[op.inputs[0]].dtype != "int8":
                continue
            time_weights, state = self.tensors[op.inputs[2]], self.tensors[op.inputs[4]]
            if time_weights.dtype != "int16" or state.dtype != "int16":
                found.append(
                    f"SVDF with {time_weights.dtype} time weights and {state.dtype} state: LiteRT's integer "
                    "SVDF takes both as int16 and would read and write past their ends"
                )
        return tuple(sorted(set(found)))

    @cached_property
    def weight_bytes(self) -> int:
        """Bytes of constant data (weights, biases, shapes, tables), each buffer once."""
        buffers = {t.buffer for tensors, _, _, _ in self.subgraphs for t in tensors}
        return sum(self.buffer_bytes(b) for b in buffers)

    @cached_property
    def macs(self) -> int:
        return sum(operator_macs(self, op) for op in self.operators)

    @cached_property
    def arithmetic(self) -> str:
        """"int8", "int16x8", "float32" or "mixed", from the types of the
        tensors the layers compute on (conversions at the edges aside)."""
        activations: set[str] = set()
        weights: set[str] = set()
        for tensors, operators, _, _ in self.subgraphs:
            for op in operators:
                if op.name in _CONVERSIONS:
                    continue
                for index in op.inputs + op.outputs:
                    if index < 0:
                        continue
                    tensor = tensors[index]
                    if tensor.dtype in _INDEX_TYPES:
                        continue
                    (weights if self.is_constant(tensor) else activations).add(tensor.dtype)
        floats = {"float32", "float16", "float64"}
        if activations <= floats and weights <= floats:
            return "float32"
        if activations & floats:
            return "mixed"
        if "int8" in activations:
            return "int8"
        if activations == {"int16"} and weights <= {"int8", "int16"}:
            return "int16x8"
        return "mixed"

    @cached_property
    def peak_activation_bytes(self) -> int:
        """The largest sum of non-constant tensors alive at once in the main
        subgraph when operators run in the file's order and each tensor lives
        from its producer to its last consumer (variable tensors always): a
        lower bound of the activation arena a memory planner can reach."""
        tensors, operators, inputs, outputs = self.subgraphs[0]
        first: dict[int, int] = {i: 0 for i in inputs}
        last: dict[int, int] = {i: len(operators) for i in outputs}
        for step, op in enumerate(operators):
            for index in op.outputs:
                first.setdefault(index, step)
                last[index] = max(last.get(index, step), step)
            for index in op.inputs:
                if index >= 0:
                    first.setdefault(index, 0)
                    last[index] = max(last.get(index, step), step)
        live = [t for t in first if not self.is_constant(tensors[t])]
        persistent = sum(tensors[t].size_bytes for t in live if tensors[t].variable)
        peak = 0
        for step in range(len(operators) + 1):
            alive = sum(tensors[t].size_bytes for t in live
                        if not tensors[t].variable and first[t] <= step <= last[t])
            peak = max(peak, alive)
        return peak + persistent


def _elements(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def operator_macs(model: TFLiteModel, op: Operator) -> int:
    """Multiply-accumulates of one operator of the main subgraph: those of the
    contractions (convolutions, depthwise, transposed convolutions, fully
    connected, batched matrix products, LSTM/SVDF matrices); none for
    elementwise operators, pooling or resizing."""
    tensors = model.tensors

    def shape(position: int) -> tuple[int, ...]:
        return tensors[op.inputs[position]].shape

    out = tensors[op.outputs[0]].shape if op.outputs else ()
    if op.name in ("CONV_2D",):
        _, kh, kw, cin = shape(1)
        return _elements(out) * kh * kw * cin
    if op.name == "DEPTHWISE_CONV_2D":
        _, kh, kw, _ = shape(1)
        return _elements(out) * kh * kw
    if op.name == "CONV_3D":
        kd, kh, kw, cin, _ = shape(1)
        return _elements(out) * kd * kh * kw * cin
    if op.name == "TRANSPOSE_CONV":
        cout, kh, kw, _ = shape(1)
        return _elements(shape(2)) * kh * kw * cout
    if op.name == "FULLY_CONNECTED":
        return _elements(out) * shape(1)[-1]
    if op.name == "BATCH_MATMUL":
        return _elements(out) * shape(0)[-1]
    if op.name in RECURRENT_OPERATORS:
        # Every constant matrix is used once per batch row and time step.
        steps = _elements(shape(0)[:-1])  # batch (and time) of the data input
        matrices = sum(_elements(tensors[i].shape) for i in op.inputs
                       if i >= 0 and len(tensors[i].shape) == 2 and model.is_constant(tensors[i]))
        return steps * matrices
    return 0
