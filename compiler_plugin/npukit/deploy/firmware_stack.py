"""The firmware's stack, bounded before it runs: the whole program from its
reset code (board start-up, npukit's runtime, the vm-c module, the model's
executables and kernels, the C library), read from the linked ELF
(npukit.stack.stack_bound), and the stack the firmware is then given.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from npukit.manifest import long_export_names
from npukit.stack.dynamic_frames import dynamic_bounds
from npukit.stack.stack_bound import StackBound, StackBoundError, bound, read_call_graph

# Where each board family's code starts on the stack the linker script sets.
RESET_FUNCTIONS = ("Reset_Handler", "npukit_reset")
# Added to the bound when the deploy sizes the stack itself: the bound is a
# bound, the margin is for what it cannot see (a debugger's or an
# interrupt's frames on a real board); rounded up to a multiple of 256.
STACK_MARGIN = 1024
DEFAULT_STACK_SIZE = 32768  # when there is no bound


@dataclass(frozen=True)
class FirmwareStack:
    whole: StackBound  # from the reset code: what the stack must hold
    model: StackBound | None  # from <name>_run: one inference of the model

    @property
    def bytes(self) -> int | None:
        return self.whole.bytes

    def to_json(self) -> dict:
        return {"bound": self.whole.bytes, "reason": self.whole.reason, "assumptions": list(self.whole.assumptions),
                "deepest_path": self.whole.to_json()["path"],
                "model_run": self.model.bytes if self.model else None}


def stack_size_for(bound_bytes: int | None) -> int:
    """The stack a deploy gives the firmware when not told: the bound and the margin, or the default."""
    if bound_bytes is None:
        return DEFAULT_STACK_SIZE
    return (bound_bytes + STACK_MARGIN + 255) // 256 * 256


def firmware_stack(elf: Path, model_name: str, manifest: dict) -> FirmwareStack:
    """The stack bound of the firmware |elf| running the model |model_name| (its manifest)."""
    try:
        graph = read_call_graph(elf)
    except StackBoundError as e:
        return FirmwareStack(StackBound("reset", None, (), str(e)), None)
    dynamic = dynamic_bounds(manifest)
    roots = [name for name in RESET_FUNCTIONS if graph.named(name)]
    if len(roots) != 1:
        return FirmwareStack(StackBound("reset", None, (), "the firmware's reset function was not found"), None)
    whole = bound(graph, roots[0], dynamic_bounds=dynamic)
    run = f"{model_name}_run"
    model = bound(graph, run, dynamic_bounds=dynamic) if len(graph.named(run)) == 1 else None
    return FirmwareStack(_long_names(whole, manifest), _long_names(model, manifest) if model else None)


def _long_names(stack: StackBound, manifest: dict) -> StackBound:
    """``stack`` with its dispatch functions (the exports' short names in the firmware) named as IREE names them."""
    names = long_export_names(manifest)
    return replace(stack, path=tuple((names.get(function, function), frame) for function, frame in stack.path))
