"""Leaves no CPU code for the dispatches the NPU runs (inline-dynamic only).

With ``inline-dynamic`` the ``mynpu-v1`` variant is the device's only target
(npukit.passes.mynpu_partition): the CPU code IREE compiles into it runs only
the exports the NPU does not, so an NPU dispatch's CPU body is dead code, and
on a board its tuned kernels' constants (weights widened for the DSP
instructions) would be a second copy of the weights the NPU's executable
holds packed. This pass, at 'stream' after partitioning and before the CPU
passes, empties those bodies: the export stays (the executable's export
table is the same on both sides) with a function that returns at once and one
workgroup. With the async model the CPU variant beside the mynpu one is the
stock runtime's fallback and keeps every dispatch, so the pass is not run.
"""

from __future__ import annotations

from iree.compiler import ir

from npukit.errors import CompileError


def _symbol(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _ops(block: ir.Block) -> list[ir.Operation]:
    return [op.operation for op in block.operations]


class EmptyNpuDispatches:
    """``dispatches`` names the exports the NPU runs; ``emptied`` lists the
    ones whose CPU body was removed."""

    def __init__(self, dispatches) -> None:
        self.dispatches = dispatches
        self.emptied: list[str] = []

    def __call__(self, module: ir.Operation) -> None:
        names = set(self.dispatches())
        for op in _ops(module.regions[0].blocks[0]):
            if op.name != "stream.executable":
                continue
            exports = [o for o in _ops(op.regions[0].blocks[0]) if o.name == "stream.executable.export"]
            if len(exports) != 1 or _symbol(exports[0]) not in names:
                continue
            self._empty(op, exports[0])

    def _empty(self, executable: ir.Operation, export: ir.Operation) -> None:
        name = _symbol(export)
        inner = next((o for o in _ops(executable.regions[0].blocks[0]) if o.name == "builtin.module"), None)
        functions = [] if inner is None else [o for o in _ops(inner.regions[0].blocks[0])
                                               if o.name == "func.func" and _symbol(o) == name]
        if len(functions) != 1:
            raise CompileError(f"the NPU dispatch {name} has no function of its name to empty")
        body = functions[0].regions[0].blocks[0]
        for op in reversed(_ops(body)[:-1]):
            op.erase()
        with executable.context, ir.Location.unknown():
            count = export.regions[0].blocks[0]
            for op in reversed(_ops(count)):
                op.erase()
            with ir.InsertionPoint(count):
                index = ir.IndexType.get()
                one = ir.Operation.create("arith.constant", results=[index],
                                          attributes={"value": ir.IntegerAttr.get(index, 1)}).result
                ir.Operation.create("stream.return", operands=[one, one, one])
        self.emptied.append(name)
