"""Packs each execution's transient slab by the order its commands run in.

IREE's stream allocation packs an execution's transient tensors into one
slab, with lifetimes taken from the execution's schedule: the commands of a
``stream.cmd.concurrent`` region count as running at once, so a padded
buffer that IREE fills beside the dispatch still reading the previous one
cannot take its place (kws_int8: a 32,896-byte slab for activations whose
largest live set is 20,096 bytes with the padding). With the inline
execution model the commands run one after the other in the order they are
written, concurrent regions included: the vm-c code calls them in that order.

This pass, at 'stream' before the NPU's and the kernels' passes read the
dispatches, re-places the slab's buffers with lifetimes in that order:

- every command's bytes of the slab: a fill's or a copy's range, and each
  dispatch binding's ``stream.binding.subspan`` tensors (the dispatch binds
  the whole slab; each executable is dispatched once);
- a buffer is a byte range from a command that writes all of it (a fill, a
  copy's target, a write-only subspan) to the last command that uses it
  before the next such write; buffers whose bytes and lifetimes overlap move
  together (a window of a padded tensor, a view), and so does every command
  with the commands that last wrote the bytes it reads: a tensor assembled
  by several writes (a concatenation whose parts are copied in, as a
  streaming model's state window and its new frames are) and read whole
  keeps its parts where the reader finds them, alive from the first write;
- placement is greedy by size (npukit.codegen.memory_plan.place), each
  group keeping its offset modulo 64;
- the slab's size, the fills', copies' and subspans' offsets are rewritten.

A slab used in any way this does not follow keeps IREE's packing, with the
reason (``summary()``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import groupby
from typing import Callable

from iree.compiler import ir

from npukit.codegen.memory_plan import ALIGNMENT, place
from npukit.layer_recognition.dispatch_ir import constant_int
from npukit.passes.resource_bindings import Unfollowed, dispatch_binding, dispatch_functions, entry_symbols, \
    index_constant, move_subspan, segment_of

_TRANSIENT = "!stream.resource<transient>"
# Commands that neither read nor write the slab's bytes.
_NO_BYTES = ("stream.cmd.discard", "stream.cmd.flush", "stream.cmd.invalidate")


@dataclass
class _Use:
    """One command's bytes [start, end) of the slab; ``writes_all``: it
    overwrites them all; ``move(new, old)`` moves it with its group from
    offset ``old`` to ``new``."""

    index: int
    start: int
    end: int
    writes_all: bool
    move: Callable[[int, int], None]


@dataclass
class _Buffer:
    start: int
    end: int
    first: int
    last: int
    uses: list[_Use] = field(default_factory=list)


class PackTransients:
    """The 'stream' hook (inline execution only); ``slabs`` says what it did."""

    def __init__(self) -> None:
        self.slabs: list[dict] = []

    def __call__(self, module: ir.Operation) -> None:
        functions = dispatch_functions(module)
        sites: dict[str, int] = {}
        allocas: list[ir.Operation] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "stream.cmd.dispatch":
                for symbol in entry_symbols(op):
                    sites[symbol] = sites.get(symbol, 0) + 1
            elif op.name == "stream.resource.alloca" and str(op.results[0].type) == _TRANSIENT:
                allocas.append(op)
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        for alloca in allocas:
            size = constant_int(alloca.operands[0])
            try:
                if size is None:
                    raise Unfollowed("a slab of a size known only at run time")
                packed = _pack(alloca, size, functions, sites, _other_allocation_sizes(alloca))
            except Unfollowed as e:
                self.slabs.append({"bytes": size, "packed": size, "reason": str(e)})
                continue
            self.slabs.append({"bytes": size, "packed": packed})

    def summary(self) -> list[dict]:
        return self.slabs


def _commands(region_op: ir.Operation) -> list[ir.Operation]:
    """The commands of an execution region in the order they run (nested
    concurrent and serial regions in place)."""
    found: list[ir.Operation] = []
    for region in region_op.regions:
        for block in region.blocks:
            for op in block.operations:
                op = op.operation
                if op.name in ("stream.cmd.concurrent", "stream.cmd.serial"):
                    found += _commands(op)
                else:
                    found.append(op)
    return found


def _operand_mover(op: ir.Operation, position: int, anchor: ir.Operation) -> Callable[[int, int], None]:
    """Moves the offset operand ``position`` of ``op`` (a new constant before ``anchor``)."""
    def move(new: int, old: int) -> None:
        if new != old:
            op.operands[position] = index_constant(anchor, constant_int(op.operands[position]) + new - old)
    return move


def _uses(execute: ir.Operation, slab: ir.Value, size: int, functions, sites,
          sizes: list[tuple[ir.Operation, int]]) -> list[_Use]:
    """The commands' uses of the slab; ``sizes`` receives the operands that
    name its size (op, position)."""
    uses: list[_Use] = []
    for index, op in enumerate(_commands(execute)):
        positions = [i for i, v in enumerate(op.operands) if v == slab]
        if not positions:
            continue
        if op.name in _NO_BYTES:
            continue
        if op.name == "stream.cmd.fill":  # target, target size, offset, length, value
            start, length = constant_int(op.operands[2]), constant_int(op.operands[3])
            if start is None or length is None:
                raise Unfollowed("a fill at a run-time offset")
            uses.append(_Use(index, start, start + length, True, _operand_mover(op, 2, execute)))
            sizes.append((op, 1))
        elif op.name == "stream.cmd.copy":  # source, size, offset, target, size, offset, length
            length = constant_int(op.operands[6])
            for position in positions:
                at = 2 if position == 0 else 5
                start = constant_int(op.operands[at])
                if start is None or length is None:
                    raise Unfollowed("a copy at a run-time offset")
                uses.append(_Use(index, start, start + length, position == 3, _operand_mover(op, at, execute)))
                sizes.append((op, position + 1))
        elif op.name == "stream.cmd.dispatch":
            for position in positions:
                binding = dispatch_binding(op, position, functions)
                if any(sites.get(s, 0) != 1 for s in binding.symbols()):
                    raise Unfollowed("an executable dispatched from more than one place")
                if not binding.binds_whole(size):
                    raise Unfollowed("a dispatch binds part of the slab")
                sizes += [(op, binding.size_operand), (op, binding.length_operand)]
                for sub in binding.subspans:
                    uses.append(_Use(index, sub.start, sub.end, sub.access == "writeonly",
                                     lambda new, old, sub=sub: move_subspan(sub, sub.start + new - old)))
        else:
            raise Unfollowed(f"the slab is used by {op.name}")
    return uses


def _buffers(uses: list[_Use]) -> list[_Buffer]:
    """Byte ranges over their lifetimes, a new one at each write of all of a range."""
    buffers: list[_Buffer] = []
    current: dict[tuple[int, int], _Buffer] = {}
    for use in uses:
        key = (use.start, use.end)
        buffer = current.get(key)
        if buffer is None or (use.writes_all and use.index > buffer.last):
            buffer = _Buffer(use.start, use.end, use.index, use.index)
            current[key] = buffer
            buffers.append(buffer)
        buffer.last = max(buffer.last, use.index)
        buffer.uses.append(use)
    return buffers


def _groups(buffers: list[_Buffer]) -> list[list[_Buffer]]:
    """Buffers that must keep their places relative to each other, together
    (union-find): those whose bytes and lifetimes overlap, and each command's
    buffer with the buffers of the commands that last wrote the bytes it
    reads (its reaching writes)."""
    parent = list(range(len(buffers)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(buffers):
        for j in range(i):
            b = buffers[j]
            if a.start < b.end and b.start < a.end and a.first <= b.last and b.first <= a.last:
                parent[root(i)] = root(j)
    for i, j in _reaching_writes(buffers):
        parent[root(i)] = root(j)
    groups: dict[int, list[_Buffer]] = {}
    for i, buffer in enumerate(buffers):
        groups.setdefault(root(i), []).append(buffer)
    return list(groups.values())


def _reaching_writes(buffers: list[_Buffer]) -> list[tuple[int, int]]:
    """(reader, writer) pairs of buffer indices: for each command's use that
    may read (all but full writes), the buffers whose uses last wrote any
    byte of its range before that command. A use that is not a full write is
    then counted as the bytes' last writer too (it may write them, as a
    read-write subspan does; were it only a read, its buffer is joined with
    the writers' anyway). Byte ranges are followed exactly, whatever their
    sizes: a read of a tensor written in parts reaches every part."""
    uses = sorted(((use.index, n, use) for n, b in enumerate(buffers) for use in b.uses), key=lambda u: u[0])
    writers: list[tuple[int, int, int]] = []  # disjoint (start, end, buffer) ranges, the last write of each byte
    pairs: list[tuple[int, int]] = []

    def write(start: int, end: int, owner: int) -> None:
        kept: list[tuple[int, int, int]] = []
        for s, e, o in writers:
            if e <= start or end <= s:
                kept.append((s, e, o))
                continue
            if s < start:
                kept.append((s, start, o))
            if end < e:
                kept.append((end, e, o))
        kept.append((start, end, owner))
        writers[:] = kept

    for _, grouped in groupby(uses, key=lambda u: u[0]):
        command = list(grouped)
        # Reads first: a command reads what the commands before it wrote, never its own writes.
        for _, n, use in command:
            if not use.writes_all:
                pairs += [(n, o) for s, e, o in writers if s < use.end and use.start < e and o != n]
        for _, n, use in command:
            write(use.start, use.end, n)
    return pairs


def _other_allocation_sizes(alloca: ir.Operation) -> set[int]:
    """The constant sizes of the other allocations in ``alloca``'s function."""
    sizes: set[int] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "stream.resource.alloca" and op != alloca:
            value = constant_int(op.operands[0])
            if value is not None:
                sizes.add(value)
        return ir.WalkResult.ADVANCE

    function = alloca.parent
    while function is not None and function.name not in ("util.func", "func.func"):
        function = function.parent
    (function or alloca).walk(visit)
    return sizes


