"""The module's devices as IREE writes them: globals initialized with a
``#hal.device.target<"local", [executable targets...]>`` attribute."""

from __future__ import annotations

from iree.compiler import ir

from npukit.layer_recognition.dispatch_ir import split_top_level

CPU_TARGET_PREFIX = '#hal.executable.target<"llvm-cpu", "'


def device_globals(module: ir.Operation) -> list[ir.Operation]:
    """The ``util.global`` ops that hold a device target."""
    devices = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "util.global" and "initial_value" in op.attributes and \
                str(op.attributes["initial_value"]).startswith("#hal.device.target<"):
            devices.append(op)
        return ir.WalkResult.SKIP if op.name == "util.global" else ir.WalkResult.ADVANCE

    module.walk(visit)
    return devices


def executable_targets(device: ir.Operation) -> list[str]:
    """The text of each executable target of a device global."""
    text = str(device.attributes["initial_value"])
    return split_top_level(text[text.index("[") + 1:text.rindex("]")])


def cpu_executable_targets(module: ir.Operation) -> list[str]:
    """The text of every llvm-cpu executable target of the module's devices."""
    found: list[str] = []
    for device in device_globals(module):
        found += [t for t in executable_targets(device) if t.startswith(CPU_TARGET_PREFIX) and t not in found]
    return found
