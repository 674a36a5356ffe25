"""Gives every ref operand of a branch its own value before vm-c emission.

IREE 3.13's vm-c emitter assigns each distinct ref operand of a ``vm.br`` or
``vm.cond_br`` edge to one block argument only: ``vm.br ^bb1(%a, %a)`` sets
the first argument's variable and leaves the second holding whatever it held
before (the ONNX NonMaxSuppression loop passes its fences and buffers so, and
then waits on a stale ref). Run on the VM module the emitter converts, this
replaces each repeated ref operand of an edge by a copy the emitter cannot
merge with it: ``vm.select.ref (vm.cmp.nz.ref %a), %a, null``, which is %a
(retained) whether %a is null or not. Repeats in ``vm.return`` are corrected
in the C instead (codegen/vm_c_ref_fix.py).
"""

from __future__ import annotations

from iree.compiler import ir


def _copy(value: ir.Value, before: ir.Operation) -> ir.Value:
    with ir.InsertionPoint(before), before.location:
        i32 = ir.IntegerType.get_signless(32)
        nz = ir.Operation.create("vm.cmp.nz.ref", results=[i32], operands=[value]).result
        null = ir.Operation.create("vm.const.ref.zero", results=[value.type]).result
        return ir.Operation.create("vm.select.ref", results=[value.type], operands=[nz, value, null]).result


def _edges(op: ir.Operation) -> list[range]:
    """The operand positions of each successor's arguments."""
    if op.name == "vm.br":
        return [range(0, len(op.operands))]
    true_count = len(op.successors[0].arguments)
    false_count = len(op.successors[1].arguments)
    return [range(1, 1 + true_count), range(1 + true_count, 1 + true_count + false_count)]


def copy_repeated_branch_refs(module: ir.Operation) -> int:
    """Rewrites |module|'s branches in place; returns how many operands were copied."""
    branches: list[ir.Operation] = []

    def visit(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    inner = child.operation
                    if inner.name in ("vm.br", "vm.cond_br"):
                        branches.append(inner)
                    elif inner.name in ("builtin.module", "vm.module", "vm.func", "vm.initializer"):
                        visit(inner)

    visit(module)
    copied = 0
    for branch in branches:
        for edge in _edges(branch):
            seen: dict[ir.Value, ir.Value] = {}  # a ref -> its latest copy on this edge
            for position in edge:
                value = branch.operands[position]
                if not str(value.type).startswith("!vm."):  # refs only: !vm.ref<...>, !vm.buffer, !vm.list<...>
                    continue
                if value in seen:
                    # Each copy is of the previous one, so that no two are alike.
                    copy = _copy(seen[value], branch)
                    seen[value] = copy
                    branch.operands[position] = copy
                    copied += 1
                else:
                    seen[value] = value
    return copied
