"""What a compile produces (output mode) and how its host code schedules work
(execution model)."""

from __future__ import annotations

import enum

from npukit.errors import TargetError


def parse_choice(choices: type[enum.Enum], value, noun: str):
    """``value`` as a member of the string enum ``choices`` (case and
    surrounding spaces ignored), or TargetError naming the choices."""
    if isinstance(value, choices):
        return value
    try:
        return choices(str(value).strip().lower())
    except ValueError:
        known = ", ".join(m.value for m in choices)
        raise TargetError(f"unknown {noun} '{value}'; choose one of: {known}") from None


class OutputMode(str, enum.Enum):
    #: IREE VM bytecode module with embedded executables; runs on the stock runtime.
    VMFB = "vmfb"
    #: vm-c module (.c/.h) plus the executables as a static library (.o/.h).
    STATIC = "static"
    #: vm-c module (.c/.h) with the executables as embedded ELFs inside it.
    EMBEDDED = "embedded"

    @staticmethod
    def parse(value: "str | OutputMode") -> "OutputMode":
        return parse_choice(OutputMode, value, "output mode")

    @property
    def is_vm_c(self) -> bool:
        return self is not OutputMode.VMFB


class ExecutionModel(str, enum.Enum):
    #: The small model for boards: imports only hal_inline.* and hal_loader.*.
    INLINE_DYNAMIC = "inline-dynamic"
    #: IREE's default: the full HAL with command buffers and fences.
    ASYNC = "async"

    @staticmethod
    def parse(value: "str | ExecutionModel") -> "ExecutionModel":
        if isinstance(value, ExecutionModel):
            return value
        v = str(value).strip().lower()
        if v in ("async", "async-internal", "default"):
            return ExecutionModel.ASYNC
        try:
            return ExecutionModel(v)
        except ValueError:
            raise TargetError(
                f"unknown execution model '{value}'; choose 'inline-dynamic' or 'async'"
            ) from None

    def iree_flags(self) -> list[str]:
        if self is ExecutionModel.ASYNC:
            return []
        # The ONNX/torch input path otherwise wraps every entry point in a
        # fence-based async ABI that the inline HAL cannot express.
        return [
            f"--iree-execution-model={self.value}",
            "--iree-torch-emit-async-entry-points=false",
        ]
