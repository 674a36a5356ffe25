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
    TABLE = 0x1C
    E_MUL = 0x1D
    DMA_READ = 0x20
    DMA_WRITE = 0x21
    END = 0x3F


REGISTERS = (
    "IFM_ADDR", "IFM_H", "IFM_W", "IFM_C", "OFM_ADDR", "OFM_H", "OFM_W", "OFM_C",
    "WEIGHT_ADDR", "BIAS_ADDR", "QUANT_ADDR", "KERNEL_H", "KERNEL_W", "STRIDE_H", "STRIDE_W",
    "PAD_TOP", "PAD_LEFT", "DILATION_H", "DILATION_W", "IFM_ZP", "OFM_ZP", "ACT_MIN", "ACT_MAX",
    "OUT_INT32", "IFM2_ADDR", "IFM2_ZP", "IFM_MULT", "IFM_SHIFT", "IFM2_MULT", "IFM2_SHIFT",
    "OUT_MULT", "OUT_SHIFT", "LEFT_SHIFT", "DMA_BINDING", "DMA_OFFSET", "DMA_SRAM_ADDR", "DMA_LENGTH",
    "DMA_ROWS", "DMA_SYS_STRIDE", "DMA_SRAM_STRIDE", "LAYOUT", "DMA_PLANES", "DMA_SYS_PLANE_STRIDE",
    "DMA_SRAM_PLANE_STRIDE", "TABLE_ADDR",
)
REGISTER = {name: i for i, name in enumerate(REGISTERS)}
#: The registers' values at the start of a stream (version 1.2; every other
#: register starts at 0, as all did in versions 1.0 and 1.1).
REGISTER_DEFAULTS = {REGISTER[name]: 1 for name in ("KERNEL_H", "KERNEL_W", "STRIDE_H", "STRIDE_W", "DILATION_H",
                                                      "DILATION_W")} | {REGISTER["ACT_MIN"]: 0xFFFFFF80,
                                                                        REGISTER["ACT_MAX"]: 127}
CONSTANTS_BINDING = 0xFF
POOL_MAX, POOL_AVERAGE, POOL_MEAN = 0, 1, 2
#: OP_E_MUL's arg: the IFM2 of the IFM's size, one value per channel (every pixel), one value.
E_MUL_SAME, E_MUL_CHANNELS, E_MUL_ONE = 0, 1, 2
LAYOUT_HWC, LAYOUT_CHW = 0, 1
OP_OVERHEAD_CYCLES = 16
DMA_OVERHEAD_CYCLES = 8
#: OP_TABLE's table: the int8 output of each int8 input x at x + 128.
TABLE_BYTES = 256
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


#: Opcode bit 6: the command's short form, one 32-bit word whose value is
#: bytes 2..3 sign-extended (docs/mynpu-isa.md, "Command stream").
SHORT_FORM = 0x40
_COMMAND = struct.Struct("<BBHI")
_SHORT = struct.Struct("<BBh")


def _signed16(value: int) -> bool:
    """Whether a 32-bit register value is an int16 sign-extended (its short SET)."""
    signed = value - (1 << 32) if value & 0x80000000 else value
    return -0x8000 <= signed < 0x8000


def decode(data: bytes) -> list[tuple[int, int, int]]:
    """(opcode, arg, value) of every command of an encoded stream, short or
    long (the opcode without the short-form bit, the value as 32 bits)."""
    out, at = [], 0
    while at < len(data):
        if data[at] & SHORT_FORM:
            opcode, arg, value = _SHORT.unpack_from(data, at)
            out.append((opcode & ~SHORT_FORM, arg, value & 0xFFFFFFFF))
            at += _SHORT.size
        else:
            opcode, arg, _, value = _COMMAND.unpack_from(data, at)
            out.append((opcode, arg, value))
            at += _COMMAND.size
    return out


