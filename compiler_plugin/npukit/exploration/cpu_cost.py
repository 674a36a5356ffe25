"""What the dispatches left on the CPU cost: instructions per MAC of npukit's
tuned int8 kernels on a named core, per kind of operation, measured on its
QEMU board (``benchmarks/cpu_costs.py`` writes ``cpu_costs.json`` beside
this module, with the per-layer counts the figures come from).

A dispatch's CPU cycles are its MACs per inference times the figure of its
kind times the cycles per instruction (1 by default: QEMU counts
instructions, not cycles, so this is the CPU's best case). Dispatches
without MACs (data movement, softmax, pooling) are not costed; a sweep
lists them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from npukit.errors import TargetError

COSTS_FILE = Path(__file__).with_name("cpu_costs.json")
#: The kinds every core's figures cover (npukit.mynpu.operation_kind.KINDS with MACs).
COSTED_KINDS = ("conv", "pointwise", "depthwise", "dense")


@cache
def measured_costs() -> dict:
    return json.loads(COSTS_FILE.read_text())


def cores() -> list[str]:
    return sorted(measured_costs()["cores"])


@dataclass(frozen=True)
class CpuCostModel:
    core: str
    clock_mhz: float
    instructions_per_mac: dict[str, float]
    cycles_per_instruction: float
    source: str

    @staticmethod
    def for_core(core: str = "cortex-m4", clock_mhz: float = 100.0,
                 cycles_per_instruction: float = 1.0) -> "CpuCostModel":
        measured = measured_costs()["cores"].get(core)
        if measured is None:
            raise TargetError(f"no measured CPU costs for '{core}'; measured cores: {', '.join(cores())}")
        if not clock_mhz > 0 or not cycles_per_instruction > 0:
            raise TargetError("the CPU clock and its cycles per instruction must be positive")
        source = (f"npukit's tuned int8 kernels on {measured['board']} under QEMU -icount, instructions per "
                  f"dispatch ({measured['method']}); models: {', '.join(measured['models'])}")
        return CpuCostModel(core, clock_mhz, dict(measured["instructions_per_mac"]), cycles_per_instruction, source)

    def cycles(self, kind: str, macs: int) -> int:
        """The CPU cycles of ``macs`` MACs of a ``kind`` operation (0 for kinds without a figure)."""
        figure = self.instructions_per_mac.get(kind)
        return round(figure * macs * self.cycles_per_instruction) if figure is not None else 0

    def to_json(self) -> dict:
        return {"core": self.core, "clock_mhz": self.clock_mhz, "cycles_per_instruction": self.cycles_per_instruction,
                "instructions_per_mac": self.instructions_per_mac, "source": self.source}
