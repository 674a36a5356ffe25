"""The mynpu compile options: the hardware configuration to compile for and
how depthwise layers are mapped, from ``--mynpu-*`` flags or Python."""

from __future__ import annotations

from dataclasses import dataclass

from npukit.errors import TargetError
from npukit.mynpu.isa import MAX_SRAM_BYTES, PARALLELISM_CODES, HardwareConfig, Op

DEPTHWISE_MODES = ("npu", "cpu", "per-channel")
PARALLEL_MODES = (*PARALLELISM_CODES, "auto")
#: The optional instructions switched by an on/off flag: the option's name -> the instruction.
_SWITCHES = {"table": Op.TABLE, "pool": Op.POOL, "mul": Op.E_MUL}

#: The ``--mynpu-*`` flags of iree-compile and npukit compile, with their help.
MYNPU_FLAGS = {
    "mynpu-pes": "processing elements (MACs per cycle), default 64",
    "mynpu-sram-kib": f"private SRAM in KiB (1..{MAX_SRAM_BYTES // 1024}), default 256",
    "mynpu-parallel": "output (channels) | input (channels) | output-pixels (a grid of output channels x output "
                      "pixels) | auto (the one the cycle model finds fastest), default output",
    "mynpu-dma-bytes-per-cycle": "DMA bandwidth, default 16",
    "mynpu-clock-mhz": "clock for converting cycles to time, default 500",
    "mynpu-depthwise": "npu (OP_DEPTH_CONV) | cpu (no OP_DEPTH_CONV: depthwise layers run on the CPU) | "
                       "per-channel (no OP_DEPTH_CONV: one OP_CONV per channel), default npu",
    "mynpu-table": "on (OP_TABLE: int8 elementwise activations of one tensor, such as LEAKY_RELU, HARD_SWISH, "
                   "TANH and LOGISTIC, run as 256-entry tables on the NPU) | off (no OP_TABLE: they run on the "
                   "CPU), default on",
    "mynpu-pool": "on (OP_POOL: int8 pools and means, such as AVERAGE_POOL_2D, MAX_POOL_2D, MEAN and the maximum "
                  "a softmax starts with, run on the NPU) | off (no OP_POOL: they run on the CPU), default on",
    "mynpu-mul": "on (OP_E_MUL: int8 elementwise products, TFLite's MUL with a squeeze-and-excitation gate "
                 "fused or not, run on the NPU) | off (no OP_E_MUL: they run on the CPU), default on",
    "mynpu-report": "write the per-dispatch placement and cycle report (JSON) to this file",
    "mynpu-show-cpu-operations": "list the dispatches left on the CPU, with reasons, on stderr",
}


@dataclass
class MynpuOptions:
    pes: int = 64
    sram_kib: int = 256
    parallel: str = "output"
    dma_bytes_per_cycle: int = 16
    clock_mhz: int = 500
    depthwise: str = "npu"
    table: bool = True
    pool: bool = True
    mul: bool = True
    report: str | None = None
    show_cpu_operations: bool = False

    def __post_init__(self) -> None:
        for name, low, high in (("pes", 1, 4096), ("sram_kib", 1, MAX_SRAM_BYTES // 1024),
                                ("dma_bytes_per_cycle", 1, 1024), ("clock_mhz", 1, 10000)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise TargetError(f"--mynpu-{name.replace('_', '-')} must be an integer in {low}..{high}, "
                                  f"got {value!r}")
        if self.parallel not in PARALLEL_MODES:
            raise TargetError(f"--mynpu-parallel must be one of {', '.join(PARALLEL_MODES)}, got {self.parallel!r}")
        for name in _SWITCHES:
            if not isinstance(getattr(self, name), bool):
                raise TargetError(f"--mynpu-{name} must be on or off, got {getattr(self, name)!r}")
        if self.depthwise not in DEPTHWISE_MODES:
            raise TargetError(f"--mynpu-depthwise must be one of {', '.join(DEPTHWISE_MODES)}, "
                              f"got {self.depthwise!r}")

    def config(self, parallelism: str | None = None) -> HardwareConfig:
        """The hardware configuration (``parallelism`` decides 'auto')."""
        chosen = parallelism or ("output" if self.parallel == "auto" else self.parallel)
        config = HardwareConfig(self.pes, self.sram_kib * 1024, chosen, self.dma_bytes_per_cycle, self.clock_mhz)
        if self.depthwise != "npu":
            config = config.without(Op.DEPTH_CONV)
        for name, op in _SWITCHES.items():
            if not getattr(self, name):
                config = config.without(op)
        return config

    def to_json(self) -> dict:
        return dict(self.__dict__)

    @staticmethod
    def from_json(data: dict) -> "MynpuOptions":
        return MynpuOptions(**data)

    @staticmethod
    def from_flags(flags: dict[str, str]) -> "MynpuOptions":
        """From ``{"mynpu-pes": "128", ...}`` (flag names without dashes)."""
        values: dict = {}
        for name, raw in flags.items():
            if name not in MYNPU_FLAGS:
                raise TargetError(f"unknown flag --{name}; the mynpu flags: {', '.join('--' + f for f in MYNPU_FLAGS)}")
            key = name.removeprefix("mynpu-").replace("-", "_")
            if key in ("pes", "sram_kib", "dma_bytes_per_cycle", "clock_mhz"):
                try:
                    values[key] = int(raw)
                except ValueError:
                    raise TargetError(f"--{name} must be an integer, got {raw!r}") from None
            elif key in _SWITCHES:
                if raw.lower() not in ("on", "off", "true", "false", "1", "0", "yes", "no"):
                    raise TargetError(f"--{name} must be on or off, got {raw!r}")
                values[key] = raw.lower() in ("on", "true", "1", "yes")
            elif key == "show_cpu_operations":
                values[key] = raw.lower() not in ("false", "0", "no")
            else:
                values[key] = raw
        return MynpuOptions(**values)
