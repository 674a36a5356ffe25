"""Removes the layer boundaries the TFLite frontend sets, once IREE has
formed its dispatches.

The frontend passes a quantized layer's output through a
``util.optimization_barrier`` marked ``npukit.layer_boundary`` when an
operator the layer recogniser does not read as an epilogue (LEAKY_RELU,
HARD_SWISH, LOGISTIC, MUL, ...) consumes it, so that IREE does not fuse that
operator into the layer's dispatch (frontends/tflite/contractions.py);
npukit.passes.quantized_handoffs sets the same mark at 'global-optimization'
on a layer's output read by a pool or a residual ADD. At 'flow' the
dispatches exist and the barriers have done their work; left in, they
would reach the inline execution model's buffer lowering, which has no
form for them. This pass, run at 'flow' in every compile, forwards each
marked barrier's operand to its users and erases it.
"""

from __future__ import annotations

from iree.compiler import ir

MARK = "npukit.layer_boundary"


class RemoveLayerBoundaries:
    def __init__(self) -> None:
        self.removed = 0

    def __call__(self, module: ir.Operation) -> None:
        found: list[ir.Operation] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "util.optimization_barrier" and MARK in op.attributes:
                found.append(op)
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        for op in found:
            for result, operand in zip(op.results, op.operands):
                result.replace_all_uses_with(operand)
            op.erase()
            self.removed += 1
