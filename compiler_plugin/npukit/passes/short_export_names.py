"""Short export names for the code a board carries.

IREE names each dispatch's export after the function and what it computes
("main$async_dispatch_12_conv_2d_nhwc_hwcf_1x48x48x16x3x3x8_i8xi8xi32xi32",
40 to 60 bytes). At run time the name is a key: IREE 3.13's vm-c program
looks each export up by it (``hal_loader.executable.lookup.function`` and
``hal.executable.lookup.function`` take the name as a string), so the
program holds it and the executable's library holds it in its export table,
and a mynpu-v1 executable finds its NPU exports by its hash. A firmware
therefore carries every name at least once (the module's and the library's
copies merge, codegen/vm_c_strings.py), about 45 B per dispatch:
mobilenet_v2_mult_s's 28 exports took 1,289 B.

``ShortExportNames`` runs last at the 'stream' boundary, after every pass
that keys its records by IREE's names (the inventory, the NPU's
partitioning, the layer kernels), and renames each export and its function
``d0``, ``d1``, ... in the order of the module, with the dispatches that call
them. Everything IREE generates from there on (the library's export table,
the program's strings, the function symbols) and the mynpu-v1 executable
(``MynpuTarget`` names its exports through ``short``) use the short names;
``long`` (short -> IREE's name) goes into the manifest
(``export_names``), where the profile, tuning and reports read the long
names back (npukit.manifest.long_export_names).
"""

from __future__ import annotations

import re

from iree.compiler import ir

#: The short names, and what a short name looks like (the stack analysis
#: recognises dispatch functions by it: npukit.stack.indirect_calls).
SHORT_NAME_PATTERN = r"^d\d+$"
_SHORT_NAME = re.compile(SHORT_NAME_PATTERN)
_DISPATCH_OPS = ("stream.cmd.dispatch", "stream.async.dispatch")


def short_name(ordinal: int) -> str:
    return f"d{ordinal}"


def is_short_name(name: str) -> bool:
    return bool(_SHORT_NAME.match(name))


def _name(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


class ShortExportNames:
    """The hook (last at 'stream'). After it, ``short`` maps each of IREE's
    export names to its short name and ``long`` the other way."""

    def __init__(self) -> None:
        self.short: dict[str, str] = {}
        self.long: dict[str, str] = {}

    def __call__(self, module: ir.Operation) -> None:
        executables = [op.operation for op in module.regions[0].blocks[0].operations
                       if op.operation.name == "stream.executable"]
        taken = self._function_names(executables)
        renamed: dict[tuple[str, str], str] = {}  # (executable, export) -> short name
        ordinal = 0
        for executable in executables:
            for op in executable.regions[0].blocks[0].operations:
                op = op.operation
                if op.name != "stream.executable.export":
                    continue
                old = _name(op)
                if old in self.short:
                    raise ValueError(f"two executables export {old}")
                while short_name(ordinal) in taken:
                    ordinal += 1
                new = short_name(ordinal)
                ordinal += 1
                function = ir.FlatSymbolRefAttr(op.attributes["function_ref"]).value
                if function != old:
                    raise ValueError(f"export {old} names function {function}: IREE's exports are named after "
                                     "their functions")
                with module.context:
                    op.attributes["sym_name"] = ir.StringAttr.get(new)
                    op.attributes["function_ref"] = ir.FlatSymbolRefAttr.get(new)
                self._rename_function(executable, old, new)
                renamed[(_name(executable), old)] = new
                self.short[old], self.long[new] = new, old
        self._rename_calls(module, renamed)

    @staticmethod
    def _function_names(executables: list[ir.Operation]) -> set[str]:
        """Every function named in the executables' code (a short name must not be one)."""
        names: set[str] = set()

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name in ("func.func", "llvm.func"):
                names.add(_name(op))
            return ir.WalkResult.ADVANCE

        for executable in executables:
            executable.walk(visit)
        return names

    @staticmethod
    def _rename_function(executable: ir.Operation, old: str, new: str) -> None:
        found = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "func.func" and _name(op) == old:
                found.append(op)
            return ir.WalkResult.ADVANCE

        executable.walk(visit)
        if len(found) != 1:
            raise ValueError(f"{len(found)} functions named {old} in executable {_name(executable)}")
        with executable.context:
            found[0].attributes["sym_name"] = ir.StringAttr.get(new)

    @staticmethod
    def _rename_calls(module: ir.Operation, renamed: dict[tuple[str, str], str]) -> None:
        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "stream.executable":
                return ir.WalkResult.SKIP
            if op.name in _DISPATCH_OPS:
                refs = []
                for ref in ir.ArrayAttr(op.attributes["entry_points"]):
                    path = tuple(ir.SymbolRefAttr(ref).value)
                    if path not in renamed:
                        raise ValueError(f"a dispatch calls {ref}, which is not an export of an executable")
                    refs.append(ir.SymbolRefAttr.get([path[0], renamed[path]]))
                op.attributes["entry_points"] = ir.ArrayAttr.get(refs)
            return ir.WalkResult.ADVANCE

        with module.context:
            module.walk(visit)
