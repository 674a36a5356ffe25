"""Variable tensors (an LSTM's output and cell state, an SVDF's activation
state) as mutable globals of the module.

TFLite keeps a variable tensor across ``invoke()`` calls: each call starts
from the state the previous one left, and allocating the interpreter's
tensors resets it (int8 tensors to their zero point, every other type to
0). Here each variable tensor becomes a ``util.global`` with that reset
value: the function loads it where the operator reads its state and stores
the new state back, so every call of the compiled function continues from
the last one, and loading the module again starts afresh.
"""

from __future__ import annotations

import numpy as np

from npukit.frontends.tflite.flatbuffer_reader import Tensor
from npukit.frontends.tflite.lowering import LoweringContext
from npukit.frontends.tflite.mlir_builder import Value

_NUMPY = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "float32": np.float32}


def state_tensor(ctx: LoweringContext, position: int, what: str) -> Tensor:
    """The operator's variable input at ``position``, checked."""
    t = ctx.input(position)
    if t is None:
        raise ctx.fail(f"the {what} (input {position}) is missing")
    if not t.is_variable:
        raise ctx.unsupported(f"a {what} that is not a variable tensor")
    if t.data is not None:
        raise ctx.unsupported(f"a {what} with initial data in the file")
    if t.index in ctx.graph.inputs or t.index in ctx.graph.outputs:
        raise ctx.unsupported(f"a {what} that is also a model input or output")
    if t.dtype not in _NUMPY:
        raise ctx.unsupported(f"a {t.dtype} {what}")
    return t


def _global_name(t: Tensor) -> str:
    return f"state_{t.index}"


def reset_value(t: Tensor) -> np.ndarray:
    """What TFLite resets the variable tensor to: its zero point for int8, else 0."""
    fill = t.quantization.zero_point if t.dtype == "int8" and t.quantization is not None else 0
    return np.full(t.shape, fill, _NUMPY[t.dtype])


def load_state(ctx: LoweringContext, t: Tensor) -> Value:
    """The state's value where the operator reads it (the global is made on first use)."""
    name = _global_name(t)
    if name not in ctx.state:
        ctx.builder.state_global(name, reset_value(t), t.dtype)
        ctx.state.append(name)
    return ctx.builder.load_global(name)


def store_state(ctx: LoweringContext, t: Tensor, value: Value) -> None:
    """The operator's new state, kept for the next call."""
    if tuple(value.shape) != t.shape:
        value = ctx.builder.reshape(value, t.shape)
    ctx.builder.store_global(_global_name(t), value)
