"""The compile-time memory plan: every buffer an invocation allocates gets a
fixed offset in one block whose size the generated header states
(``<NAME>_ARENA_SIZE``), so the runtime places buffers without a heap and
without searching.

Buffers, in the order the runtime allocates them: inputs a runtime copies
(allocated once, on the first run, and kept; generated models bind their
inputs where the caller has them, so they have none), then the exported
function's allocations (npukit.passes.buffer_allocations: IREE's slab of
transients, each result), again on every run. Each lives over an interval of
that order: inputs throughout; an allocation from its place to the end of the
run (the runtime releases them when the function returns or, for results,
when the next run starts). Placement is greedy by size, as TFLite Micro's and TVM's planners
do: the largest buffer first, each at the lowest 64-byte aligned offset where
it overlaps no buffer whose interval it shares.

A program with state (mutable globals: IREE's ``variable`` allocations, as
a model with resource variables makes) allocates each run a new buffer for
the state's next value and keeps it in its global past the run's end, while
the next run still reads it and allocates the one after: two generations
are alive at once. Its plan lists two runs' allocations, which the runtime
takes in turn (its entries wrap around after the last), with every state
buffer alive throughout, so the two generations never share bytes and the
other buffers of both runs share theirs as one run's do.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

ALIGNMENT = 64
MAX_BUFFERS = 64  # NPUKIT_BUFFER_PLAN_MAX_ENTRIES in hal_driver/include/npukit/hal/buffer_plan.h
VARIABLE = "variable"  # IREE's stream lifetime of a buffer a mutable global holds


def _align(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


@dataclass(frozen=True)
class PlannedBuffer:
    role: str  # "input 0", "transient", "external", ...
    bytes: int
    offset: int
    first: int  # interval in allocation order, inclusive
    last: int


@dataclass(frozen=True)
class MemoryPlan:
    function: str
    buffers: list[PlannedBuffer]  # in allocation order
    persistent_count: int

    @property
    def arena_size(self) -> int:
        """Bytes from the block's start to the last planned byte."""
        return max((b.offset + b.bytes for b in self.buffers), default=0)

    def to_json(self) -> dict:
        return {"function": self.function, "arena_size": self.arena_size, "persistent_count": self.persistent_count,
                "alignment": ALIGNMENT, "buffers": [asdict(b) for b in self.buffers]}

    @staticmethod
    def from_json(d: dict) -> "MemoryPlan":
        return MemoryPlan(d["function"], [PlannedBuffer(**b) for b in d["buffers"]], d["persistent_count"])


def place(sizes: list[int], intervals: list[tuple[int, int]]) -> list[int]:
    """Offsets for buffers of |sizes| live over |intervals|: greedy by size."""
    offsets = [0] * len(sizes)
    placed: list[int] = []
    for i in sorted(range(len(sizes)), key=lambda k: (-sizes[k], k)):
        first, last = intervals[i]
        conflicts = sorted((offsets[j], offsets[j] + _align(sizes[j])) for j in placed
                           if intervals[j][0] <= last and first <= intervals[j][1])
        offset = 0
        for start, end in conflicts:
            if offset + _align(sizes[i]) <= start:
                break
            offset = max(offset, end)
        offsets[i] = offset
        placed.append(i)
    return offsets


def plan_memory(function: str, input_bytes: list[int], allocations: list[tuple[int, str]]) -> MemoryPlan:
    """The plan for |input_bytes| (inputs, in order) and |allocations|
    ((bytes, lifetime) of the function's buffers, in order)."""
    runs = 2 if any(lifetime == VARIABLE for _, lifetime in allocations) else 1
    repeated = list(allocations) * runs
    sizes = list(input_bytes) + [b for b, _ in repeated]
    if len(sizes) > MAX_BUFFERS:
        raise ValueError(f"{len(sizes)} buffers{' (two runs of a program with state)' if runs > 1 else ''}; "
                         f"the runtime's plans hold at most {MAX_BUFFERS}")
    end = len(sizes) - 1
    intervals = [(0, end)] * len(input_bytes)
    for run in range(runs):
        run_end = len(input_bytes) + (run + 1) * len(allocations) - 1
        for k, (_, lifetime) in enumerate(allocations):
            first = len(input_bytes) + run * len(allocations) + k
            # A state buffer outlives its run (its global holds it until the next run replaces it).
            intervals.append((0, end) if lifetime == VARIABLE else (first, run_end))
    offsets = place(sizes, intervals)
    roles = [f"input {i}" for i in range(len(input_bytes))] + [lifetime for _, lifetime in repeated]
    buffers = [PlannedBuffer(r, s, o, f, la) for r, s, o, (f, la) in zip(roles, sizes, offsets, intervals)]
    return MemoryPlan(function, buffers, len(input_bytes))
