"""Drops the constants no dispatch reads any more from the model's constant pool.

IREE packs a model's constants into one pool (a ``#util.composite`` that an
initializer stores into a global) before npukit's passes see the dispatches.
Once the tuned CPU pipeline has given a layer's dispatch a call to the layer
kernels (its weights in the layer's parameter block, in the layout the
kernel reads) or the mynpu lowering has put the layer in an NPU command
stream (its weights packed there), the dispatch no longer reads its
constants from the pool; left there, they would be a second copy of every
weight in flash.

This pass runs at 'stream' after those passes. For each pool it finds the
bytes some dispatch still reads: every binding of the pool in a
``stream.cmd.dispatch``, followed into the executable to its
``stream.binding.subspan`` ops at compile-time offsets. It keeps the
composite's elements that hold those bytes (a run of adjacent kept elements
moves as a whole, by a multiple of 64 bytes, so every alignment the code
relies on still holds) and rewrites the composite, the pool's size where
the initializer and the dispatches name it, and the moved subspans' offsets.
A pool used in any way it does not follow (bound at an offset, copied, a
subspan at a run-time offset, a dynamic shape) stays whole, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from iree.compiler import ir

from npukit.layer_recognition.constant_pool import ConstantPool, constant_pools, sources
from npukit.layer_recognition.dispatch_ir import UnreadableDispatch, constant_int
from npukit.passes.resource_bindings import DispatchBinding, Unfollowed, dispatch_binding, dispatch_functions, \
    index_constant, move_subspan, segment_of

_ALIGNMENT = 64  # a moved run keeps its offset modulo this
_CONSTANT_TYPES = ("!stream.resource<constant>", "!util.buffer", "!stream.file")
# What an initializer does with the pool's buffer on its way into the global (IREE 3.13):
# map it, or allocate and read it from a file, await, and store it.
_INITIALIZER_OPS = {"util.buffer.constant", "stream.resource.try_map", "stream.resource.alloc", "stream.file.constant",
                    "stream.file.read", "stream.timepoint.await", "util.optimization_barrier", "util.global.store",
                    "cf.br", "cf.cond_br"}


@dataclass
class PoolReport:
    """One pool: its size before and after, or why it stayed whole."""

    name: str
    bytes_before: int
    bytes_after: int
    reason: str = ""

    def to_json(self) -> dict:
        out = {"global": self.name, "bytes": self.bytes_before, "kept": self.bytes_after}
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass
class _Entry:
    """An execution region the pool enters: the position of the pool's size
    among its operands, and the dispatch bindings of the pool inside it."""

    execute: ir.Operation
    size_operand: int
    bindings: list[DispatchBinding] = field(default_factory=list)


class DropUnreadConstants:
    """The 'stream' hook; ``pools`` reports what it did to each pool."""

    def __init__(self) -> None:
        self.pools: list[PoolReport] = []

    def __call__(self, module: ir.Operation) -> None:
        functions = dispatch_functions(module)
        for pool in constant_pools(module):
            size = pool.size
            try:
                kept = _compact(module, pool, functions)
            except Unfollowed as e:
                self.pools.append(PoolReport(pool.global_name, size, size, str(e)))
                continue
            self.pools.append(PoolReport(pool.global_name, size, kept))

    def summary(self) -> list[dict]:
        return [p.to_json() for p in self.pools]


def _pool_uses(module: ir.Operation, pool: ConstantPool, functions: dict[str, ir.Operation]) -> list[_Entry]:
    """Every execution region the pool enters, with its dispatch bindings."""
    loads: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "util.global.load" and ir.FlatSymbolRefAttr(op.attributes["global"]).value == pool.global_name:
            loads.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    entries: list[_Entry] = []
    for load in loads:
        for use in load.result.uses:
            execute = use.owner
            if execute.name != "stream.cmd.execute":
                raise Unfollowed(f"the pool is used by {execute.name}")
            segments, s, j = segment_of(execute, use.operand_number)
            if s != 0 or constant_int(execute.operands[segments[1][j]]) != pool.size:
                raise Unfollowed("the pool enters an execution region at an unknown size")
            entry = _Entry(execute, segments[1][j])
            for inner in execute.regions[0].blocks[0].arguments[j].uses:
                binding = dispatch_binding(inner.owner, inner.operand_number, functions)
                if not binding.binds_whole(pool.size):
                    raise Unfollowed("a dispatch binds part of the pool")
                entry.bindings.append(binding)
            entries.append(entry)
    return entries


def _kept_layout(pool: ConstantPool, ranges: list[tuple[int, int]]) -> tuple[list[str], list[tuple[int, int, int]]]:
    """The new composite's elements and the moves (old start, old end, new
    start) of the runs of adjacent elements that hold read bytes."""
    try:
        sizes = pool.element_sizes()
    except (ValueError, UnreadableDispatch) as e:
        raise Unfollowed(f"an element of the pool npukit cannot lay out ({e})") from None
    if sum(sizes) != pool.size:
        raise Unfollowed(f"a pool of {pool.size} bytes whose elements hold {sum(sizes)}")
    starts = [0, *np.cumsum(sizes).tolist()]
    read = [any(a < starts[i + 1] and b > starts[i] for a, b in ranges) for i in range(len(sizes))]
    texts: list[str] = []
    moves: list[tuple[int, int, int]] = []
    at = i = 0
    while i < len(sizes):
        if not read[i]:
            i += 1
            continue
        first = i
        while i < len(sizes) and read[i]:
            i += 1
        old, end = starts[first], starts[i]
        new = at + (old - at) % _ALIGNMENT
        if new > at:
            texts.append(f"dense<0> : vector<{new - at}xi8>")
        texts += pool.elements[first:i]
        moves.append((old, end, new))
        at = new + end - old
    return texts, moves


def _compact(module: ir.Operation, pool: ConstantPool, functions: dict[str, ir.Operation]) -> int:
    """Rewrites the pool to the elements still read; returns its new size."""
    _check_initializer(pool)
    entries = _pool_uses(module, pool, functions)
    reads = [sub for e in entries for b in e.bindings for sub in b.subspans]
    texts, moves = _kept_layout(pool, [(sub.start, sub.end) for sub in reads])
    if moves == [(0, pool.size, 0)]:
        return pool.size
    new_size = moves[-1][2] + moves[-1][1] - moves[-1][0] if moves else 0
    if new_size == 0:  # nothing read: one byte keeps the resource a valid one
        texts, new_size = ["dense<0> : vector<1xi8>"], 1
    for sub in reads:
        old, _, new = next(m for m in moves if m[0] <= sub.start and sub.end <= m[1])
        move_subspan(sub, sub.start - old + new)
    for entry in entries:
        size_value = index_constant(entry.execute, new_size)
        entry.execute.operands[entry.size_operand] = size_value
        for binding in entry.bindings:
            for p in (binding.size_operand, binding.length_operand):
                binding.dispatch.operands[p] = size_value
    _resize_initializer(pool, new_size)
    pool.constant_op.attributes["value"] = ir.Attribute.parse(
        f"#util.composite<{new_size}xi8, [{', '.join(texts)}]>", module.context)
    return new_size


def _check_initializer(pool: ConstantPool) -> None:
    """Unfollowed if the initializer uses a constant resource, buffer or
    file in any other way than moving the pool into its global (a copy into
    a variable's initial value would read bytes no dispatch binding shows)."""
    others: list[str] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name not in _INITIALIZER_OPS and any(
                str(v.type) in _CONSTANT_TYPES and any(o == pool.constant_op for o, _ in sources(v))
                for v in op.operands):
            others.append(op.name)
        return ir.WalkResult.ADVANCE

    pool.initializer.walk(visit)  # (an exception cannot leave a walk's callback)
    if others:
        raise Unfollowed(f"the initializer uses the pool in {others[0]}")


def _resize_initializer(pool: ConstantPool, new_size: int) -> None:
    """The pool's size where its initializer names it: every operand equal
    to the old size of an op that handles the pool's buffer, file or
    resource on its way into the global (the same initializer may fill other
    constant resources, of any size: their ops keep theirs). An await names
    each awaited resource's size: only the pool's changes."""
    path = sources(pool.store.operands[0])
    size_value = index_constant(pool.constant_op, new_size)
    # The constant goes after the buffer constant (some initializers define their sizes after it).
    size_value.owner.move_after(pool.constant_op)
    for op, result in path:
        types = [str(v.type) for v in (*op.operands, *op.results)]
        if not any(t in _CONSTANT_TYPES for t in types):
            continue
        if op.name == "stream.timepoint.await":  # (sources follows one of its results)
            operands = [len(op.results) + result]
        else:
            operands = range(len(op.operands))
        for i in operands:
            operand = op.operands[i]
            if str(operand.type) == "index" and constant_int(operand) == pool.size:
                op.operands[i] = size_value
