"""Which of npukit's passes a compile runs, and at which phase boundary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from npukit.driver.phases import ModuleHook
from npukit.passes.input_check import RejectUnknownOperations
from npukit.passes.keep_constant_globals import KeepConstantGlobals
from npukit.passes.layer_boundaries import RemoveLayerBoundaries
from npukit.passes.quantized_handoffs import KeepQuantizedHandoffs
from npukit.passes.separate_layer_executables import SeparateLayerExecutables
from npukit.passes.unyield_internal_calls import UnyieldInternalCalls

if TYPE_CHECKING:
    from npukit.passes.layer_kernel_calls import LayerKernelCalls
    from npukit.passes.mynpu_partition import MynpuTarget
    from npukit.passes.transient_packing import PackTransients
    from npukit.passes.unread_constants import DropUnreadConstants


def _flag_value(flags: list[str], name: str) -> str | None:
    value = None
    for f in flags:
        if f.lstrip("-").split("=", 1)[0] == name and "=" in f:
            value = f.split("=", 1)[1]
    return value


def is_inline_execution(flags: list[str]) -> bool:
    model = _flag_value(flags, "iree-execution-model")
    return bool(model and model.startswith("inline"))


def passes_for(flags: list[str], output_format: str = "vm-bytecode",
               mynpu: "MynpuTarget | None" = None,
               kernels: "LayerKernelCalls | None" = None,
               unread_constants: "DropUnreadConstants | None" = None,
               transients: "PackTransients | None" = None) -> dict[str, list[ModuleHook]]:
    """npukit's passes for a compile with these IREE flags to this output
    format, with the mynpu target's hooks when ``mynpu`` is given and the
    tuned CPU pipeline's when ``kernels`` is (layer kernel calls; with the NPU,
    then TFLite's integer requantization for the CPU code). With either,
    ``unread_constants`` then drops the constants those dispatches no longer
    read from IREE's constant pool (one copy of each weight), and with the
    inline execution model ``transients`` first packs each execution's
    transient slab by the order its commands run in."""
    hooks: dict[str, list[ModuleHook]] = {"start": [RejectUnknownOperations()], "flow": [RemoveLayerBoundaries()]}
    tuned = [kernels] if kernels is not None else []
    if mynpu is not None or kernels is not None:
        # A layer's int8 output reaches an average pool or a residual ADD as int8, not as int32 accumulators.
        hooks["global-optimization"] = [KeepQuantizedHandoffs()]
        # Layers that IREE gave one shared executable get one each: their constants become known.
        hooks["flow"].append(SeparateLayerExecutables())
    if mynpu is not None:
        if kernels is not None:
            kernels.float_output = False  # the CPU computes the NPU's (TFLite's) integer arithmetic
        hooks["preprocessing"] = [mynpu.retarget]
        hooks["stream"] = [mynpu.partition, mynpu.empty_npu_dispatches, *tuned, mynpu.requantize_cpu_code]
        hooks["hal"] = [mynpu.binaries]
    elif kernels is not None:
        # The CPU alone: every dispatch computes the model's own arithmetic
        # (an ONNX graph's float requantization stays float, a .tflite
        # model's integer arithmetic is the frontend's).
        hooks["stream"] = [*tuned]
    if unread_constants is not None and (mynpu is not None or kernels is not None):
        hooks["stream"].append(unread_constants)
    if transients is not None and (mynpu is not None or kernels is not None) and is_inline_execution(flags):
        hooks["stream"].insert(0, transients)
    if is_inline_execution(flags):
        hooks.setdefault("stream", []).append(KeepConstantGlobals())
    if output_format == "vm-c":
        hooks.setdefault("vm", []).append(UnyieldInternalCalls())
    return hooks
