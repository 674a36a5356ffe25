"""Turns yieldable calls between a module's own functions into plain calls,
for vm-c output (IREE 3.13's EmitC lowering cannot convert them).

With the async execution model a program that reads device results on the
host (a shape computation, a quantization parameter) waits on a fence inside
its ``$async`` function, which makes that function yieldable and the
synchronous wrapper's call to it a ``vm.call.yieldable``. IREE 3.13's vm-c
emitter accepts yieldable calls only to imports: it reports "callee must be
an import for yieldable call" and then does not terminate.

Generated C cannot suspend a call anyway, and npukit's runtime completes
``hal.fence.await`` before returning, so a yieldable call to an internal
function always returns at once. The pass, run at the 'vm' phase of vm-c
compiles, replaces each with ``vm.call`` followed by a branch to the resume
block with the results: the same program without the suspension point.
"""

from __future__ import annotations

from iree.compiler import ir


class UnyieldInternalCalls:
    def __init__(self) -> None:
        self.rewritten = 0

    def __call__(self, module: ir.Operation) -> None:
        internal: set[str] = set()
        calls: list[ir.Operation] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "vm.func":
                internal.add(ir.StringAttr(op.attributes["sym_name"]).value)
            elif op.name == "vm.call.yieldable":
                calls.append(op)
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        for call in calls:
            callee = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
            if callee not in internal:
                continue
            resume = call.successors[0]
            result_types = [a.type for a in resume.arguments]
            with call.location, ir.InsertionPoint(call):
                plain = ir.Operation.create(
                    "vm.call",
                    results=result_types,
                    operands=list(call.operands),
                    attributes={"callee": call.attributes["callee"]},
                )
                ir.Operation.create("vm.br", operands=list(plain.results), successors=[resume])
            call.erase()
            self.rewritten += 1
