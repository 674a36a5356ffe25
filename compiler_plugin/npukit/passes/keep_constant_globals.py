"""Keeps the model's constants in inline-dynamic modules (an IREE 3.13 bug).

With ``--iree-execution-model=inline-dynamic`` IREE 3.13 converts the global
that holds a model's packed constants (weights, biases, scales) into a
``!util.buffer`` stored from a ``util.buffer.constant`` in an initializer.
``iree-util-fold-globals`` then drops that store without giving the global an
initial value, so every dispatch binds a null buffer in place of the weights
and the module computes garbage (or faults).

The fix, run at 'stream': the value stored into each constant resource global
passes through ``util.optimization_barrier``, which folding cannot see through.
The constants then become a ``vm.rodata`` that ``__init`` stores into the
global: the weights are read in place, from flash on a board.
"""

from __future__ import annotations

from iree.compiler import ir

_CONSTANT_RESOURCE = "!stream.resource<constant>"


class KeepConstantGlobals:
    def __init__(self) -> None:
        self.protected = 0

    def __call__(self, module: ir.Operation) -> None:
        stores: list[ir.Operation] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "util.global.store" and str(op.operands[0].type) == _CONSTANT_RESOURCE:
                parent = op.parent
                while parent is not None and parent.name not in ("util.initializer", "builtin.module"):
                    parent = parent.parent
                if parent is not None and parent.name == "util.initializer":
                    stores.append(op)
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        for store in stores:
            value = store.operands[0]
            if value.owner is not None and getattr(value.owner, "name", "") == "util.optimization_barrier":
                continue
            with store.location, ir.InsertionPoint(store):
                barrier = ir.Operation.create("util.optimization_barrier", results=[value.type], operands=[value])
            store.operands[0] = barrier.result
            self.protected += 1
