"""Operators whose inputs are all constants, computed at import.

Models exported with float16 weights store each weight as a float16
constant and DEQUANTIZE it to float32 before the layer; models with sparse
weights store them sparse and DENSIFY them first (the reader has already
made a sparse constant dense: sparse_tensors.py). Both are computations on
constants: the operator is dropped and its output becomes a constant, so
the layers read their weights as constants, as they do in any other model.
float16 to float32 is exact. A DENSIFY or a float16 DEQUANTIZE of a tensor
an operator computes is left to the lowerings, which refuse it by name.

Keras and TensorFlow exports also compute shapes at run time: a SHAPE of a
tensor, sliced, packed with constant sizes and given to a RESHAPE (a
``Reshape`` layer after a ``Dense`` one). npukit compiles static shapes
(the reader gives a dynamic dimension its size), so a SHAPE is the
tensor's shape, a constant, and the integer operators that compute on
such constants are computed here too, exactly as TFLite's kernels do:
SHAPE, STRIDED_SLICE, SLICE, PACK, CONCATENATION, GATHER, RESHAPE,
SQUEEZE, EXPAND_DIMS, CAST, ADD, SUB, MUL, FLOOR_DIV (int32, as in
TFLite), MAXIMUM, MINIMUM, REDUCE_PROD, FILL and RANGE, on int32 / int64
tensors of at most
``SHAPE_VALUES`` values without quantization or a fused activation. An
operator outside that space (a float or quantized tensor, an ellipsis
mask, a negative stride, a division by zero, an index out of range) is
left to the lowerings, which compute or refuse it by name.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from npukit.frontends.tflite.flatbuffer_reader import Operator, Tensor, TfliteGraph
from npukit.frontends.tflite.lowering import LoweringContext, lowers
from npukit.frontends.tflite.shape_operators import strided_slice_window

# The largest integer result computed at import (shape computations are a handful of values).
SHAPE_VALUES = 4096
_INTEGERS = {"int32": np.int32, "int64": np.int64}


def _weights(op: Operator, tensors: list[Tensor]) -> np.ndarray | None:
    """A DENSIFY or float16 DEQUANTIZE of a constant weight."""
    if len(op.inputs) != 1 or len(op.outputs) != 1 or op.inputs[0] < 0:
        return None
    x, y = tensors[op.inputs[0]], tensors[op.outputs[0]]
    if x.data is None or x.shape != y.shape:
        return None
    if op.opcode == "DENSIFY" and x.dtype == y.dtype:
        return x.data.copy()
    if op.opcode == "DEQUANTIZE" and x.dtype == "float16" and y.dtype == "float32":
        return x.data.astype(np.float32)
    return None


def _ints(values: np.ndarray) -> list[int]:
    return [int(v) for v in values.reshape(-1)]


def _axis(axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} of a rank-{rank} tensor")
    return axis % rank


def _strided_slice(op: Operator, x: np.ndarray, begin, end, strides) -> np.ndarray:
    if op.option("ellipsis_mask", 0) or op.option("new_axis_mask", 0):
        raise ValueError("an ellipsis or new axis mask")
    offsets, sizes, steps = strided_slice_window(op, x.shape, _ints(begin), _ints(end), _ints(strides))
    return x[tuple(slice(o, o + n * s, s) for o, n, s in zip(offsets, sizes, steps))]


def _slice(op: Operator, x: np.ndarray, begin, size) -> np.ndarray:
    begin, size = _ints(begin), _ints(size)
    if len(begin) != x.ndim or len(size) != x.ndim:
        raise ValueError("slice bounds of another rank than the input")
    size = [n - b if s == -1 else s for n, b, s in zip(x.shape, begin, size)]
    if any(b < 0 or s < 0 or b + s > n for n, b, s in zip(x.shape, begin, size)):
        raise ValueError("slice bounds outside the input")
    return x[tuple(slice(b, b + s) for b, s in zip(begin, size))]


def _gather(op: Operator, x: np.ndarray, indices) -> np.ndarray:
    if op.option("batch_dims", 0):
        raise ValueError("batch dimensions")
    axis = _axis(int(op.option("axis", 0)), x.ndim)
    if np.any(indices < 0) or np.any(indices >= x.shape[axis]):
        raise ValueError("an index out of range")
    return np.take(x, indices, axis=axis)


def _floor_div(op: Operator, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.any(b == 0):
        raise ValueError("a division by zero")
    return np.floor_divide(a, b)


def _reduce_prod(op: Operator, x: np.ndarray, axes) -> np.ndarray:
    axes = tuple(sorted({_axis(a, x.ndim) for a in _ints(axes)}))
    return np.prod(x, axis=axes, keepdims=bool(op.option("keep_dims", False)))


def _range(op: Operator, start, limit, delta) -> np.ndarray:
    start, limit, delta = (int(v.reshape(-1)[0]) for v in (start, limit, delta))
    if delta == 0:
        raise ValueError("a delta of 0")
    return np.arange(start, limit, delta)


# Integer operators computed at import: the result from the inputs' values (in order).
_INTEGER_OPERATORS: dict[str, Callable[..., np.ndarray]] = {
    "STRIDED_SLICE": _strided_slice,
    "SLICE": _slice,
    "PACK": lambda op, *xs: np.stack(xs, axis=_axis(int(op.option("axis", 0)), xs[0].ndim + 1)),
    "CONCATENATION": lambda op, *xs: np.concatenate(xs, axis=_axis(int(op.option("axis", 0)), xs[0].ndim)),
    "GATHER": _gather,
    "RESHAPE": lambda op, x, *shape: x,
    "SQUEEZE": lambda op, x: x,
    "EXPAND_DIMS": lambda op, x, axis: x,
    "CAST": lambda op, x: x,
    "ADD": lambda op, a, b: a + b,
    "SUB": lambda op, a, b: a - b,
    "MUL": lambda op, a, b: a * b,
    "FLOOR_DIV": _floor_div,
    "MAXIMUM": lambda op, a, b: np.maximum(a, b),
    "MINIMUM": lambda op, a, b: np.minimum(a, b),
    "REDUCE_PROD": _reduce_prod,
    "FILL": lambda op, dims, value: np.full(_ints(dims), value.reshape(-1)[0]),
    "RANGE": _range,
}


def _shape_computation(op: Operator, tensors: list[Tensor]) -> np.ndarray | None:
    """The value of an integer operator on constants (or a SHAPE), as TFLite computes it."""
    if len(op.outputs) != 1:
        return None
    y = tensors[op.outputs[0]]
    if y.dtype not in _INTEGERS or y.quantization is not None or y.elements > SHAPE_VALUES:
        return None
    inputs = [tensors[i] for i in op.inputs if i >= 0]
    if op.opcode == "SHAPE":
        if len(inputs) != 1:
            return None
        result = np.array(inputs[0].shape, np.int64)
    else:
        compute = _INTEGER_OPERATORS.get(op.opcode)
        if compute is None or op.options.get("fused_activation_function", 0):
            return None
        if any(t.data is None or t.dtype not in _INTEGERS or t.quantization is not None for t in inputs):
            return None
        if op.opcode not in ("CAST", "FILL", "RANGE") and inputs[0].dtype != y.dtype:
            return None
        if op.opcode == "FLOOR_DIV" and y.dtype != "int32":
            return None  # TFLite's FLOOR_DIV has no int64 kernel
        try:
            result = np.asarray(compute(op, *(t.data.astype(np.int64) for t in inputs)))
        except (ValueError, IndexError):
            return None
    if result.size != y.elements:
        return None
    return result.reshape(y.shape).astype(_INTEGERS[y.dtype])


def _folded(op: Operator, tensors: list[Tensor]) -> np.ndarray | None:
    """The constant output of ``op``, or None when it is not computed at import."""
    data = _weights(op, tensors)
    return data if data is not None else _shape_computation(op, tensors)


def fold_constant_operators(graph: TfliteGraph) -> int:
    """Computes such operators into constants (in the graph's order, so a result feeds the next)
    and drops them from ``graph``; returns how many."""
    kept = []
    for op in graph.operators:
        data = _folded(op, graph.tensors)
        if data is None:
            kept.append(op)
            continue
        graph.tensors[op.outputs[0]].data = data
    folded = len(graph.operators) - len(kept)
    graph.operators = kept
    return folded


@lowers("DENSIFY")
def densify(ctx: LoweringContext, op: Operator) -> None:
    """Reached only when the input is not a constant: folded operators never get here."""
    raise ctx.unsupported("a DENSIFY of a tensor computed at run time",
                          supported="of a constant (computed at import)")
