"""Python access to the mynpu simulator: the C implementation in npukit's
runtime (hal_driver/src/mynpu/), loaded from the host-built shared library.
There is no second simulator in Python."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_size_t, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p
from dataclasses import dataclass
from functools import cache

import numpy as np

from npukit.errors import NpukitError
from npukit.mynpu.isa import PARALLELISM_CODES, HardwareConfig


class StreamError(NpukitError):
    """The device rejected a command stream (the message names the command)."""


class _Config(ctypes.Structure):
    _fields_ = [(n, c_uint32) for n in ("pes", "sram_bytes", "parallelism", "dma_bytes_per_cycle", "clock_mhz",
                                        "instruction_mask")]


class _Counters(ctypes.Structure):
    _fields_ = [("macs", c_uint64), ("compute_cycles", c_uint64), ("dma_bytes", c_uint64), ("dma_cycles", c_uint64),
                ("cycles", c_uint64), ("instructions", c_uint64), ("layers", c_uint32),
                ("sram_high_water", c_uint32), ("sram_extent", c_uint32)]


class _InstructionCost(ctypes.Structure):
    _fields_ = [("command_index", c_uint32), ("layer", c_uint32), ("opcode", c_uint32), ("reserved", c_uint32),
                ("macs", c_uint64), ("compute_cycles", c_uint64), ("dma_bytes", c_uint64), ("dma_cycles", c_uint64)]


class _Span(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("data_length", c_size_t)]


class _ExecutableInfo(ctypes.Structure):
    _fields_ = [("config", _Config), ("minor_version", c_uint16), ("export_count", c_uint32), ("data", c_void_p),
                ("size", c_size_t),
                ("constants", c_void_p), ("constants_length", c_size_t), ("host_format", _Span),
                ("host_code", _Span)]


class _Binding(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("length", c_size_t)]


class _Stream(ctypes.Structure):
    _fields_ = [("config", POINTER(_Config)), ("commands", POINTER(c_uint8)), ("command_bytes", c_size_t),
                ("bindings", POINTER(_Binding)), ("binding_count", c_uint32), ("constants", c_void_p),
                ("constants_length", c_size_t), ("sram", c_void_p), ("sram_length", c_size_t),
                ("layers", POINTER(_Counters)),
                ("layer_capacity", c_uint32), ("instructions", POINTER(_InstructionCost)),
                ("instruction_capacity", c_uint32), ("register_defaults", c_uint32)]


@dataclass(frozen=True)
class Counters:
    macs: int
    compute_cycles: int
    dma_bytes: int
    dma_cycles: int
    cycles: int
    instructions: int
    layers: int
    sram_high_water: int
    sram_extent: int  # the SRAM the stream touches (what the simulator allocates)

    def utilisation(self, pes: int) -> float:
        return self.macs / (self.compute_cycles * pes) if self.compute_cycles else 0.0

    @staticmethod
    def _from(c: _Counters) -> "Counters":
        return Counters(*(getattr(c, name) for name, _ in _Counters._fields_))


@dataclass(frozen=True)
class InstructionCost:
    """What one instruction of a stream cost (overheads included)."""

    command_index: int
    layer: int
    opcode: int
    macs: int
    compute_cycles: int
    dma_bytes: int
    dma_cycles: int

    @staticmethod
    def _from(c: _InstructionCost) -> "InstructionCost":
        return InstructionCost(c.command_index, c.layer, c.opcode, c.macs, c.compute_cycles, c.dma_bytes,
                               c.dma_cycles)


@cache
def _library() -> ctypes.CDLL:
    from npukit.runtime.host_build import runtime_shared_library

    lib = ctypes.CDLL(str(runtime_shared_library()), mode=ctypes.RTLD_LOCAL)
    lib.npukit_mynpu_run_stream.restype = c_void_p
    lib.npukit_mynpu_run_stream.argtypes = [POINTER(_Stream), POINTER(_Counters)]
    lib.npukit_mynpu_executable_parse.restype = c_void_p
    lib.npukit_mynpu_executable_parse.argtypes = [_Span, POINTER(_ExecutableInfo)]
    lib.iree_status_format.restype = c_size_t
    lib.iree_status_format.argtypes = [c_void_p, c_char_p, c_size_t]
    lib.iree_status_free.restype = None
    lib.iree_status_free.argtypes = [c_void_p]
    return lib


def c_config(config: HardwareConfig) -> _Config:
    return _Config(config.pes, config.sram_bytes, PARALLELISM_CODES[config.parallelism],
                   config.dma_bytes_per_cycle, config.clock_mhz, config.instruction_mask)


def _raise_for(lib: ctypes.CDLL, status: int | None) -> None:
    if status:
        message = ctypes.create_string_buffer(1024)
        lib.iree_status_format(status, message, len(message))
        lib.iree_status_free(status)
        raise StreamError(message.value.decode(errors="replace"))


def validate_executable(data: bytes) -> None:
    """Runs the device's load-time validation of a ``mynpu-v1`` executable;
    raises StreamError naming what is wrong (the export and the command)."""
    lib = _library()
    buffer = (c_uint8 * max(len(data), 1)).from_buffer_copy(data or b"\0")
    info = _ExecutableInfo()
    _raise_for(lib, lib.npukit_mynpu_executable_parse(_Span(ctypes.cast(buffer, c_void_p), len(data)),
                                                      ctypes.byref(info)))


@dataclass
class StreamRun:
    counters: Counters
    layers: list[Counters]
    instructions: list[InstructionCost]
    sram: np.ndarray | None


def run_stream(config: HardwareConfig, commands: bytes, bindings: list[np.ndarray] | None = None,
               constants: bytes = b"", sram: np.ndarray | None = None, execute: bool = True,
               max_layers: int = 256, max_instructions: int = 4096, register_defaults: bool = True) -> StreamRun:
    """Validates |commands| (and with ``execute``, runs them; bindings are
    updated in place by DMA writes). ``sram`` is the initial SRAM (at most
    the configuration's size; by default zeros, as much as the stream
    touches); without ``execute`` nothing is read or written and the
    counters are the cycle model's estimate. ``register_defaults``: the
    registers start at version 1.2's REGISTER_DEFAULTS (as CommandStream
    assumes), else all at 0 (a version 1.0 or 1.1 stream)."""
    lib = _library()
    cfg = c_config(config)
    arrays = [np.ascontiguousarray(b) for b in (bindings or [])]
    if any(not a.flags.writeable for a in arrays):
        raise StreamError("bindings must be writeable arrays")
    c_bindings = (_Binding * max(len(arrays), 1))(*[_Binding(a.ctypes.data if execute else None, a.nbytes)
                                                    for a in arrays])
    const_buf = (ctypes.c_uint8 * max(len(constants), 1)).from_buffer_copy(constants or b"\0")
    command_buf = (c_uint8 * max(len(commands), 1)).from_buffer_copy(commands or b"\0")
    layers = (_Counters * max_layers)()
    instructions = (_InstructionCost * max_instructions)()
    stream = _Stream(ctypes.pointer(cfg), command_buf, len(commands), c_bindings, len(arrays),
                     ctypes.cast(const_buf, c_void_p), len(constants), None, 0, layers, max_layers, instructions,
                     max_instructions, int(register_defaults))
    counters = _Counters()
    memory = None
    if execute:
        if sram is None:
            # As the device's simulator does: a validation run finds the SRAM the stream touches.
            _raise_for(lib, lib.npukit_mynpu_run_stream(ctypes.byref(stream), ctypes.byref(counters)))
            memory = np.zeros(max(counters.sram_extent, 1), np.uint8)
        else:
            memory = np.array(sram, np.uint8, copy=True).reshape(-1)
            if memory.nbytes > config.sram_bytes:
                raise StreamError(f"the SRAM image has {memory.nbytes} bytes, the configuration {config.sram_bytes}")
        stream.sram, stream.sram_length = memory.ctypes.data, memory.nbytes
    _raise_for(lib, lib.npukit_mynpu_run_stream(ctypes.byref(stream), ctypes.byref(counters)))
    for original, used in zip(bindings or [], arrays):
        if used is not original:
            original[...] = used
    total = Counters._from(counters)
    return StreamRun(total, [Counters._from(layers[i]) for i in range(min(total.layers, max_layers))],
                     [InstructionCost._from(instructions[i]) for i in range(min(total.instructions, max_instructions))],
                     memory)


def estimate_stream(config: HardwareConfig, commands: bytes, binding_sizes: tuple[int, ...],
                    constants_length: int) -> Counters:
    """The cycle model's counters for a stream, from the device's validator:
    what ``run_stream(..., execute=False)`` counts, without bindings' or
    constants' memory (only their sizes) and without per-layer records; the
    registers start at REGISTER_DEFAULTS (a version 1.2 stream)."""
    lib = _library()
    cfg = c_config(config)
    c_bindings = (_Binding * max(len(binding_sizes), 1))(*[_Binding(None, n) for n in binding_sizes])
    command_buf = (c_uint8 * max(len(commands), 1)).from_buffer_copy(commands or b"\0")
    stream = _Stream(ctypes.pointer(cfg), command_buf, len(commands), c_bindings, len(binding_sizes), None,
                     constants_length, None, 0, None, 0, None, 0, 1)
    counters = _Counters()
    _raise_for(lib, lib.npukit_mynpu_run_stream(ctypes.byref(stream), ctypes.byref(counters)))
    return Counters._from(counters)
