"""Which code the CPU runs for a compile's dispatches.

- ``stock``: IREE's own llvm-cpu code generation, unchanged.
- ``tuned`` (the default): quantized layers call npukit's int8 kernels
  (npukit.passes.layer_kernel_calls) and every other quantized dispatch gets
  TFLite's integer requantization (npukit.passes.integer_requantization):
  faster, and exactly TFLite's arithmetic. A compile the tuned pipeline
  cannot finish falls back to ``stock`` and says so.

A plain ``iree-compile`` command line without npukit's flags stays IREE's
own: there the tuned pipeline is the default only where a CPU preset is
known (``--npukit-target``, or the ``mynpu`` backend).
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


DEFAULT_CPU_PIPELINE = CpuPipeline.TUNED
