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
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from iree.compiler import ir

from npukit.errors import CompileError
from npukit.mynpu.executable import FORMAT


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
    """``executable_for(name, cpu_code)`` gives the mynpu-v1 bytes of the
    ``hal.executable`` called ``name`` whose placeholder is ``cpu_code``; the
    pass fails naming any mynpu-v1 binary it cannot place."""

    def __init__(self, executable_for: Callable[[str, bytes], bytes]) -> None:
        self.executable_for = executable_for
        self.replaced: list[str] = []

    def __call__(self, module: ir.Operation) -> None:
        found: list[tuple[ir.Operation, str | None]] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == "hal.executable.binary" and _string(op, "format") == FORMAT:
                found.append((op, _string(op.parent, "sym_name")))
            elif op.name == "hal_loader.executable.load" and _string(op, "format") == FORMAT:
                constant = _operation(op.operands[0].owner)
                if not isinstance(constant, ir.Operation) or constant.name != "util.buffer.constant":
                    raise CompileError("a mynpu-v1 executable load does not read a constant buffer")
                found.append((constant, _stored_global(op.results[0])))
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        with module.context:
            for op, name in found:
                if name is None:
                    raise CompileError("cannot tell which hal.executable a mynpu-v1 binary belongs to")
                data_name = "data" if op.name == "hal.executable.binary" else "value"
                cpu_code = _attr_bytes(op.attributes[data_name])
                op.attributes[data_name] = _data_attr(self.executable_for(name, cpu_code))
                op.attributes["mime_type"] = ir.StringAttr.get("application/x-mynpu")
                self.replaced.append(name)
