"""Chooses how IREE's stream partitioning schedules a board program, by the
size of the transient slab each choice gives.

With the inline execution model the program runs one operation after the
other, so the concurrency IREE's default partitioning plans for buys nothing
on a board, while it can lengthen buffer lifetimes: a fill of the next padded
feature map scheduled beside the layer before it keeps both alive at once.
IREE's serial partitioning (``#stream.partitioning_config<"debug">``: one
operation per partition) avoids that but can make IREE's greedy slab layout
worse for other programs. So at 'flow' this pass compiles the module to
'stream' both ways (the stream phase only, a few seconds) and keeps the
partitioning whose exported function allocates fewer bytes; a trial that
fails leaves IREE's default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from iree.compiler import ir

from npukit.passes.buffer_allocations import BufferAllocations

#: The module attribute IREE's stream partitioning reads.
ATTRIBUTE = "stream.partitioning"
SERIAL = '#stream.partitioning_config<"debug">'

#: Compiles a module from 'flow' to 'stream' and returns the result.
ToStream = Callable[[ir.Operation], ir.Operation]


def allocated_bytes(module: ir.Operation) -> int | None:
    """Bytes the exported function allocates per run, or None when that cannot be read."""
    listing = BufferAllocations()
    listing(module)
    if listing.program.refused:
        return None
    return sum(a.bytes for a in listing.program.allocations)


@dataclass
class SlabPartitioning:
    to_stream: ToStream
    # What the trials found, for the manifest: {"default": bytes, "serial": bytes, "chosen": ...}.
    report: dict = field(default_factory=dict)

    def __call__(self, module: ir.Operation) -> None:
        if ATTRIBUTE in module.attributes:
            return  # the user chose
        sizes: dict[str, int | None] = {}
        for name in ("default", "serial"):
            trial = module.clone()
            if name == "serial":
                trial.attributes[ATTRIBUTE] = ir.Attribute.parse(SERIAL, module.context)
            try:
                sizes[name] = allocated_bytes(self.to_stream(trial))
            except Exception:  # a trial IREE refuses: that partitioning is not taken
                sizes[name] = None
        chosen = "default"
        if sizes["serial"] is not None and sizes["default"] is not None and sizes["serial"] < sizes["default"]:
            chosen = "serial"
            module.attributes[ATTRIBUTE] = ir.Attribute.parse(SERIAL, module.context)
        self.report = {**sizes, "chosen": chosen}
