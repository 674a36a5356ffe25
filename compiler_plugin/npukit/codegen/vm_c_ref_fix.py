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


# A function definition of the module: its name and parameters after the
# stack, module and module state.
_FUNCTION_DEFINITION = re.compile(
    r"^static iree_status_t ([A-Za-z_][\w$]*)\(iree_vm_stack_t\* v1, struct \w+_t\* v2, struct \w+_state_t\* v3"
    r"((?:, [^,()]+)*)\) \{$"
)
_MOVE = re.compile(r"^(\s*)iree_vm_ref_move\((v\d+), (v\d+)\);\s*$")
_RELEASE = re.compile(r"^\s*iree_vm_ref_release\((v\d+)\);\s*$")
_OK_STATUS = re.compile(r"^\s*(v\d+) = iree_ok_status\(\);\s*$")


class DuplicateResultError(ValueError):
    """A function returns refs in an order the vm-c output cannot be corrected for."""


def _result_parameters(parameters: list[tuple[str, str]], released: set[str]) -> list[str]:
    """The trailing result parameters: pointers a return does not release
    (arguments are values, or ref pointers that every return releases)."""
    results: list[str] = []
    for type_, name in reversed(parameters):
        if not type_.endswith("*") or name in released:
            break
        results.append(name)
    return results[::-1]


def _copy_sources(missing: list[int], recorded: list[dict[int, int]]) -> dict[int, int] | None:
    """Result position -> the position it repeats, from the compile's record
    of the function's returns (those that repeat exactly |missing|); None
    when the record does not settle it."""
    matching = [copies for copies in recorded if sorted(copies) == missing]
    if matching and all(m == matching[0] for m in matching):
        return matching[0]
    return None


def _complete_return(name: str, lines: list[str], ok_at: int, parameters: list[tuple[str, str]],
                     recorded: list[dict[int, int]], inserts: dict[int, list[str]]) -> int:
    """Completes the successful return whose ``vN = iree_ok_status();`` is at
    line |ok_at|; returns the number of results it now writes."""
    j = ok_at - 1
    released: set[str] = set()
    while j >= 0 and (m := _RELEASE.match(lines[j])):
        released.add(m.group(1))
        j -= 1
    names = {n for _, n in parameters}
    moved_to: dict[str, tuple[int, str]] = {}  # result -> (line, temporary)
    while j >= 0 and (m := _MOVE.match(lines[j])) and m.group(3) in names:
        moved_to[m.group(3)] = (j, m.group(2))
        j -= 1
    if not moved_to:
        return 0
    results = _result_parameters(parameters, released)
    is_ref = {n: t == "iree_vm_ref_t*" for t, n in parameters}
    missing = [k for k, r in enumerate(results) if is_ref[r] and r not in moved_to]
    if not missing:
        return 0
    sources = _copy_sources(missing, recorded)
    for k in missing:
        if sources is not None:
            later = {moved_to[results[sources[k]]][1]} if results[sources[k]] in moved_to else set()
        else:
            later = {moved_to[r][1] for r in results[k + 1:] if r in moved_to}
        if len(later) != 1:
            raise DuplicateResultError(
                f"{name}: ref result {k} is not written by IREE's vm-c output and "
                f"{'no' if not later else 'more than one'} later result could be its value")
        src = later.pop()
        at = min(line for line, temporary in moved_to.values() if temporary == src)
        indent = _MOVE.match(lines[at]).group(1)
        inserts.setdefault(at, []).append(f"{indent}iree_vm_ref_retain({src}, {results[k]});")
    return len(missing)


def complete_duplicate_ref_results(source: str,
                                   return_copies: dict[str, list[dict[int, int]]] | None = None) -> tuple[str, int]:
    """(fixed source, number of results now written).

    IREE 3.13's vm-c emitter writes each distinct ref operand of a
    ``vm.return`` once, to the result position of its last occurrence:
    ``vm.return %a, %a, %a`` sets only the third result and leaves the first
    two as they were (a zero-size split returns one empty view three times;
    the emitter also uses result pointers as scratch registers, so what is
    left there is any ref). Such a result is a copy of a ref written at a
    later position; where exactly one distinct ref is written after it, that
    is its value, and it is retained into the result before that ref's own
    move. Where two or more are (``vm.return %a, %b, %a``), the C does not
    say which one it was: |return_copies| (npukit.passes.vm_return_copies,
    read from the module the emitter converted) does, and without it
    DuplicateResultError is raised instead of guessing.
    """
    return_copies = return_copies or {}
    lines = source.split("\n")
    inserts: dict[int, list[str]] = {}
    written = 0
    name, parameters = None, []
    for i, line in enumerate(lines):
        definition = _FUNCTION_DEFINITION.match(line)
        if definition:
            name = definition.group(1)
            parameters = [tuple(p.strip().rsplit(" ", 1)) for p in definition.group(2).split(",")[1:]]
            continue
        if line == "}":
            name, parameters = None, []
            continue
        ok = _OK_STATUS.match(line)
        if name and ok and i + 1 < len(lines) and lines[i + 1].strip() == f"return {ok.group(1)};":
            written += _complete_return(name, lines, i, parameters, return_copies.get(name, []), inserts)
    if not inserts:
        return source, 0
    out: list[str] = []
    for n, line in enumerate(lines):
        out.extend(inserts.get(n, ()))
        out.append(line)
    return "\n".join(out), written
