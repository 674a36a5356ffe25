"""What every operator lowering shares: the graph being imported, the
values computed so far, the registry of lowerings by operator name, and the
one-line error for what cannot be imported."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from iree.compiler import ir

from npukit.errors import ModelError
from npukit.frontends.message_text import short
from npukit.frontends.tflite.flatbuffer_reader import Operator, Quantization, Tensor, TfliteGraph
from npukit.frontends.tflite.mlir_builder import COMPUTED_TYPES, ModuleBuilder, Value
from npukit.quantization.fixed_point import FixedPoint

Lowering = Callable[["LoweringContext", Operator], None]

LOWERINGS: dict[str, Lowering] = {}

INT_RANGES = {"int8": (-128, 127), "int16": (-32768, 32767), "int32": (-(1 << 31), (1 << 31) - 1),
              "uint8": (0, 255)}


def lowers(*names: str):
    """Registers a lowering for the TFLite builtin operators ``names``."""

    def register(fn: Lowering) -> Lowering:
        for name in names:
            LOWERINGS[name] = fn
        return fn

    return register


class UnsupportedOperator(ModelError):
    """An operator (or a form of it) the importer has no lowering for."""


@dataclass
class LoweringContext:
    graph: TfliteGraph
    builder: ModuleBuilder
    values: dict[int, Value] = field(default_factory=dict)
    operator: Operator | None = None
    # Flags the module needs from IREE (IREE demotes f64 to f32 unless told not to).
    uses_f64: bool = False
    # The mutable globals made for the model's variable tensors (variable_state.py).
    state: list[str] = field(default_factory=list)
    # Resource variables (resource_variables.py): handle tensor -> (container, shared_name), variable -> its
    # global, and the initialisation subgraphs already read.
    resource_handles: dict[int, tuple[str, str]] = field(default_factory=dict)
    resource_globals: dict[tuple[str, str], str] = field(default_factory=dict)
    resource_inits: set[int] = field(default_factory=set)
    # Recurrent operators' time steps emitted one by one instead of as a loop (time_loop.py).
    unroll_time_steps: bool = False

    # Tensors -------------------------------------------------------------------

    def tensor(self, index: int) -> Tensor:
        return self.graph.tensors[index]

    def input(self, position: int) -> Tensor | None:
        """The operator's ``position``-th input tensor (None when left out)."""
        op = self.operator
        if position >= len(op.inputs) or op.inputs[position] < 0:
            return None
        return self.tensor(op.inputs[position])

    def output(self, position: int = 0) -> Tensor:
        return self.tensor(self.operator.outputs[position])

    def value(self, index: int) -> Value:
        """A tensor's value: computed by an earlier operator, or a constant."""
        if index in self.values:
            return self.values[index]
        t = self.tensor(index)
        if t.data is None:
            raise self.fail(f"{t.describe()} is used before any operator computes it")
        if t.dtype not in COMPUTED_TYPES:
            raise self.unsupported(f"a {t.dtype} constant ({t.describe()})", supported=computed_types_text())
        value = self.builder.constant(t.data, t.dtype)
        self.values[index] = value
        return value

    def input_value(self, position: int) -> Value:
        t = self.input(position)
        if t is None:
            raise self.fail(f"input {position} is missing")
        return self.value(t.index)

    def constant(self, position: int, what: str) -> np.ndarray:
        t = self.input(position)
        if t is None or t.data is None:
            raise self.unsupported(f"{what} that are not constants")
        return t.data

    def define(self, position: int, value: Value) -> None:
        t = self.output(position)
        if tuple(value.shape) != t.shape:
            value = self.builder.reshape(value, t.shape)
        if value.dtype != t.dtype and not (t.dtype == "uint8" and value.dtype == "int8"):
            raise self.fail(f"computed {value.dtype} values for the {t.dtype} {t.describe()}")
        self.values[t.index] = value

    # Quantization ----------------------------------------------------------------

    def quantization(self, t: Tensor, what: str) -> Quantization:
        if t.quantization is None:
            raise self.unsupported(f"a {t.dtype} {what} without quantization parameters")
        return t.quantization

    def per_tensor(self, t: Tensor, what: str) -> Quantization:
        q = self.quantization(t, what)
        if q.per_channel:
            raise self.unsupported(f"a per-channel quantized {what}")
        return q

    # Errors ------------------------------------------------------------------------

    def where(self) -> str:
        op = self.operator
        if op is None:
            return ""
        names = [self.tensor(i).name for i in op.outputs]
        return f"operator {op.index} ({op.opcode}{f', output {short(names[0])!r}' if names else ''})"

    def fail(self, reason: str) -> ModelError:
        return ModelError(f"{self.graph.path}: {self.where()}: {reason}")

    def unsupported(self, reason: str, supported: str | None = None) -> UnsupportedOperator:
        """The refusal of a form of the operator (``supported``: the forms that are, if given)."""
        also = f" ({supported} is)" if supported else ""
        return UnsupportedOperator(f"{self.graph.path}: {self.where()}: {reason} is not supported{also}")

    # Scalar arithmetic ----------------------------------------------------------------

    @staticmethod
    def fixed() -> FixedPoint:
        """The integer arithmetic builder, inside a generic's body."""
        return FixedPoint()

    def location(self) -> str:
        op = self.operator
        return f"{op.opcode}:{op.index}:{self.tensor(op.outputs[0]).name}" if op.outputs else f"{op.opcode}:{op.index}"


def computed_types_text() -> str:
    return ", ".join(sorted(COMPUTED_TYPES))


def per_channel_or_scalar(values, dtype=np.int32):
    """A per-channel table, or a Python int when every channel has the same value."""
    array = np.asarray(values)
    if array.size and np.all(array == array.reshape(-1)[0]):
        return int(array.reshape(-1)[0]) if np.issubdtype(array.dtype, np.integer) else float(array.reshape(-1)[0])
    return array.astype(dtype)


def i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)
