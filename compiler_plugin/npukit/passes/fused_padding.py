"""Input padding inside the layers' dispatches instead of padded copies.

IREE pads a convolution's input in a copy of its own (a fill with the pad
value and a copy of the input into its interior) unless
``--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops``
moves the ``tensor.pad`` into the convolution's dispatch; the padded copy,
live beside the tensor it copies, then no longer takes memory. npukit's
layer kernels read such padding themselves (the PAD_* words of
cpu/kernels/s8_layer.h), but IREE 3.13's own CPU code generation crashes on
some dispatches with a padding inside (a depthwise convolution's, in
ConvTileAndDecomposeExpert), so the flag is only kept where no such
dispatch is left to IREE: ``CheckFusedPadding`` runs at 'stream' after the
tuned pipeline's passes and stops the compile with ``PaddingLeftToIree``
when some dispatch that IREE still generates code for has a ``tensor.pad``;
the compile is then repeated without the flag (npukit.compile_model).
"""

from __future__ import annotations

from iree.compiler import ir

FUSE_PADDING_FLAG = "--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops"
# The name the compile looks for in a failed job's message (the exception crosses IREE's pass hooks as text).
PADDING_LEFT = "PaddingLeftToIree"


class PaddingLeftToIree(Exception):
    """Dispatches with a padding inside that IREE's code generation would get."""


def padded_dispatches(module: ir.Operation) -> list[str]:
    """The executables whose code IREE generates that have a ``tensor.pad`` inside."""
    found: list[str] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name != "stream.executable":
            return ir.WalkResult.ADVANCE
        name = ir.StringAttr(op.attributes["sym_name"]).value
        pads: list[ir.Operation] = []

        def inner(o: ir.Operation) -> ir.WalkResult:
            if o.name == "tensor.pad":
                pads.append(o)
                return ir.WalkResult.INTERRUPT
            return ir.WalkResult.ADVANCE

        op.walk(inner)
        if pads:
            found.append(name)
        return ir.WalkResult.SKIP

    module.walk(visit)
    return found


class CheckFusedPadding:
    """Raises PaddingLeftToIree when a padded dispatch is left to IREE's code."""

    def __call__(self, module: ir.Module | ir.Operation) -> None:
        op = module.operation if isinstance(module, ir.Module) else module
        left = padded_dispatches(op)
        if left:
            raise PaddingLeftToIree(f"{PADDING_LEFT}: {len(left)} dispatch(es) with an input padding inside are "
                                    f"left to IREE's code ({', '.join(left[:4])}{', ...' if len(left) > 4 else ''})")
