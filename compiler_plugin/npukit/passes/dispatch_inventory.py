"""Lists the dispatches IREE formed, for the manifest and the reports.

Run at 'stream': every dispatch is then a ``stream.executable`` with its
``stream.executable.export`` entry point and the linalg operations of its body.
This is the last boundary before HAL materialisation in both execution models
(with ``inline-dynamic``, IREE's phases from 'executable-sources' on all happen
in one step), so it is the common place to see dispatches.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from iree.compiler import ir

from npukit.passes.mac_count import linalg_macs


@dataclass
class DispatchInfo:
    name: str
    executable: str
    # The linalg operations in the dispatch body, in order.
    ops: list[str] = field(default_factory=list)
    # Multiply-accumulates of one execution (see mac_count.py).
    macs: int = 0
    # How many times one inference runs it: IREE gives layers of the same
    # shape one executable, called with different offsets.
    calls: int = 1

    def to_json(self) -> dict:
        return asdict(self)


def _symbol(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _body_ops(executable: ir.Operation) -> tuple[list[str], int]:
    ops: list[str] = []
    macs = 0

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal macs
        if op.name.startswith("linalg.") and op.name != "linalg.yield":
            ops.append(op.name)
            macs += linalg_macs(op)
        return ir.WalkResult.ADVANCE

    executable.walk(visit)
    return ops, macs


class DispatchInventory:
    """Collects DispatchInfo records; read ``.dispatches`` after the compile."""

    def __init__(self) -> None:
        self.dispatches: list[DispatchInfo] = []

    def __call__(self, module: ir.Operation) -> None:
        found: list[DispatchInfo] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "stream.executable":
                body, macs = _body_ops(op)
                for inner in op.regions[0].blocks[0].operations:
                    if inner.operation.name == "stream.executable.export":
                        found.append(DispatchInfo(_symbol(inner.operation), _symbol(op), body, macs))
                return ir.WalkResult.SKIP
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        calls = dispatch_calls(module)
        for info in found:
            info.calls = calls.get(info.name, 1)
        self.dispatches = found


def dispatch_calls(module: ir.Operation) -> dict[str, int]:
    """Export name -> the number of dispatch operations in the program that
    call it (at 'stream': ``stream.cmd.dispatch`` or ``stream.async.dispatch``)."""
    counts: dict[str, int] = {}

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "stream.executable":
            return ir.WalkResult.SKIP
        if op.name in ("stream.cmd.dispatch", "stream.async.dispatch"):
            for ref in ir.ArrayAttr(op.attributes["entry_points"]):
                name = str(ref).rsplit("::", 1)[-1].lstrip("@").strip('"')
                counts[name] = counts.get(name, 0) + 1
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return counts
