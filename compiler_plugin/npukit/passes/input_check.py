"""Rejects operations from dialects IREE does not know, before anything runs.

IREE's sessions accept unregistered dialects when parsing, and such an
operation then crashes the compiler much later (in dispatch formation). This
check, run at 'start', names the operation and its location instead.
"""

from __future__ import annotations

from iree.compiler import ir

from npukit.errors import CompileError


class RejectUnknownOperations:
    def __call__(self, module: ir.Operation) -> None:
        context = module.context
        known: dict[str, bool] = {}
        unknown: list[tuple[str, str]] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            dialect = op.name.split(".", 1)[0]
            if dialect not in known:
                try:
                    context.get_dialect_descriptor(dialect)
                    known[dialect] = True
                except ValueError:
                    known[dialect] = False
            if not known[dialect]:
                unknown.append((op.name, str(op.location)))
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        if unknown:
            name, loc = unknown[0]
            more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
            raise CompileError(
                f"operation '{name}' at {loc} belongs to dialect '{name.split('.')[0]}', which IREE 3.13 "
                f"does not know{more}; lower it to a supported dialect (linalg, tosa, stablehlo, torch) first"
            )
