"""Following a stream resource into the dispatches that read and write it.

At 'stream' a resource reaches a dispatch as one of its bindings
(``stream.cmd.dispatch``: resources, their sizes, offsets and lengths), and
the executable's function takes each binding as a ``!stream.binding``
argument whose ``stream.binding.subspan`` ops read tensors at byte offsets.
The passes that move bytes inside a resource (npukit.passes.unread_constants,
npukit.passes.transient_packing) find those offsets here and rewrite them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from iree.compiler import ir

from npukit.layer_recognition.dispatch_ir import DTYPES, constant_int

_TENSOR = re.compile(r"tensor<((?:\d+x)*)(\w+)>")


class Unfollowed(Exception):
    """A resource is used in a way these helpers do not follow (the message says how)."""


@dataclass(frozen=True)
class Subspan:
    """A tensor a function reads or writes through a binding: its bytes
    [start, end) from the binding's start and its access ('readonly',
    'writeonly' or 'readwrite')."""

    op: ir.Operation
    start: int
    end: int
    access: str


def dispatch_functions(module: ir.Operation) -> dict[str, ir.Operation]:
    """'executable::export' -> the export's function in its stream.executable."""
    found: dict[str, ir.Operation] = {}
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name != "stream.executable":
            continue
        executable = ir.StringAttr(op.attributes["sym_name"]).value
        for inner in op.regions[0].blocks[0].operations:
            if inner.operation.name != "builtin.module":
                continue
            for fn in inner.operation.regions[0].blocks[0].operations:
                if fn.operation.name == "func.func":
                    found[f"{executable}::{ir.StringAttr(fn.operation.attributes['sym_name']).value}"] = fn.operation
    return found


def segment_of(op: ir.Operation, position: int) -> tuple[list[range], int, int]:
    """(the operand segments, the segment holding operand ``position``, the index in it)."""
    counts = [int(v) for v in ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])]
    starts = np.cumsum([0, *counts])
    segments = [range(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]
    for s, segment in enumerate(segments):
        if position in segment:
            return segments, s, position - segment.start
    raise Unfollowed(f"{op.name} operand {position} outside its segments")


@dataclass(frozen=True)
class DispatchBinding:
    """Binding ``index`` of a dispatch: the operand positions of the
    resource's size, the binding's offset and length, and the subspans of
    every function the dispatch may run."""

    dispatch: ir.Operation
    index: int
    size_operand: int
    offset_operand: int
    length_operand: int
    subspans: tuple[Subspan, ...]

    def symbols(self) -> list[str]:
        return entry_symbols(self.dispatch)

    def binds_whole(self, size: int) -> bool:
        """Whether the binding is all of a resource of ``size`` bytes (offset 0, that size and length)."""
        operands = self.dispatch.operands
        return constant_int(operands[self.offset_operand]) == 0 and all(
            constant_int(operands[p]) == size for p in (self.size_operand, self.length_operand))


def entry_symbols(dispatch: ir.Operation) -> list[str]:
    return [str(ref).lstrip("@").replace("::@", "::") for ref in ir.ArrayAttr(dispatch.attributes["entry_points"])]


def dispatch_binding(dispatch: ir.Operation, position: int, functions: dict[str, ir.Operation]) -> DispatchBinding:
    """The binding whose resource is operand ``position`` of ``dispatch``."""
    if dispatch.name != "stream.cmd.dispatch":
        raise Unfollowed(f"the resource is used by {dispatch.name}")
    segments, s, j = segment_of(dispatch, position)
    if len(segments) < s + 4:
        raise Unfollowed("a dispatch with operands in an unknown order")
    subspans: list[Subspan] = []
    for symbol in entry_symbols(dispatch):
        fn = functions.get(symbol)
        if fn is None:
            raise Unfollowed(f"no function for {symbol}")
        arguments = [a for a in fn.regions[0].blocks[0].arguments if str(a.type) == "!stream.binding"]
        for use in arguments[j].uses:
            if use.owner.name != "stream.binding.subspan":
                raise Unfollowed(f"{symbol} uses its binding in {use.owner.name}")
            subspans.append(subspan_of(use.owner))
    return DispatchBinding(dispatch, j, segments[s + 1][j], segments[s + 2][j], segments[s + 3][j], tuple(subspans))


def subspan_of(op: ir.Operation) -> Subspan:
    """The bytes and access of a ``stream.binding.subspan`` at a compile-time offset."""
    start = constant_int(op.operands[1]) if len(op.operands) == 2 else None
    type_text = str(op.result.type)
    found = _TENSOR.search(type_text)
    if start is None or found is None or found[2] not in DTYPES:
        raise Unfollowed(f"a subspan at a run-time offset or of a dynamic type ({type_text})")
    dims = [int(d) for d in found[1].split("x") if d]
    access = next((a for a in ("readonly", "writeonly", "readwrite") if f"<{a}:" in type_text), "readwrite")
    return Subspan(op, start, start + int(np.prod(dims, dtype=np.int64)) * np.dtype(DTYPES[found[2]]).itemsize, access)


def index_constant(before: ir.Operation, value: int) -> ir.Value:
    """A new ``arith.constant value : index`` just before ``before``."""
    with before.location, ir.InsertionPoint(before):
        index = ir.IndexType.get()
        return ir.Operation.create("arith.constant", results=[index],
                                   attributes={"value": ir.IntegerAttr.get(index, value)}).result


def move_subspan(subspan: Subspan, new_start: int) -> None:
    """Points ``subspan`` at ``new_start`` bytes into its binding."""
    if new_start != subspan.start:
        subspan.op.operands[1] = index_constant(subspan.op, new_start)
