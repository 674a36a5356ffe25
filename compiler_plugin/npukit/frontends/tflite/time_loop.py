"""A recurrent operator's loop over time steps, and the slices it reads and
writes at each step.

By default the steps are an ``scf.for`` that carries the state tensors (and
the output being filled) from one step to the next: the step's code is
emitted once, whatever the sequence length, and IREE turns the loop into a
loop of the host program around the step's dispatches. ``unroll`` emits the
step once per time step instead, with constant offsets
(benchmarks/recurrent_time_loop.py compares the two).
"""

from __future__ import annotations

from typing import Callable, Sequence, Union

from iree.compiler import ir
from iree.compiler.dialects import arith, scf, tensor

from npukit.frontends.tflite.mlir_builder import ModuleBuilder, Value, tensor_type

Step = Union[int, ir.Value]  # a constant time step, or the loop's index

_DYNAMIC = -(1 << 63)  # ShapedType's dynamic offset marker


def time_loop(builder: ModuleBuilder, steps: int, carried: Sequence[Value],
              body: Callable[[Step, list[Value]], list[Value]], unroll: bool = False) -> list[Value]:
    """``body(t, values)`` for t = 0 .. steps - 1, each step given the values
    the previous one returned (the first ``carried``); the last step's values."""
    values = list(carried)
    if unroll:
        for t in range(steps):
            values = body(t, values)
        return values
    index = ir.IndexType.get()
    constant = lambda v: arith.ConstantOp(index, ir.IntegerAttr.get(index, v)).result  # noqa: E731
    loop = scf.ForOp(constant(0), constant(steps), constant(1), [v.value for v in values])
    with ir.InsertionPoint(loop.body):
        inner = [Value(a, v.shape, v.dtype) for a, v in zip(loop.inner_iter_args, values)]
        results = body(loop.induction_variable, inner)
        for got, want in zip(results, values):
            if got.shape != want.shape or got.dtype != want.dtype:
                raise ValueError(f"a time step returned {got.dtype}{list(got.shape)} for {want.dtype}"
                                 f"{list(want.shape)}")
        scf.YieldOp([r.value for r in results])
    return [Value(r, v.shape, v.dtype) for r, v in zip(loop.results, values)]


def _offsets(rank: int, axis: int, t: Step) -> tuple[list[ir.Value], list[int]]:
    static = [0] * rank
    if isinstance(t, int):
        static[axis] = t
        return [], static
    static[axis] = _DYNAMIC
    return [t], static


def take_step(builder: ModuleBuilder, value: Value, axis: int, t: Step) -> Value:
    """``value`` at index ``t`` of dimension ``axis``, that dimension dropped."""
    sizes = list(value.shape)
    sizes[axis] = 1
    dynamic, static = _offsets(value.rank, axis, t)
    result = tensor.ExtractSliceOp(tensor_type(sizes, value.dtype), value.value, dynamic, [], [],
                                   ir.DenseI64ArrayAttr.get(static), ir.DenseI64ArrayAttr.get(sizes),
                                   ir.DenseI64ArrayAttr.get([1] * value.rank)).result
    shape = value.shape[:axis] + value.shape[axis + 1:]
    return builder.reshape(Value(result, sizes, value.dtype), shape)


def put_step(builder: ModuleBuilder, into: Value, part: Value, axis: int, t: Step) -> Value:
    """``into`` with ``part`` written at index ``t`` of dimension ``axis``."""
    sizes = list(into.shape)
    sizes[axis] = 1
    part = builder.reshape(part, sizes)
    dynamic, static = _offsets(into.rank, axis, t)
    result = tensor.InsertSliceOp(part.value, into.value, dynamic, [], [], ir.DenseI64ArrayAttr.get(static),
                                  ir.DenseI64ArrayAttr.get(sizes), ir.DenseI64ArrayAttr.get([1] * into.rank)).result
    return Value(result, into.shape, into.dtype)
