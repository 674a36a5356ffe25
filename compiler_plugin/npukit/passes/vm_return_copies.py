"""Which results of each VM function repeat an earlier-returned value.

Read from the module IREE hands to its vm-c emitter (the compile's final VM
dialect). IREE 3.13's emitter writes each distinct ref operand of a
``vm.return`` only to its last position, and its C does not say which
operand a result left unwritten had; this record does, and
codegen/vm_c_ref_fix.py writes those results from it.
"""

from __future__ import annotations

from iree.compiler import ir

#: C function name -> one entry per vm.return, in block order: result
#: position -> the last position returning the same value (only positions
#: that are repeated later).
ReturnCopies = dict[str, list[dict[int, int]]]


def _return_copies(operands: list[ir.Value]) -> dict[int, int]:
    copies: dict[int, int] = {}
    for j, value in enumerate(operands):
        last = max(k for k, other in enumerate(operands) if other == value)
        if last != j:
            copies[j] = last
    return copies


def vm_return_copies(module: ir.Operation) -> ReturnCopies:
    """The repeated results of every ``vm.return`` in |module|'s VM modules
    (keyed by the C names the vm-c emitter gives the functions)."""
    found: ReturnCopies = {}

    def visit(op: ir.Operation, module_name: str | None) -> None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    inner = child.operation
                    if inner.name == "vm.module":
                        visit(inner, ir.StringAttr(inner.attributes["sym_name"]).value)
                    elif inner.name == "builtin.module":
                        visit(inner, module_name)
                    elif inner.name == "vm.func" and module_name is not None:
                        name = f"{module_name}_{ir.StringAttr(inner.attributes['sym_name']).value}"
                        returns = [_return_copies(list(b.operations[len(b.operations) - 1].operands))
                                   for r in inner.regions for b in r.blocks
                                   if len(b.operations) and b.operations[len(b.operations) - 1].name == "vm.return"]
                        if any(returns):
                            found[name] = returns

    visit(module, None)
    return found
