"""Balances reference counts across internal calls in IREE 3.13's vm-c output.

IREE's EmitC lowering passes each ref operand of a call to a function of the
same module as a borrowed copy (``iree_vm_ref_assign`` into a fresh
variable), while every function releases its ref arguments on return, as it
must for calls from outside the module, whose export shims retain them. An
internal call therefore drops one reference per ref argument: the async
execution model's synchronous wrapper loses its fence and its input views
that way and then uses them, a use after free. IREE's own runtime runs the
same code, so the fault is in the generated C, and it is fixed here: the
fresh copy an internal call receives is retained instead of borrowed, and the
callee's release balances it.
"""

from __future__ import annotations

import re

# Functions of the module itself: (stack, module, module state, ...).
_INTERNAL_FUNCTION = re.compile(
    r"^static iree_status_t ([A-Za-z_][\w$]*)\(iree_vm_stack_t\* v1, struct \w+_t\* v2, struct \w+_state_t\* v3\b",
    re.M,
)
_CALL = re.compile(r"^\s*v\d+ = ([A-Za-z_][\w$]*)\((.*)\);\s*$")
_ASSIGN = re.compile(r"^(\s*)iree_vm_ref_assign\((v\d+), (v\d+)\);\s*$")
# What IREE emits between a call and the preparation of its operands.
_OPERAND_PREPARATION = re.compile(
    r"^\s*(;|v\d+ = &v\d+;|v\d+ = sizeof\(iree_vm_ref_t\);|memset\(v\d+, 0, v\d+\);"
    r"|iree_vm_ref_assign\(v\d+, v\d+\);)\s*$"
)


def retain_internal_call_arguments(source: str) -> tuple[str, int]:
    """(fixed source, number of call arguments now retained)."""
    internal = set(_INTERNAL_FUNCTION.findall(source))
    lines = source.split("\n")
    fixed = 0
    for i, line in enumerate(lines):
        call = _CALL.match(line)
        if not call or call.group(1) not in internal:
            continue
        arguments = {a.strip() for a in call.group(2).split(",")}
        j = i - 1
        while j >= 0 and _OPERAND_PREPARATION.match(lines[j]):
            assign = _ASSIGN.match(lines[j])
            if assign and assign.group(3) in arguments:
                indent, src, dst = assign.groups()
                lines[j] = f"{indent}iree_vm_ref_retain({src}, {dst});"
                fixed += 1
            j -= 1
    return "\n".join(lines), fixed
