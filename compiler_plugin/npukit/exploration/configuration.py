"""One point of a hardware sweep and the grid of them: processing elements,
SRAM, parallelism, the depthwise scenario, DMA bandwidth and clock."""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from typing import Iterable

from npukit.errors import TargetError
from npukit.mynpu.options import DEPTHWISE_MODES, PARALLEL_MODES, MynpuOptions

#: The parallelisms a sweep compares ('auto' is a compile's choice, not hardware).
SWEEP_PARALLEL = tuple(p for p in PARALLEL_MODES if p != "auto")
#: The letters of the paper's labels (``512K-64-O``); P: output pixels.
PARALLEL_LETTERS = {"output": "O", "input": "I", "output-pixels": "P"}


def sram_label(kib: int) -> str:
    return f"{kib // 1024}M" if kib % 1024 == 0 else f"{kib}K"


@dataclass(frozen=True)
class Configuration:
    pes: int
    sram_kib: int
    parallel: str
    depthwise: str
    dma_bytes_per_cycle: int = 16
    clock_mhz: int = 500

    def options(self) -> MynpuOptions:
        """The compile options of this configuration (they validate every field)."""
        return MynpuOptions(pes=self.pes, sram_kib=self.sram_kib, parallel=self.parallel,
                            dma_bytes_per_cycle=self.dma_bytes_per_cycle, clock_mhz=self.clock_mhz,
                            depthwise=self.depthwise)

    @property
    def label(self) -> str:
        """The paper's label: SRAM, PEs, parallelism (``512K-64-O``)."""
        return f"{sram_label(self.sram_kib)}-{self.pes}-{PARALLEL_LETTERS[self.parallel]}"

    def flags(self) -> list[str]:
        """The ``npukit compile -t mynpu`` flags of this configuration."""
        return [f"--mynpu-{name.replace('_', '-')}={value}" for name, value in asdict(self).items()]

    def to_json(self) -> dict:
        return asdict(self)


def configuration_grid(pes: Iterable[int], sram_kib: Iterable[int], parallel: Iterable[str],
                       depthwise: Iterable[str], dma_bytes_per_cycle: Iterable[int] = (16,),
                       clock_mhz: Iterable[int] = (500,)) -> list[Configuration]:
    """Every combination, depthwise scenario outermost (the plots group by it);
    each is checked as a compile would check it."""
    axes = [list(dict.fromkeys(a)) for a in (depthwise, dma_bytes_per_cycle, clock_mhz, sram_kib, pes, parallel)]
    names = ("depthwise", "dma_bytes_per_cycle", "clock_mhz", "sram_kib", "pes", "parallel")
    for name, values in zip(names, axes):
        if not values:
            raise TargetError(f"the sweep needs at least one value of {name.replace('_', '-')}")
    for value in axes[0]:
        if value not in DEPTHWISE_MODES:
            raise TargetError(f"depthwise must be one of {', '.join(DEPTHWISE_MODES)}, got {value!r}")
    for value in axes[5]:
        if value not in SWEEP_PARALLEL:
            raise TargetError(f"parallel must be one of {', '.join(SWEEP_PARALLEL)}, got {value!r}")
    grid = [Configuration(pes=p, sram_kib=s, parallel=par, depthwise=d, dma_bytes_per_cycle=b, clock_mhz=c)
            for d, b, c, s, p, par in itertools.product(*axes)]
    for configuration in grid:
        configuration.options()
    return grid