class CommandStream:
    """Builds a stream: ``s.set(IFM_H=8, ...)``, ``s.op(Op.CONV)``, ``s.end()``;
    ``commands``: (opcode, arg, value) to start with, as they are (long
    form). A SET of a register to the value it already holds is left out
    (registers start at REGISTER_DEFAULTS in every stream and keep their
    values): the stream is smaller and computes the same. With ``short`` (the default)
    every instruction and every SET of a value that fits 16 bits signed
    takes the one-word short form; ``short=False`` writes 8-byte commands
    only (a version 1.0 stream)."""

    def __init__(self, commands: Iterable[tuple[int, int, int]] = (), short: bool = True) -> None:
        self.data = bytearray()
        self.short = short
        self._registers: dict[int, int] = dict(REGISTER_DEFAULTS)
        for opcode, arg, value in commands:
            self.data += _COMMAND.pack(opcode, arg, 0, value & 0xFFFFFFFF)
            if opcode == Op.SET:
                self._registers[arg] = value & 0xFFFFFFFF

    def _set(self, register: int, value: int) -> None:
        value &= 0xFFFFFFFF
        if self._registers.get(register, 0) != value:
            if self.short and _signed16(value):
                self.data += _SHORT.pack(Op.SET | SHORT_FORM, register, value - (1 << 32) if value >> 31 else value)
            else:
                self.data += _COMMAND.pack(Op.SET, register, 0, value)
            self._registers[register] = value

    def set(self, **registers: int) -> "CommandStream":
        for name, value in registers.items():
            self._set(REGISTER[name], int(value))
        return self

    def op(self, opcode: Op, arg: int = 0) -> "CommandStream":
        self.data += _SHORT.pack(opcode | SHORT_FORM, arg, 0) if self.short else _COMMAND.pack(opcode, arg, 0, 0)
        return self

    def dma(self, write: bool, binding: int, sys_offset: int, sram_address: int, length: int, rows: int = 1,
            sys_stride: int = 0, sram_stride: int = 0, planes: int = 1, sys_plane_stride: int = 0,
            sram_plane_stride: int = 0) -> "CommandStream":
        """The DMA registers and OP_DMA_WRITE (``write``) or OP_DMA_READ:
        ``planes`` planes of ``rows`` rows of ``length`` bytes. Only the
        registers the transfer reads are written: a count of 1 is left as
        it is when the register already means 1 (0 or 1), and then the
        strides it would multiply are left too."""
        r = self._registers
        self._set(REGISTER["DMA_BINDING"], binding)
        self._set(REGISTER["DMA_OFFSET"], sys_offset)
        self._set(REGISTER["DMA_SRAM_ADDR"], sram_address)
        self._set(REGISTER["DMA_LENGTH"], length)
        for count, strides, names in ((rows, (sys_stride, sram_stride), ("DMA_ROWS", "DMA_SYS_STRIDE", "DMA_SRAM_STRIDE")),
                                      (planes, (sys_plane_stride, sram_plane_stride),
                                       ("DMA_PLANES", "DMA_SYS_PLANE_STRIDE", "DMA_SRAM_PLANE_STRIDE"))):
            if count <= 1 and r.get(REGISTER[names[0]], 0) <= 1:
                continue
            self._set(REGISTER[names[0]], count)
            if count > 1:
                self._set(REGISTER[names[1]], strides[0])
                self._set(REGISTER[names[2]], strides[1])
        return self.op(Op.DMA_WRITE if write else Op.DMA_READ)

    def layer(self, double_buffered: bool = False) -> "CommandStream":
        return self.op(Op.LAYER, 1 if double_buffered else 0)

    def end(self) -> "CommandStream":
        return self.op(Op.END)

    @property
    def commands(self) -> list[tuple[int, int, int]]:
        """(opcode, arg, value) of every command so far."""
        return decode(bytes(self.data))

    def encode(self) -> bytes:
        return bytes(self.data)
