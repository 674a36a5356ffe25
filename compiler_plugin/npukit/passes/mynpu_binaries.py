"""Puts the mynpu-v1 executables into the module.

IREE compiles a ``mynpu-v1`` executable variant like any ``llvm-cpu`` one
(the variant's target is an llvm-cpu target with format ``mynpu-v1``), so at
the 'hal' boundary each such binary holds CPU code as a placeholder. This pass
replaces that data with the real ``mynpu-v1`` executable for the same
``hal.executable``, made from it: the CPU code stays in the executable as its
host code, for the dispatches the NPU does not run. Both execution models are handled: with the full HAL the
data is a ``hal.executable.binary``; with ``inline-dynamic`` IREE has already
turned it into the ``util.buffer.constant`` that ``hal_loader.executable.load``
reads, in the initializer that stores the executable in a global named after
the ``hal.executable``.

A static library (``--iree-llvmcpu-link-static``) has no binary to replace:
IREE links the ``mynpu-v1`` variant's CPU code into the library and loads it
as format ``static`` with the library's name as data. With ``inline-dynamic``
(the mynpu variant is the device's only target) that load becomes a
``mynpu-v1`` load of an executable whose host code is the library's name in
format ``static``: npukit's runtime runs the NPU's exports from the constant
bytes in place and the others through the registered static library, so
nothing is copied to RAM.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from iree.compiler import ir

from npukit.errors import CompileError
from npukit.mynpu.executable import FORMAT, NAMED_HOST_FORMATS

#: IREE's format of a static library and the variant name of the mynpu target.
(STATIC_FORMAT,) = NAMED_HOST_FORMATS
VARIANT = FORMAT.replace("-", "_")


def _string(op: ir.Operation, name: str) -> str | None:
    if name not in op.attributes:
        return None
    try:
        return ir.StringAttr(op.attributes[name]).value
    except ValueError:
        return None


def _data_attr(data: bytes) -> ir.Attribute:
    return ir.Attribute.parse(f'dense<"0x{data.hex().upper()}"> : vector<{len(data)}xi8>')


def _operation(owner) -> ir.Operation:
    return owner.operation if hasattr(owner, "operation") else owner


def _attr_bytes(attr: ir.Attribute) -> bytes:
    """The bytes of a dense i8 vector attribute."""
    return np.array(ir.DenseIntElementsAttr(attr), dtype=np.int8).tobytes()


def _stored_global(value: ir.Value) -> str | None:
    for use in value.uses:
        owner = _operation(use.owner)
        if owner.name == "util.global.store":
            return ir.FlatSymbolRefAttr(owner.attributes["global"]).value
    return None


class ReplaceMynpuBinaries:
    """``executable_for(name, host_format, host_code)`` gives the mynpu-v1
    bytes of the ``hal.executable`` called ``name`` whose CPU code is
    ``host_code`` in ``host_format`` (the placeholder ELF, or a static
    library's name); the pass fails naming any mynpu-v1 binary it cannot
    place. ``static`` lists the executables whose CPU code is a static
    library."""

    def __init__(self, executable_for: Callable[[str, str, bytes], bytes], host_format: Callable[[], str]) -> None:
        self.executable_for = executable_for
        self.host_format = host_format
        self.replaced: list[str] = []
        self.static: list[str] = []

    def __call__(self, module: ir.Operation) -> None:
        found: list[tuple[ir.Operation, str | None, str]] = []
        static_queries: list[ir.Operation] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "hal.executable.binary" and _string(op, "format") == FORMAT:
                found.append((op, _string(op.parent, "sym_name"), self.host_format()))
            elif (op.name == "hal.executable.binary" and _string(op, "format") == STATIC_FORMAT
                  and _string(op, "sym_name") == VARIANT):
                found.append((op, _string(op.parent, "sym_name"), STATIC_FORMAT))
                op.attributes["format"] = ir.StringAttr.get(FORMAT, op.context)
            elif op.name == "hal_loader.executable.load" and _string(op, "format") in (FORMAT, STATIC_FORMAT):
                constant = _operation(op.operands[0].owner)
                if not isinstance(constant, ir.Operation) or constant.name != "util.buffer.constant":
                    raise CompileError("a mynpu-v1 executable load does not read a constant buffer")
                if _string(op, "format") == FORMAT:
                    found.append((constant, _stored_global(op.results[0]), self.host_format()))
                elif _string(constant, "name") == VARIANT:
                    found.append((constant, _stored_global(op.results[0]), STATIC_FORMAT))
                    op.attributes["format"] = ir.StringAttr.get(FORMAT, op.context)
            elif (op.name == "hal_loader.executable.query_support"
                  and _string(op, "executable_format") == STATIC_FORMAT):
                static_queries.append(op)
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        with module.context:
            for op, name, host_format in found:
                if name is None:
                    raise CompileError("cannot tell which hal.executable a mynpu-v1 binary belongs to")
                data_name = "data" if op.name == "hal.executable.binary" else "value"
                host_code = _attr_bytes(op.attributes[data_name])
                op.attributes[data_name] = _data_attr(self.executable_for(name, host_format, host_code))
                op.attributes["mime_type"] = ir.StringAttr.get("application/x-mynpu")
                self.replaced.append(name)
                if host_format == STATIC_FORMAT:
                    self.static.append(name)
            if self.static:
                # The mynpu variant is the device's only target: the runtime is asked for mynpu-v1.
                for op in static_queries:
                    op.attributes["executable_format"] = ir.StringAttr.get(FORMAT)
