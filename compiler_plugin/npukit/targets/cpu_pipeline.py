"""Which code the CPU runs for a compile's dispatches.

- ``stock``: IREE's own llvm-cpu code generation, unchanged.
- ``tuned``: quantized layers call npukit's int8 kernels
  (npukit.passes.layer_kernel_calls) and every other quantized dispatch gets
  TFLite's integer requantization (npukit.passes.integer_requantization):
  faster, and exactly TFLite's arithmetic.
"""

from __future__ import annotations

import enum

from npukit.targets.output_modes import parse_choice


class CpuPipeline(str, enum.Enum):
    STOCK = "stock"
    TUNED = "tuned"

    @staticmethod
    def parse(value: "str | CpuPipeline") -> "CpuPipeline":
        return parse_choice(CpuPipeline, value, "CPU pipeline")


DEFAULT_CPU_PIPELINE = CpuPipeline.STOCK
