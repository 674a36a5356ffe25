"""Reads the public functions of a parsed MLIR module (before any lowering)."""

from __future__ import annotations

from iree.compiler import ir

from npukit.frontends.signature import EntryPoint, tensor_spec_from_mlir_type

_FUNCTION_OPS = ("func.func", "util.func")


class EntrySignatures:
    """Run at 'start': records each public function's tensor signature."""

    def __init__(self) -> None:
        self.entry_points: list[EntryPoint] = []

    def __call__(self, module: ir.Operation) -> None:
        entries: list[EntryPoint] = []
        for region in module.regions:
            for block in region.blocks:
                for op in block.operations:
                    op = op.operation
                    if op.name not in _FUNCTION_OPS or "function_type" not in op.attributes:
                        continue
                    visibility = op.attributes["sym_visibility"] if "sym_visibility" in op.attributes else None
                    if visibility is not None and ir.StringAttr(visibility).value != "public":
                        continue
                    ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                    entries.append(
                        EntryPoint(
                            name=ir.StringAttr(op.attributes["sym_name"]).value,
                            inputs=[s for s in map(_spec, ftype.inputs) if s],
                            outputs=[s for s in map(_spec, ftype.results) if s],
                        )
                    )
        self.entry_points = entries


def _spec(t: ir.Type):
    return tensor_spec_from_mlir_type(str(t))
