"""Output-pixels parallelism: the PEs as a grid of output channels x output
pixels, shaped per instruction (docs/mynpu-isa.md, "Cycle model"), against
a brute-force evaluation of the formula written here; the results do not
depend on the parallelism. And the SRAM a large configuration's stream
gets: only what it touches."""

from __future__ import annotations

import math

import numpy as np
import pytest

from npukit.mynpu.isa import OP_OVERHEAD_CYCLES, CommandStream, HardwareConfig, Op
from npukit.mynpu.simulator import run_stream

def grid(channels: int, pixels: int, pes: int) -> int:
    """min over every split of the PEs into c channels x pes / c pixels."""
    return min(math.ceil(channels / c) * math.ceil(pixels / (pes // c)) for c in range(1, pes + 1) if pes % c == 0)


def _layer(op: Op, ifm: tuple[int, int, int], ofm: tuple[int, int, int], kernel: int, stride: int,
           rng: np.random.Generator) -> tuple[bytes, np.ndarray, int]:
    """The instruction's stream, an SRAM image with its operands, and where its OFM is."""
    (ih, iw, ic), (oh, ow, oc) = ifm, ofm
    taps = kernel * kernel * (1 if op in (Op.DEPTH_CONV, Op.POOL) else ic)
    sizes = {"ifm": ih * iw * ic, "wgt": taps * oc, "bias": 4 * oc, "quant": 8 * oc, "ofm": oh * ow * oc}
    at, end = {}, 0
    for name, size in sizes.items():
        at[name], end = end, end + -(-size // 16) * 16
    sram = np.zeros(max(end, 1024), np.uint8)
    sram[:sizes["ifm"]] = rng.integers(0, 256, sizes["ifm"], dtype=np.uint8)
    sram[at["wgt"]:at["wgt"] + sizes["wgt"]] = rng.integers(0, 256, sizes["wgt"], dtype=np.uint8)
    sram[at["quant"]:at["quant"] + sizes["quant"]] = np.array([(1 << 30, -6)] * oc, np.int32).view(np.uint8).ravel()
    s = CommandStream().set(IFM_ADDR=at["ifm"], IFM_H=ih, IFM_W=iw, IFM_C=ic, OFM_ADDR=at["ofm"], OFM_H=oh,
                            OFM_W=ow, OFM_C=oc, WEIGHT_ADDR=at["wgt"], BIAS_ADDR=at["bias"], QUANT_ADDR=at["quant"],
                            KERNEL_H=kernel, KERNEL_W=kernel, STRIDE_H=stride, STRIDE_W=stride, DILATION_H=1,
                            DILATION_W=1, ACT_MIN=-128, ACT_MAX=127)
    return s.op(op, 1 if op == Op.POOL else 0).end().encode(), sram, at["ofm"]


# (instruction, IFM HxWxC, OFM HxWxC, kernel, stride)
LAYERS = [
    (Op.CONV, (10, 10, 3), (8, 8, 16), 3, 1),
    (Op.CONV, (9, 7, 5), (4, 3, 3), 3, 2),
    (Op.DEPTH_CONV, (12, 12, 10), (10, 10, 10), 3, 1),
    (Op.MAT_MUL, (1, 6, 40), (1, 6, 10), 1, 1),
    (Op.POOL, (8, 8, 6), (4, 4, 6), 2, 2),
]


@pytest.mark.parametrize("pes", [1, 8, 12, 128])
@pytest.mark.parametrize("op,ifm,ofm,kernel,stride", LAYERS)
def test_the_grid_takes_the_fastest_shape(op, ifm, ofm, kernel, stride, pes):
    stream, sram, at = _layer(op, ifm, ofm, kernel, stride, np.random.default_rng(pes))
    (oh, ow, oc), ic = ofm, ifm[2]
    taps = kernel * kernel * (1 if op in (Op.DEPTH_CONV, Op.POOL) else ic)
    runs = {p: run_stream(HardwareConfig(pes=pes, sram_bytes=sram.nbytes, parallelism=p), stream, sram=sram)
            for p in ("output", "input", "output-pixels")}
    assert runs["output-pixels"].counters.compute_cycles == taps * grid(oc, oh * ow, pes) + OP_OVERHEAD_CYCLES
    # The other two keep their formulas; the grid is never slower than output channels.
    by_output = oh * ow * taps * math.ceil(oc / pes)
    assert runs["output"].counters.compute_cycles == by_output + OP_OVERHEAD_CYCLES
    assert runs["output-pixels"].counters.compute_cycles <= runs["output"].counters.compute_cycles
    # The parallelism changes the time, never the result.
    out = oh * ow * oc
    for run in runs.values():
        np.testing.assert_array_equal(run.sram[at:at + out], runs["output"].sram[at:at + out])


def test_few_channels_keep_every_pe_busy():
    """16 output channels on 128 PEs: output-channel parallelism uses 16 PEs,
    the grid 16 x 8 uses them all."""
    stream, sram, _ = _layer(Op.CONV, (34, 34, 16), (32, 32, 16), 3, 1, np.random.default_rng(0))
    cycles = {p: run_stream(HardwareConfig(pes=128, sram_bytes=sram.nbytes, parallelism=p), stream,
                            sram=sram).counters for p in ("output", "output-pixels")}
    work = cycles["output"].compute_cycles - OP_OVERHEAD_CYCLES
    assert work == 8 * (cycles["output-pixels"].compute_cycles - OP_OVERHEAD_CYCLES)
    assert cycles["output-pixels"].utilisation(128) > 0.99 and cycles["output"].utilisation(128) < 0.13


def test_a_256_mib_configuration_simulates_only_the_sram_it_touches():
    stream, sram, at = _layer(Op.CONV, (10, 10, 3), (8, 8, 16), 3, 1, np.random.default_rng(1))
    small = run_stream(HardwareConfig(sram_bytes=sram.nbytes), stream, sram=sram)
    config = HardwareConfig(sram_bytes=256 << 20)
    estimate = run_stream(config, stream, execute=False).counters
    assert estimate.sram_extent == at + 8 * 8 * 16 <= sram.nbytes  # the OFM is the highest SRAM touched
    run = run_stream(config, stream, sram=sram)  # an image of the SRAM's start
    assert run.sram.nbytes == sram.nbytes
    np.testing.assert_array_equal(run.sram, small.sram)
    zeros = run_stream(config, stream)  # no image: the simulator allocates the stream's extent
    assert zeros.sram.nbytes == estimate.sram_extent and zeros.counters.cycles == small.counters.cycles
