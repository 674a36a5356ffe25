"""mynpu's opcodes, registers and hardware configuration, and an encoder for
command streams (docs/mynpu-isa.md; hal_driver/include/npukit/mynpu/isa.h)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterable
from enum import IntEnum


class Op(IntEnum):
    SET = 0x01
    LAYER = 0x02
    CONV = 0x10
    CONV_RELU = 0x11
    DEPTH_CONV = 0x12
    MAT_MUL = 0x13
    ACT_RELU = 0x14
    ACT_LRELU = 0x15
    POOL = 0x16
    E_ABS = 0x17
    C_MIN = 0x18
    C_MAX = 0x19
    E_ADD = 0x1A
    E32_ADD = 0x1B
    DMA_READ = 0x20
    DMA_WRITE = 0x21
    END = 0x3F


REGISTERS = (
    "IFM_ADDR", "IFM_H", "IFM_W", "IFM_C", "OFM_ADDR", "OFM_H", "OFM_W", "OFM_C",
    "WEIGHT_ADDR", "BIAS_ADDR", "QUANT_ADDR", "KERNEL_H", "KERNEL_W", "STRIDE_H", "STRIDE_W",
    "PAD_TOP", "PAD_LEFT", "DILATION_H", "DILATION_W", "IFM_ZP", "OFM_ZP", "ACT_MIN", "ACT_MAX",
    "OUT_INT32", "IFM2_ADDR", "IFM2_ZP", "IFM_MULT", "IFM_SHIFT", "IFM2_MULT", "IFM2_SHIFT",
    "OUT_MULT", "OUT_SHIFT", "LEFT_SHIFT", "DMA_BINDING", "DMA_OFFSET", "DMA_SRAM_ADDR", "DMA_LENGTH",
    "DMA_ROWS", "DMA_SYS_STRIDE", "DMA_SRAM_STRIDE", "LAYOUT",
)
REGISTER = {name: i for i, name in enumerate(REGISTERS)}
CONSTANTS_BINDING = 0xFF
POOL_MAX, POOL_AVERAGE = 0, 1
LAYOUT_HWC, LAYOUT_CHW = 0, 1
OP_OVERHEAD_CYCLES = 16
DMA_OVERHEAD_CYCLES = 8
ALL_INSTRUCTIONS = sum(1 << (op - 0x10) for op in Op if 0x10 <= op <= 0x21)


#: How convolutions, depthwise convolutions, matmuls and pools use the PEs,
#: and the header's code for each (docs/mynpu-isa.md, "Cycle model").
PARALLELISM_CODES = {"output": 0, "input": 1, "output-pixels": 2}
#: The SRAM a configuration may have.
MIN_SRAM_BYTES, MAX_SRAM_BYTES = 1024, 1 << 30


@dataclass(frozen=True)
class HardwareConfig:
    pes: int = 64
    sram_bytes: int = 256 * 1024
    parallelism: str = "output"  # a key of PARALLELISM_CODES
    dma_bytes_per_cycle: int = 16
    clock_mhz: int = 500
    instruction_mask: int = ALL_INSTRUCTIONS

    def without(self, *ops: Op) -> "HardwareConfig":
        mask = self.instruction_mask
        for op in ops:
            mask &= ~(1 << (op - 0x10))
        return HardwareConfig(self.pes, self.sram_bytes, self.parallelism, self.dma_bytes_per_cycle,
                              self.clock_mhz, mask)


_COMMAND = struct.Struct("<BBHI")
_DMA_REGISTERS = tuple(REGISTER[name] for name in ("DMA_BINDING", "DMA_OFFSET", "DMA_SRAM_ADDR", "DMA_LENGTH",
                                                    "DMA_ROWS", "DMA_SYS_STRIDE", "DMA_SRAM_STRIDE"))


class CommandStream:
    """Builds a stream: ``s.set(IFM_H=8, ...)``, ``s.op(Op.CONV)``, ``s.end()``;
    ``commands``: (opcode, arg, value) to start with, as they are. A SET of
    a register to the value it already holds is left out (registers start at
    0 in every stream and keep their values): the stream is smaller and
    computes the same."""

    def __init__(self, commands: Iterable[tuple[int, int, int]] = ()) -> None:
        self.data = bytearray()
        self._registers: dict[int, int] = {}
        for opcode, arg, value in commands:
            self.data += _COMMAND.pack(opcode, arg, 0, value & 0xFFFFFFFF)
            if opcode == Op.SET:
                self._registers[arg] = value & 0xFFFFFFFF

    def _set(self, register: int, value: int) -> None:
        value &= 0xFFFFFFFF
        if self._registers.get(register, 0) != value:
            self.data += _COMMAND.pack(Op.SET, register, 0, value)
            self._registers[register] = value

    def set(self, **registers: int) -> "CommandStream":
        for name, value in registers.items():
            self._set(REGISTER[name], int(value))
        return self

    def op(self, opcode: Op, arg: int = 0) -> "CommandStream":
        self.data += _COMMAND.pack(opcode, arg, 0, 0)
        return self

    def dma(self, write: bool, binding: int, sys_offset: int, sram_address: int, length: int, rows: int,
            sys_stride: int, sram_stride: int) -> "CommandStream":
        """The seven DMA registers and OP_DMA_WRITE (``write``) or OP_DMA_READ."""
        values = (binding, sys_offset, sram_address, length, rows, sys_stride, sram_stride)
        for register, value in zip(_DMA_REGISTERS, values):
            self._set(register, value)
        return self.op(Op.DMA_WRITE if write else Op.DMA_READ)

    def layer(self, double_buffered: bool = False) -> "CommandStream":
        return self.op(Op.LAYER, 1 if double_buffered else 0)

    def end(self) -> "CommandStream":
        return self.op(Op.END)

    @property
    def commands(self) -> list[tuple[int, int, int]]:
        """(opcode, arg, value) of every command so far."""
        return [(op, arg, value) for op, arg, _, value in _COMMAND.iter_unpack(bytes(self.data))]

    def encode(self) -> bytes:
        return bytes(self.data)
