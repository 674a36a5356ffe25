"""The QEMU boards npukit deploys to.

A board's CPU and family come from ``bare_metal/boards/<name>.cmake`` and its
memory map from ``bare_metal/boards/<name>.ld`` (the files the firmware build
uses), so each fact is written once; this module adds what only the host
needs: a description and the QEMU command line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from npukit.errors import TargetError
from npukit.runtime.sources import runtime_source_root
from npukit.targets.cpu_presets import CpuPreset, get_preset

_ICOUNT = ("-icount", "shift=0,sleep=off")  # one instruction per virtual ns: deterministic counts
_CONSOLE = ("-display", "none", "-monitor", "none", "-serial", "stdio")


@dataclass(frozen=True)
class MemoryRegion:
    name: str
    origin: int
    length: int
    executable: bool


@dataclass(frozen=True)
class BoardSpec:
    name: str
    description: str
    qemu_system: str
    qemu_package: str
    qemu_args: tuple[str, ...]


@dataclass(frozen=True)
class Board:
    spec: BoardSpec
    cpu: CpuPreset
    family: str  # "cortex_m" or "riscv"
    regions: tuple[MemoryRegion, ...]
    # Instructions per step of the board's counter (1: exact).
    instruction_step: int

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def description(self) -> str:
        return self.spec.description

    @property
    def code_region(self) -> MemoryRegion:
        """Where code and constants go (FLASH, or RAM on boards without one)."""
        for r in self.regions:
            if r.name == "FLASH":
                return r
        return self.data_region

    @property
    def data_region(self) -> MemoryRegion:
        for r in self.regions:
            if r.name == "RAM":
                return r
        raise TargetError(f"board {self.name} has no RAM region in its linker script")

    @property
    def shares_code_and_data(self) -> bool:
        return self.code_region is self.data_region

    def qemu_command(self, firmware: Path) -> list[str]:
        return [self.spec.qemu_system, *self.spec.qemu_args, *_ICOUNT, *_CONSOLE, "-kernel", str(firmware)]


_SPECS = (
    BoardSpec(
        "mps2-an386",
        "Arm MPS2 AN386: Cortex-M4F at 25 MHz",
        "qemu-system-arm",
        "qemu-system-arm",
        ("-M", "mps2-an386", "-semihosting-config", "enable=on,target=native"),
    ),
    BoardSpec(
        "mps2-an500",
        "Arm MPS2 AN500: Cortex-M7 (FPv5-D16) at 25 MHz",
        "qemu-system-arm",
        "qemu-system-arm",
        ("-M", "mps2-an500", "-semihosting-config", "enable=on,target=native"),
    ),
    BoardSpec(
        "mps2-an385",
        "Arm MPS2 AN385: Cortex-M3 (no FPU) at 25 MHz",
        "qemu-system-arm",
        "qemu-system-arm",
        ("-M", "mps2-an385", "-semihosting-config", "enable=on,target=native"),
    ),
    BoardSpec(
        "virt-rv32imf",
        "QEMU RISC-V virt with an RV32IMF hart",
        "qemu-system-riscv32",
        "qemu-system-misc",
        ("-M", "virt", "-bios", "none",
         "-cpu", "rv32,a=false,c=false,d=false,h=false,s=false,u=false,zba=false,zbb=false,zbc=false,zbs=false"),
    ),
    BoardSpec(
        "virt-rv32imac",
        "QEMU RISC-V virt with an RV32IMAC hart",
        "qemu-system-riscv32",
        "qemu-system-misc",
        ("-M", "virt", "-bios", "none",
         "-cpu", "rv32,f=false,d=false,h=false,s=false,u=false,zba=false,zbb=false,zbc=false,zbs=false"),
    ),
)

_SIZE = re.compile(r"^(0x[0-9a-fA-F]+|\d+)\s*([KM]?)$")
_REGION = re.compile(
    r"^\s*(\w+)\s*\((\w+)\)\s*:\s*ORIGIN\s*=\s*(0x[0-9a-fA-F]+|\d+)\s*,\s*LENGTH\s*=\s*(\S+)\s*$", re.M
)


def boards_dir() -> Path:
    return runtime_source_root() / "bare_metal" / "boards"


def _size(text: str) -> int:
    m = _SIZE.match(text)
    if not m:
        raise TargetError(f"cannot read the size '{text}' in a board linker script")
    value = int(m.group(1), 0)
    return value * {"": 1, "K": 1 << 10, "M": 1 << 20}[m.group(2)]


def _cmake_variable(text: str, name: str) -> str:
    m = re.search(rf"set\({name}\s+([^)\s]+)\)", text)
    if not m:
        raise TargetError(f"board file does not set {name}")
    return m.group(1)


@cache
def _load(spec: BoardSpec) -> Board:
    directory = boards_dir()
    cmake_text = (directory / f"{spec.name}.cmake").read_text()
    regions = tuple(
        MemoryRegion(m.group(1), int(m.group(3), 0), _size(m.group(4)), "x" in m.group(2))
        for m in _REGION.finditer((directory / f"{spec.name}.ld").read_text())
    )
    family = _cmake_variable(cmake_text, "NPUKIT_BOARD_FAMILY")
    return Board(
        spec=spec,
        cpu=get_preset(_cmake_variable(cmake_text, "NPUKIT_BOARD_CPU")),
        family=family,
        regions=regions,
        instruction_step=40 if family == "cortex_m" else 1,
    )


def list_boards() -> list[Board]:
    return [_load(s) for s in _SPECS]


def get_board(name: str) -> Board:
    for spec in _SPECS:
        if spec.name == name.strip().lower():
            return _load(spec)
    known = ", ".join(s.name for s in _SPECS)
    raise TargetError(f"unknown board '{name}'; boards: {known} (see `npukit deploy --list-boards`)")
