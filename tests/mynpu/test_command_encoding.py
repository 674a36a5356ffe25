"""mynpu 1.1's command encoding: short (one word) and long (two words)
forms round-trip through the encoder and decoder, mean the same to the
simulator, and three-dimensional DMA (DMA_PLANES) moves what a numpy
reference moves (docs/mynpu-isa.md, "Command stream")."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from npukit.mynpu.isa import REGISTER, REGISTERS, SHORT_FORM, CommandStream, HardwareConfig, Op, decode
from npukit.mynpu.simulator import StreamError, run_stream
from support.mynpu_streams import relu_stream

CONFIG = HardwareConfig(pes=8, sram_bytes=64 * 1024, dma_bytes_per_cycle=4)
EDGES = (0, 1, -1, 127, -128, 0x7FFF, -0x8000, 0x8000, -0x8001, 0xFFFF, 0x10000, 0x7FFFFFFF, -0x80000000)


def test_encoding_round_trips_and_takes_the_short_form_where_the_value_fits():
    rng = np.random.default_rng(5)
    values = list(EDGES) + [int(v) for v in rng.integers(-(1 << 31), 1 << 31, 200)]
    for short in (True, False):
        s = CommandStream(short=short)
        expected, held, written = [], {}, []
        for i, v in enumerate(values):
            register = i % len(REGISTERS)
            s.set(**{REGISTERS[register]: v})
            if held.get(register, 0) != v & 0xFFFFFFFF:  # a SET of the value held is left out
                expected.append((Op.SET, register, v & 0xFFFFFFFF))
                written.append(v)
                held[register] = v & 0xFFFFFFFF
            if i % 7 == 0:
                s.op(Op.POOL, 1)
                expected.append((Op.POOL, 1, 0))
        s.layer(True).end()
        expected += [(Op.LAYER, 1, 0), (Op.END, 0, 0)]
        data = s.encode()
        assert decode(data) == expected == s.commands
        fits = sum(-0x8000 <= v < 0x8000 for v in written)
        instructions = len(expected) - len(written)
        words = (fits + instructions + 2 * (len(written) - fits)) if short else 2 * len(expected)
        assert len(data) == 4 * words


def test_short_forms_sign_extend_their_value():
    data = bytes([Op.SET | SHORT_FORM, REGISTER["IFM_ZP"]]) + struct.pack("<h", -128)
    assert decode(data) == [(Op.SET, REGISTER["IFM_ZP"], 0xFFFFFF80)]
    data = bytes([Op.SET | SHORT_FORM, REGISTER["DMA_OFFSET"]]) + struct.pack("<H", 0x8000)
    assert decode(data) == [(Op.SET, REGISTER["DMA_OFFSET"], 0xFFFF8000)]


def test_short_and_long_streams_compute_the_same():
    x = np.arange(-32, 32, dtype=np.int8)
    results = []
    for short in (True, False):
        out = np.zeros(64, np.int8)
        stream = relu_stream(64, zp=3, short=short)
        run = run_stream(CONFIG, stream, bindings=[x.copy(), out])
        results.append((out.copy(), run.counters, [(r.command_index, r.opcode) for r in run.instructions]))
        assert [decode(stream)[i][0] for i, _ in results[-1][2]] == [op for _, op in results[-1][2]]
    assert len(relu_stream(64, short=True)) < len(relu_stream(64, short=False))
    np.testing.assert_array_equal(results[0][0], np.maximum(x, 3))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1]


@pytest.mark.parametrize("data,message", [
    (bytes([Op.SET | SHORT_FORM, len(REGISTERS), 0, 0, Op.END | SHORT_FORM, 0, 0, 0]), "register index out of range"),
    (bytes([Op.END | SHORT_FORM, 0, 1, 0]), "value word is not zero"),
    (bytes([0x80 | SHORT_FORM | Op.END, 0, 0, 0]), "unknown opcode"),
    (bytes([Op.SET | SHORT_FORM, 1, 1, 0, Op.SET, 2, 0, 0]), "long command is cut off"),
    (bytes([Op.END | SHORT_FORM, 0, 0, 0, Op.END | SHORT_FORM, 0, 0, 0]), "commands after END"),
], ids=["register", "value", "bit7", "cut-off", "after-end"])
def test_bad_short_commands_are_rejected(data, message):
    with pytest.raises(StreamError, match=message):
        run_stream(CONFIG, data, execute=False)


def _planes_stream(planes, rows, length, sys_at, sys_stride, sys_plane, sram_at, sram_stride, sram_plane, write):
    s = CommandStream()
    s.dma(False, 0, 0, 0, 4096)  # the whole source into SRAM 0..4095
    s.layer()
    if write:
        s.dma(True, 1, sys_at, sram_at, length, rows, sys_stride, sram_stride, planes, sys_plane, sram_plane)
    else:
        s.dma(False, 0, sys_at, 8192 + sram_at, length, rows, sys_stride, sram_stride, planes, sys_plane, sram_plane)
        s.layer().dma(True, 1, 0, 8192, 4096)
    return s.end().encode()


@pytest.mark.parametrize("write", [False, True])
@pytest.mark.parametrize("shape", [(3, 4, 5, 7, 40, 5, 20), (1, 4, 5, 7, 40, 5, 20), (6, 1, 9, 0, 11, 0, 9),
                                   (4, 3, 2, 2, 9, 2, 6), (2, 5, 8, 8, 100, 8, 64)])
def test_three_dimensional_dma_moves_what_a_reference_moves(shape, write):
    planes, rows, length, sys_stride, sys_plane, sram_stride, sram_plane = shape
    rng = np.random.default_rng(sum(shape) + write)
    source = rng.integers(0, 256, 4096, dtype=np.uint8)
    sys_at, sram_at = 17, 33
    dest = np.zeros(4096, np.uint8)
    stream = _planes_stream(planes, rows, length, sys_at, sys_stride, sys_plane, sram_at, sram_stride, sram_plane,
                            write)
    run = run_stream(CONFIG, stream, bindings=[source.copy(), dest])
    want = np.zeros(4096, np.uint8)
    for p in range(planes):
        for r in range(rows):
            if write:  # SRAM (the source's copy) -> binding 1
                src = sram_at + p * sram_plane + r * sram_stride
                dst = sys_at + p * sys_plane + r * sys_stride
            else:  # binding 0 -> SRAM 8192 + ..., then SRAM 8192.. -> binding 1
                src = sys_at + p * sys_plane + r * sys_stride
                dst = sram_at + p * sram_plane + r * sram_stride
            want[dst:dst + length] = source[src:src + length]
    np.testing.assert_array_equal(dest, want)
    moved = planes * rows * length
    assert run.instructions[1].dma_bytes == moved  # the planes transfer


@pytest.mark.parametrize("planes,sys_plane,sram_plane", [(2, 10, 100), (2, 100, 10)])
def test_overlapping_planes_are_rejected(planes, sys_plane, sram_plane):
    s = CommandStream().dma(False, 0, 0, 0, 5, 3, 7, 7, planes, sys_plane, sram_plane).end()  # a plane spans 19 B
    with pytest.raises(StreamError, match="DMA planes overlap"):
        run_stream(CONFIG, s.encode(), bindings=[np.zeros(4096, np.uint8)], execute=False)