def _distinct_size(size: int, taken: set[int]) -> int:
    """``size``, or the next multiple of the alignment above it that no
    other allocation of the function has. With the inline execution model
    IREE turns each allocation into a ``hal_inline.buffer.allocate`` of its
    size, and two of the same size are then merged into one buffer although
    both are live (an external result and a slab of equal size shared their
    bytes); a distinct size keeps them apart."""
    while size in taken:
        size += ALIGNMENT - size % ALIGNMENT if size % ALIGNMENT else ALIGNMENT
    return size


def _pack(alloca: ir.Operation, size: int, functions, sites, taken: set[int]) -> int:
    slab = alloca.results[0]
    executes = [u.owner for u in slab.uses if u.owner.name == "stream.cmd.execute"]
    others = {u.owner.name for u in slab.uses} - {"stream.cmd.execute", "stream.resource.dealloca"}
    if len(executes) != 1 or others:
        raise Unfollowed("a slab used by more than one execution region or outside one")
    execute = executes[0]
    position = next(u.operand_number for u in slab.uses if u.owner == execute)
    segments, s, j = segment_of(execute, position)
    if s != 0:
        raise Unfollowed("a slab in an unknown operand of its execution region")
    sizes = [(execute, segments[1][j])] + [(u.owner, 1) for u in slab.uses
                                            if u.owner.name == "stream.resource.dealloca"]
    uses = _uses(execute, execute.regions[0].blocks[0].arguments[j], size, functions, sites, sizes)
    groups = _groups(_buffers(uses))
    starts = [min(b.start for b in g) for g in groups]
    extents = [max(b.end for b in g) - start + start % ALIGNMENT for g, start in zip(groups, starts)]
    intervals = [(min(b.first for b in g), max(b.last for b in g)) for g in groups]
    placed = place(extents, intervals)
    new_starts = [p + start % ALIGNMENT for p, start in zip(placed, starts)]
    new_size = _distinct_size(max((p + e for p, e in zip(placed, extents)), default=0), taken)
    if not groups or new_size >= size:
        # IREE's own packing kept; its size too, unless another allocation has it.
        new_size, moves = _distinct_size(size, taken), False
        if new_size == size:
            return size
    else:
        moves = True
    if any(constant_int(op.operands[at]) != size for op, at in sizes):
        raise Unfollowed("a command names the slab at another size")
    if moves:
        for group, old, new in zip(groups, starts, new_starts):
            for buffer in group:
                for use in buffer.uses:
                    use.move(new, old)
    value = index_constant(alloca, new_size)
    alloca.operands[0] = value
    for op, at in sizes:
        op.operands[at] = value
    return new_size
