"""One executable per layer: undoes IREE's sharing of a contraction's
executable between layers whose constants differ.

IREE deduplicates equal executables after forming dispatches. Layers of the
same shape and arithmetic (MobileNet's repeated 14x14x512 blocks, a ResNet's
equal stages) then share one executable, and their weights, biases and
requantization parameters reach it through bindings whose offsets are known
only at run time. The NPU's streams and npukit's packed CPU kernels are built
from a layer's constants at compile time, so a shared executable is refused by
both ("a binding offset known only at run time") and runs in IREE's generic
code.

At the 'flow' boundary this pass gives each group of call sites that pass the
same constants its own copy of the executable (the first group keeps the
original). Each copy then has one set of constants and IREE folds its offsets
to compile-time values. Only executables that contain a contraction are
copied (the layers); call sites that pass equal constants (a layer applied
several times) keep sharing. The copies' names add ``_<n>`` to the
executable's name (``main_dispatch_14_1``, ``main_dispatch_14_1_conv_...``).
"""

from __future__ import annotations

from collections import defaultdict

from iree.compiler import ir

_CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul", "linalg.matvec", "linalg.conv_", "linalg.depthwise_conv_")


def _attrs(op: ir.Operation) -> dict[str, ir.Attribute]:
    return {op.attributes[i].name: op.attributes[i].attr for i in range(len(op.attributes))}


def _has_contraction(executable: ir.Operation) -> bool:
    found = False

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal found
        name = op.name
        if name.startswith(_CONTRACTIONS) or (
                name == "linalg.generic" and "reduction" in str(op.attributes["iterator_types"])):
            found = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    executable.walk(visit)
    return found


def _constant_key(dispatch: ir.Operation) -> tuple:
    """What identifies the constants a call site passes: the immutable globals
    it loads (by name) and inline constants (by value), in operand order."""
    key = []
    for position, value in enumerate(dispatch.operands):
        owner = value.owner
        if not isinstance(owner, ir.Operation) and hasattr(owner, "operation"):
            owner = owner.operation
        if not isinstance(owner, ir.Operation):
            continue
        if owner.name == "util.global.load" and "is_immutable" in _attrs(owner):
            key.append((position, ir.FlatSymbolRefAttr(owner.attributes["global"]).value))
        elif owner.name in ("arith.constant", "flow.tensor.constant"):
            key.append((position, str(owner.attributes["value"])))
    return tuple(key)


class SeparateLayerExecutables:
    """The hook (run at 'flow'); ``copies`` counts the executables it added."""

    def __init__(self) -> None:
        self.copies = 0

    def __call__(self, module: ir.Operation) -> None:
        body = module.regions[0].blocks[0]
        executables = {ir.StringAttr(op.operation.attributes["sym_name"]).value: op.operation
                       for op in body.operations if op.operation.name == "flow.executable"}
        sites: dict[str, dict[tuple, list[ir.Operation]]] = defaultdict(lambda: defaultdict(list))

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "flow.dispatch":
                refs = list(ir.ArrayAttr(op.attributes["entry_points"]))
                if len(refs) == 1:
                    executable = str(refs[0]).split("::", 1)[0].lstrip("@")
                    sites[executable][_constant_key(op)].append(op)
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        taken = set(executables)
        for name, groups in sites.items():
            if len(groups) < 2 or name not in executables or not _has_contraction(executables[name]):
                continue
            original = anchor = executables[name]
            for n, group in enumerate(list(groups.values())[1:], start=1):
                copy_name = f"{name}_{n}"
                while copy_name in taken:
                    copy_name += "_"
                taken.add(copy_name)
                with original.context:
                    anchor = self._copy(original, anchor, copy_name, group)
                self.copies += 1

    @staticmethod
    def _copy(original: ir.Operation, after: ir.Operation, copy_name: str,
              dispatches: list[ir.Operation]) -> ir.Operation:
        """``original`` copied as ``copy_name`` after ``after``; ``dispatches`` call the copy."""
        name = ir.StringAttr(original.attributes["sym_name"]).value
        copy = original.clone(ip=ir.InsertionPoint(original))
        copy.move_after(after)
        copy.attributes["sym_name"] = ir.StringAttr.get(copy_name)
        renamed: dict[str, str] = {}

        def new_name(old: str) -> str:
            if old not in renamed:
                renamed[old] = copy_name + old[len(name):] if old.startswith(name) else f"{old}_{copy_name}"
            return renamed[old]

        for op in copy.regions[0].blocks[0].operations:
            op = op.operation
            if op.name == "flow.executable.export":
                op.attributes["sym_name"] = ir.StringAttr.get(new_name(ir.StringAttr(op.attributes["sym_name"]).value))
                function = ir.FlatSymbolRefAttr(op.attributes["function_ref"]).value
                op.attributes["function_ref"] = ir.FlatSymbolRefAttr.get(new_name(function))

        def rename_functions(op: ir.Operation) -> ir.WalkResult:
            if op.name == "func.func":
                old = ir.StringAttr(op.attributes["sym_name"]).value
                if old in renamed:
                    op.attributes["sym_name"] = ir.StringAttr.get(renamed[old])
            return ir.WalkResult.ADVANCE

        copy.walk(rename_functions)
        for dispatch in dispatches:
            refs = []
            for ref in ir.ArrayAttr(dispatch.attributes["entry_points"]):
                export = str(ref).rsplit("::@", 1)[-1]
                refs.append(ir.SymbolRefAttr.get([copy_name, renamed.get(export, export)]))
            dispatch.attributes["entry_points"] = ir.ArrayAttr.get(refs)
        return copy
