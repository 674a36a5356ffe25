"""Every mynpu instruction against a numpy reference computed here, the
requantization edge cases, the validator's rejections and the cycle model."""

from __future__ import annotations

import numpy as np
import pytest

from npukit.mynpu.isa import (
    DMA_OVERHEAD_CYCLES, E_MUL_CHANNELS, E_MUL_ONE, E_MUL_SAME, OP_OVERHEAD_CYCLES, REGISTERS, CommandStream,
    HardwareConfig, Op, decode)
from npukit.mynpu.simulator import StreamError, run_stream
from npukit.quantization.fixed_point_reference import scale_rounded_once_array
from tests.support.tflite_arithmetic import requantize

CONFIG = HardwareConfig(pes=8, sram_bytes=64 * 1024, dma_bytes_per_cycle=4)
IFM, WGT, BIAS, QUANT, OFM, IFM2 = 0, 16384, 32768, 36864, 40960, 57344


def to_int8(values, zp, lo=-128, hi=127):
    return np.array([max(lo, min(hi, v + zp)) for v in values], np.int32)


def sram_with(**placed: np.ndarray) -> np.ndarray:
    sram = np.zeros(CONFIG.sram_bytes, np.uint8)
    for name, array in placed.items():
        at = globals()[name.upper()]
        raw = np.ascontiguousarray(array).view(np.uint8).ravel()
        sram[at:at + raw.size] = raw
    return sram


def conv_reference(x, w, bias, quant, stride, pad, izp, ozp, depthwise=False, relu=False, dilation=1):
    h, wd, c = x.shape
    kh, kw = (w.shape[0], w.shape[1]) if depthwise else (w.shape[1], w.shape[2])
    oc = c if depthwise else w.shape[0]
    oh = (h + 2 * pad - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dilation * (kw - 1) - 1) // stride + 1
    xp = np.full((h + 2 * pad, wd + 2 * pad, c), izp, np.int64)
    xp[pad:pad + h, pad:pad + wd] = x
    out = np.zeros((oh, ow, oc), np.int32)
    lo = max(-128, ozp) if relu else -128
    for y in range(oh):
        for xx in range(ow):
            patch = xp[y * stride:y * stride + dilation * (kh - 1) + 1:dilation,
                       xx * stride:xx * stride + dilation * (kw - 1) + 1:dilation] - izp
            for o in range(oc):
                acc = int(bias[o]) + (int((patch[:, :, o] * w[:, :, o]).sum()) if depthwise
                                      else int((patch * w[o]).sum()))
                out[y, xx, o] = max(lo, min(127, requantize(acc, *quant[o]) + ozp))
    return out.astype(np.int8)


def random_quant(rng, n):
    return [(int(rng.integers(2**29, 2**31 - 1)), int(rng.integers(-10, -4))) for _ in range(n)]


@pytest.mark.parametrize("kernel,stride,pad", [(1, 1, 0), (3, 1, 1), (3, 2, 1), (3, 2, 0), (1, 2, 0)])
@pytest.mark.parametrize("relu", [False, True])
def test_conv(kernel, stride, pad, relu):
    rng = np.random.default_rng(kernel * 10 + stride + pad)
    h, w_, c, oc = 7, 6, 5, 9
    x = rng.integers(-128, 128, (h, w_, c), dtype=np.int8)
    w = rng.integers(-127, 128, (oc, kernel, kernel, c), dtype=np.int8)
    bias = rng.integers(-5000, 5000, oc).astype(np.int32)
    quant = random_quant(rng, oc)
    izp, ozp = -3, 5
    expected = conv_reference(x, w, bias, quant, stride, pad, izp, ozp, relu=relu)
    oh, ow = expected.shape[:2]
    s = CommandStream().set(IFM_ADDR=IFM, IFM_H=h, IFM_W=w_, IFM_C=c, OFM_ADDR=OFM, OFM_H=oh, OFM_W=ow, OFM_C=oc,
                            WEIGHT_ADDR=WGT, BIAS_ADDR=BIAS, QUANT_ADDR=QUANT, KERNEL_H=kernel, KERNEL_W=kernel,
                            STRIDE_H=stride, STRIDE_W=stride, PAD_TOP=pad, PAD_LEFT=pad, DILATION_H=1,
                            DILATION_W=1, IFM_ZP=izp, OFM_ZP=ozp, ACT_MIN=-128, ACT_MAX=127)
    s.op(Op.CONV_RELU if relu else Op.CONV).end()
    run = run_stream(CONFIG, s.encode(), sram=sram_with(ifm=x, wgt=w, bias=bias,
                                                        quant=np.array(quant, np.int32)))
    got = run.sram[OFM:OFM + expected.size].view(np.int8).reshape(expected.shape)
    np.testing.assert_array_equal(got, expected)
    macs = oh * ow * oc * kernel * kernel * c
    assert run.counters.macs == macs
    assert run.counters.compute_cycles == oh * ow * kernel * kernel * c * -(-oc // CONFIG.pes) + OP_OVERHEAD_CYCLES


@pytest.mark.parametrize("stride,pad", [(1, 1), (2, 1), (2, 0)])
def test_depthwise(stride, pad):
    rng = np.random.default_rng(stride * 3 + pad)
    h, w_, c = 8, 7, 12
    x = rng.integers(-128, 128, (h, w_, c), dtype=np.int8)
    w = rng.integers(-127, 128, (3, 3, c), dtype=np.int8)
    bias = rng.integers(-3000, 3000, c).astype(np.int32)
    quant = random_quant(rng, c)
    expected = conv_reference(x, w, bias, quant, stride, pad, 7, -4, depthwise=True)
    oh, ow = expected.shape[:2]
    s = CommandStream().set(IFM_ADDR=IFM, IFM_H=h, IFM_W=w_, IFM_C=c, OFM_ADDR=OFM, OFM_H=oh, OFM_W=ow, OFM_C=c,
                            WEIGHT_ADDR=WGT, BIAS_ADDR=BIAS, QUANT_ADDR=QUANT, KERNEL_H=3, KERNEL_W=3,
                            STRIDE_H=stride, STRIDE_W=stride, PAD_TOP=pad, PAD_LEFT=pad, DILATION_H=1,
                            DILATION_W=1, IFM_ZP=7, OFM_ZP=-4, ACT_MIN=-128, ACT_MAX=127).op(Op.DEPTH_CONV).end()
    run = run_stream(CONFIG, s.encode(), sram=sram_with(ifm=x, wgt=w, bias=bias, quant=np.array(quant, np.int32)))
    np.testing.assert_array_equal(run.sram[OFM:OFM + expected.size].view(np.int8).reshape(expected.shape), expected)
    assert run.counters.macs == oh * ow * c * 9


@pytest.mark.parametrize("out_int32", [False, True])
def test_matmul(out_int32):
    rng = np.random.default_rng(5)
    m, k, n = 3, 40, 11
    x = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-127, 128, (n, k), dtype=np.int8)
    bias = rng.integers(-1000, 1000, n).astype(np.int32)
    scales = rng.uniform(1e-4, 2e-2, n)  # OP_MAT_MUL's table: binary64 scales
    acc = (x.astype(np.int64) - 2) @ w.T.astype(np.int64) + bias
    s = CommandStream().set(IFM_ADDR=IFM, IFM_H=m, IFM_W=1, IFM_C=k, OFM_ADDR=OFM, OFM_H=m, OFM_W=1, OFM_C=n,
                            WEIGHT_ADDR=WGT, BIAS_ADDR=BIAS, QUANT_ADDR=QUANT, IFM_ZP=2, OFM_ZP=1,
                            ACT_MIN=-100, ACT_MAX=100, OUT_INT32=int(out_int32)).op(Op.MAT_MUL).end()
    run = run_stream(CONFIG, s.encode(), sram=sram_with(ifm=x, wgt=w, bias=bias, quant=scales.astype("<f8")))
    if out_int32:
        np.testing.assert_array_equal(run.sram[OFM:OFM + 4 * m * n].view(np.int32).reshape(m, n), acc)
    else:
        expected = np.clip(scale_rounded_once_array(acc, scales[None, :]) + 1, -100, 100).astype(np.int8)
        np.testing.assert_array_equal(run.sram[OFM:OFM + m * n].view(np.int8).reshape(m, n), expected)
    assert run.counters.macs == m * n * k


@pytest.mark.parametrize("variant", [0, 1, 2])
@pytest.mark.parametrize("kernel,stride,pad", [(2, 2, 0), (3, 1, 1), (3, 2, 1)])
def test_pool(variant, kernel, stride, pad):
    """OP_POOL's max (0), average (1) and mean (2: the sum of x - IFM_ZP over
    the window's positions inside the IFM, requantized, plus OFM_ZP), then
    the clamp."""
    rng = np.random.default_rng(kernel + variant)
    h, w_, c = 6, 5, 3
    x = rng.integers(-128, 128, (h, w_, c), dtype=np.int8)
    oh, ow = (h + 2 * pad - kernel) // stride + 1, (w_ + 2 * pad - kernel) // stride + 1
    expected = np.zeros((oh, ow, c), np.int8)
    for y in range(oh):
        for xx in range(ow):
            ys = range(max(0, y * stride - pad), min(h, y * stride - pad + kernel))
            xs = range(max(0, xx * stride - pad), min(w_, xx * stride - pad + kernel))
            window = x[ys.start:ys.stop, xs.start:xs.stop].astype(np.int64).reshape(-1, c)
            for ch in range(c):
                if variant == 0:
                    v = window[:, ch].max()
                elif variant == 2:
                    v = requantize(int((window[:, ch] - 7).sum()), 1518500250, -3) - 4
                else:
                    total, count = int(window[:, ch].sum()), len(window)
                    v = (total + count // 2) // count if total >= 0 else -((-total + count // 2) // count)
                expected[y, xx, ch] = max(-120, min(120, v))
    s = CommandStream().set(IFM_ADDR=IFM, IFM_H=h, IFM_W=w_, IFM_C=c, OFM_ADDR=OFM, OFM_H=oh, OFM_W=ow, OFM_C=c,
                            KERNEL_H=kernel, KERNEL_W=kernel, STRIDE_H=stride, STRIDE_W=stride, PAD_TOP=pad,
                            PAD_LEFT=pad, ACT_MIN=-120, ACT_MAX=120, IFM_ZP=7, OUT_MULT=1518500250, OUT_SHIFT=-3,
                            OFM_ZP=-4).op(Op.POOL, variant).end()
    run = run_stream(CONFIG, s.encode(), sram=sram_with(ifm=x))
    np.testing.assert_array_equal(run.sram[OFM:OFM + expected.size].view(np.int8).reshape(expected.shape), expected)


@pytest.mark.parametrize("op", [Op.CONV, Op.DEPTH_CONV, Op.POOL])
def test_chw_layout_gives_the_hwc_result_in_channel_planes(op):
    """LAYOUT=1 reads and writes [C][H][W]; the arithmetic is the same."""
    rng = np.random.default_rng(int(op))
    h, w_, c = 6, 5, 4
    oc = 3 if op == Op.CONV else c
    x = rng.integers(-128, 128, (h, w_, c), dtype=np.int8)
    w = rng.integers(-127, 128, (oc, 3, 3, c) if op == Op.CONV else (3, 3, c), dtype=np.int8)
    bias = rng.integers(-3000, 3000, oc).astype(np.int32)
    quant = np.array(random_quant(rng, oc), np.int32)
    registers = dict(IFM_ADDR=IFM, IFM_H=h, IFM_W=w_, IFM_C=c, OFM_ADDR=OFM, OFM_H=3, OFM_W=3, OFM_C=oc,
                     WEIGHT_ADDR=WGT, BIAS_ADDR=BIAS, QUANT_ADDR=QUANT, KERNEL_H=3, KERNEL_W=3, STRIDE_H=2,
                     STRIDE_W=2, PAD_TOP=1, PAD_LEFT=1, DILATION_H=1, DILATION_W=1, IFM_ZP=3, OFM_ZP=-2,
                     ACT_MIN=-128, ACT_MAX=127)
    results = []
    for layout, ifm in ((0, x), (1, x.transpose(2, 0, 1))):
        s = CommandStream().set(LAYOUT=layout, **registers).op(op, 1 if op == Op.POOL else 0).end()
        run = run_stream(CONFIG, s.encode(), sram=sram_with(ifm=np.ascontiguousarray(ifm), wgt=w, bias=bias,
                                                            quant=quant))
        results.append(run.sram[OFM:OFM + 9 * oc].view(np.int8))
    hwc, chw = results
    np.testing.assert_array_equal(chw.reshape(oc, 3, 3), hwc.reshape(3, 3, oc).transpose(2, 0, 1))
    assert len(set(hwc.tolist())) > 3  # a real result, not a constant


def _elementwise(op, a, b=None, **registers):
    n = a.size
    s = CommandStream().set(IFM_ADDR=IFM, IFM_H=1, IFM_W=1, IFM_C=n, OFM_ADDR=OFM, OFM_H=1, OFM_W=1, OFM_C=n,
                            IFM2_ADDR=IFM2, ACT_MIN=-128, ACT_MAX=127)
    s.set(**registers).op(op).end()
    placed = {"ifm": a} if b is None else {"ifm": a, "ifm2": b}
    run = run_stream(CONFIG, s.encode(), sram=sram_with(**placed))
    return run.sram[OFM:OFM + n * a.itemsize].view(a.dtype)


def test_elementwise_instructions():
    rng = np.random.default_rng(9)
    a = rng.integers(-128, 128, 200, dtype=np.int8)
    b = rng.integers(-128, 128, 200, dtype=np.int8)
    ai = a.astype(np.int32)
    np.testing.assert_array_equal(_elementwise(Op.ACT_RELU, a, IFM_ZP=-10, ACT_MAX=90),
                                  np.clip(np.maximum(ai, -10), -128, 90))
    np.testing.assert_array_equal(_elementwise(Op.E_ABS, a, IFM_ZP=4, OFM_ZP=-128),
                                  np.clip(np.abs(ai - 4) - 128, -128, 127))
    np.testing.assert_array_equal(_elementwise(Op.C_MIN, a, b), np.minimum(a, b))
    np.testing.assert_array_equal(_elementwise(Op.C_MAX, a, b), np.maximum(a, b))
    mult, shift = 1288490189, -2  # slope 0.15
    lrelu = [v if v - 3 >= 0 else max(-128, min(127, 3 + requantize(v - 3, mult, shift))) for v in ai.tolist()]
    np.testing.assert_array_equal(_elementwise(Op.ACT_LRELU, a, IFM_ZP=3, IFM_MULT=mult, IFM_SHIFT=shift), lrelu)
    regs = dict(IFM_ZP=-5, IFM2_ZP=12, IFM_MULT=1073741824, IFM_SHIFT=0, IFM2_MULT=1518500250, IFM2_SHIFT=-1,
                OUT_MULT=1789569707, OUT_SHIFT=-17, LEFT_SHIFT=20, OFM_ZP=-7)
    add = []
    for x, y in zip(ai.tolist(), b.astype(np.int32).tolist()):
        xa = requantize((x + 5) << 20, 1073741824, 0)
        ya = requantize((y - 12) << 20, 1518500250, -1)
        add.append(max(-128, min(127, requantize(xa + ya, 1789569707, -17) - 7)))
    np.testing.assert_array_equal(_elementwise(Op.E_ADD, a, b, **regs), add)
    big = np.array([2**31 - 5, -(2**31) + 3, 100, -7], np.int32)
    other = np.array([10, -10, -100, 7], np.int32)
    np.testing.assert_array_equal(_elementwise(Op.E32_ADD, big, other),
                                  np.clip(big.astype(np.int64) + other, -(2**31), 2**31 - 1))


def _table_stream(n: int, table_at: int, ifm: int, ofm: int) -> CommandStream:
    return CommandStream().set(TABLE_ADDR=table_at, IFM_ADDR=ifm, IFM_H=1, IFM_W=n, IFM_C=1, OFM_ADDR=ofm, OFM_H=1,
                               OFM_W=n, OFM_C=1).op(Op.TABLE).end()


@pytest.mark.parametrize("n,in_place", [(1, False), (256, True), (1001, False), (4097, True)])
def test_table_instruction(n, in_place):
    """OP_TABLE: y = table[x + 128] for every int8 x (each of the 256 values
    at least once from n = 256 on), in place or not; ceil(n / P) cycles plus
    the instruction's overhead, no MACs."""
    rng = np.random.default_rng(n)
    table = rng.integers(-128, 128, 256, dtype=np.int8)
    x = np.resize(rng.permutation(np.arange(-128, 128, dtype=np.int8)), n)
    ofm = IFM if in_place else OFM
    sram = sram_with(wgt=table, ifm=x)
    run = run_stream(CONFIG, _table_stream(n, WGT, IFM, ofm).encode(), sram=sram)
    np.testing.assert_array_equal(run.sram[ofm:ofm + n].view(np.int8), table[x.astype(np.int32) + 128])
    (record,) = run.instructions
    assert (record.opcode, record.macs, record.compute_cycles) == (Op.TABLE, 0, -(-n // CONFIG.pes) + OP_OVERHEAD_CYCLES)


def _product_stream(n: int, channels: int, broadcast: int, ifm: int, ifm2: int, ofm: int, **registers):
    return CommandStream().set(IFM_ADDR=ifm, IFM_H=1, IFM_W=n // channels, IFM_C=channels, IFM2_ADDR=ifm2,
                               OFM_ADDR=ofm, OFM_H=1, OFM_W=n // channels, OFM_C=channels,
                               **registers).op(Op.E_MUL, broadcast).end()


@pytest.mark.parametrize("broadcast,in_place", [(E_MUL_SAME, False), (E_MUL_SAME, True), (E_MUL_CHANNELS, True),
                                                (E_MUL_ONE, False)])
def test_product_instruction(broadcast, in_place):
    """OP_E_MUL: TFLite's int8 MUL, clamp(MBQM((a - IFM_ZP) * (b - IFM2_ZP),
    OUT_MULT, OUT_SHIFT) + OFM_ZP), b an IFM2 of the IFM's size, one value
    per channel (pixels x channels, HWC) or one value; in place or not;
    products up to 255 x 255; ceil(n / P) cycles plus the overhead, no MACs."""
    rng = np.random.default_rng(broadcast)
    pixels, channels = 37, 12
    n = pixels * channels
    a = rng.integers(-128, 128, n, dtype=np.int8)
    a[:3] = -128
    size = {E_MUL_SAME: n, E_MUL_CHANNELS: channels, E_MUL_ONE: 1}[broadcast]
    b = rng.integers(-128, 128, size, dtype=np.int8)
    b[0] = -128
    registers = dict(IFM_ZP=127, IFM2_ZP=127, OUT_MULT=1518500250, OUT_SHIFT=-9, OFM_ZP=-5, ACT_MIN=-100,
                     ACT_MAX=120)
    ofm = IFM if in_place else OFM
    run = run_stream(CONFIG, _product_stream(n, channels, broadcast, IFM, IFM2, ofm, **registers).encode(),
                     sram=sram_with(ifm=a, ifm2=b))
    wide = np.broadcast_to(b, (pixels, channels)).reshape(-1) if broadcast == E_MUL_CHANNELS else np.resize(b, n)
    want = [max(-100, min(120, requantize((x - 127) * (y - 127), 1518500250, -9) - 5))
            for x, y in zip(a.astype(np.int32).tolist(), wide.astype(np.int32).tolist())]
    np.testing.assert_array_equal(run.sram[ofm:ofm + n].view(np.int8), want)
    (record,) = run.instructions
    assert (record.opcode, record.macs, record.compute_cycles) == (Op.E_MUL, 0, -(-n // CONFIG.pes) + OP_OVERHEAD_CYCLES)


def test_product_instruction_needs_the_configuration_s_flag():
    stream = _product_stream(16, 4, E_MUL_SAME, 0, 64, 128).encode()
    run_stream(CONFIG, stream, execute=False)
    with pytest.raises(StreamError, match="not in this hardware configuration"):
        run_stream(CONFIG.without(Op.E_MUL), stream, execute=False)


REQUANT_CASES = [
    (5, 2**30, -1), (6, 2**30, -2), (-6, 2**30, -2), (-5, 2**30, -1), (7, 2**30, -1), (-7, 2**30, -1),  # ties
    (2**31 - 1, 2**31 - 1, 0), (-(2**31), 2**31 - 1, 0), (2**31 - 1, 2**31 - 1, 30), (-(2**31), 2**31 - 1, 30),
    (1000, 2**31 - 1, 30), (-1000, 2**31 - 1, 30), (12345, 1234567890, -31), (-12345, 1234567890, -31),
    (0, 0, 0), (3, 1, 0), (-(2**31), 2**30, 0),
]


@pytest.mark.parametrize("acc,mult,shift", REQUANT_CASES)
@pytest.mark.parametrize("ozp", [-128, 0, 127])
@pytest.mark.parametrize("op", [Op.CONV, Op.MAT_MUL])
def test_requantization_edge_cases(acc, mult, shift, ozp, op):
    """A 1x1 layer with weight 1, IFM 0 and the accumulator as its bias:
    convolutions round twice (TFLite's MultiplyByQuantizedMultiplier),
    OP_MAT_MUL scales by the multiplier's value as a double and rounds once
    (TFLite's fully connected kernel)."""
    s = CommandStream().set(IFM_ADDR=IFM, IFM_H=1, IFM_W=1, IFM_C=1, OFM_ADDR=OFM, OFM_H=1, OFM_W=1, OFM_C=1,
                            WEIGHT_ADDR=WGT, BIAS_ADDR=BIAS, QUANT_ADDR=QUANT, OFM_ZP=ozp, ACT_MIN=-128,
                            ACT_MAX=127)
    if op == Op.CONV:
        s.set(KERNEL_H=1, KERNEL_W=1, STRIDE_H=1, STRIDE_W=1, DILATION_H=1, DILATION_W=1)
    s.op(op).end()
    scale = mult * 2.0 ** (shift - 31)
    quant = np.array([mult, shift], np.int32) if op == Op.CONV else np.array([scale], "<f8")
    sram = sram_with(ifm=np.zeros(1, np.int8), wgt=np.ones(1, np.int8), bias=np.array([acc], np.int32), quant=quant)
    run = run_stream(CONFIG, s.encode(), sram=sram)
    rounded = requantize(acc, mult, shift) if op == Op.CONV else int(scale_rounded_once_array(acc, scale))
    assert int(run.sram[OFM:OFM + 1].view(np.int8)[0]) == max(-128, min(127, rounded + ozp))


def _dma_stream(double_buffered: bool, parallel_dma: int = 2) -> bytes:
    s = CommandStream().layer(double_buffered)
    for i in range(parallel_dma):
        s.set(DMA_BINDING=0, DMA_OFFSET=i * 100, DMA_SRAM_ADDR=i * 128, DMA_LENGTH=100).op(Op.DMA_READ)
    s.set(IFM_ADDR=0, IFM_H=1, IFM_W=1, IFM_C=100, OFM_ADDR=1024, OFM_H=1, OFM_W=1, OFM_C=100, ACT_MIN=-128,
          ACT_MAX=127).op(Op.ACT_RELU)
    s.set(DMA_BINDING=1, DMA_OFFSET=0, DMA_SRAM_ADDR=1024, DMA_LENGTH=100).op(Op.DMA_WRITE)
    return s.end().encode()


def test_dma_moves_data_and_layers_follow_the_cycle_model():
    source = np.arange(256, dtype=np.uint8)
    dest = np.zeros(100, np.uint8)
    for double_buffered in (False, True):
        run = run_stream(CONFIG, _dma_stream(double_buffered), bindings=[source, dest])
        np.testing.assert_array_equal(dest.view(np.int8), np.maximum(source[:100].view(np.int8), 0))
        dma = 3 * (100 // CONFIG.dma_bytes_per_cycle + DMA_OVERHEAD_CYCLES)
        compute = -(-100 // CONFIG.pes) + OP_OVERHEAD_CYCLES
        assert (run.counters.dma_cycles, run.counters.compute_cycles, run.counters.dma_bytes) == (dma, compute, 300)
        assert run.counters.cycles == (max(dma, compute) if double_buffered else dma + compute)
    # Doubling the PEs halves the element cycles; doubling the bandwidth the transfer cycles.
    wide = run_stream(HardwareConfig(pes=16, sram_bytes=CONFIG.sram_bytes, dma_bytes_per_cycle=8),
                      _dma_stream(False), bindings=[source, dest], execute=False)
    assert wide.counters.compute_cycles - OP_OVERHEAD_CYCLES == -(-100 // 16)
    assert wide.counters.dma_cycles == 3 * (-(-100 // 8) + DMA_OVERHEAD_CYCLES)


def test_estimate_equals_execution():
    source, dest = np.arange(256, dtype=np.uint8), np.zeros(100, np.uint8)
    executed = run_stream(CONFIG, _dma_stream(True), bindings=[source, dest])
    estimated = run_stream(CONFIG, _dma_stream(True), bindings=[source, dest], execute=False)
    assert executed.counters == estimated.counters and executed.layers == estimated.layers
    assert executed.instructions == estimated.instructions


def test_per_instruction_costs_add_up_to_the_layers():
    source, dest = np.arange(256, dtype=np.uint8), np.zeros(100, np.uint8)
    stream = _dma_stream(False)
    run = run_stream(CONFIG, stream, bindings=[source, dest])
    assert len(run.instructions) == run.counters.instructions
    for record in run.instructions:  # each record names its command
        assert decode(stream)[record.command_index][0] == record.opcode
    for index, layer in enumerate(run.layers):
        mine = [r for r in run.instructions if r.layer == index]
        assert sum(r.dma_cycles for r in mine) == layer.dma_cycles
        assert sum(r.compute_cycles for r in mine) == layer.compute_cycles
        assert sum(r.dma_bytes for r in mine) == layer.dma_bytes


BAD_STREAMS = {
    "unknown opcode": CommandStream().op(0x1E).end(),
    "register index out of range": CommandStream(commands=[(Op.SET, len(REGISTERS), 0), (Op.END, 0, 0)]),
    "does not end with END": CommandStream().set(IFM_H=1),
    "commands after END": CommandStream().end().set(IFM_H=1),
    "IFM shape out of 1..65535": CommandStream().op(Op.ACT_RELU).end(),
    "OFM outside the SRAM": CommandStream().set(IFM_H=1, IFM_W=1, IFM_C=4, OFM_H=1, OFM_W=1, OFM_C=4,
                                                OFM_ADDR=CONFIG.sram_bytes - 2).op(Op.ACT_RELU).end(),
    "DMA outside its binding": CommandStream().set(DMA_BINDING=0, DMA_OFFSET=250, DMA_LENGTH=10).op(Op.DMA_READ).end(),
    "binding the export does not have": CommandStream().set(DMA_BINDING=3, DMA_LENGTH=1).op(Op.DMA_READ).end(),
    "overlapping DMA": CommandStream().set(DMA_BINDING=0, DMA_LENGTH=10, DMA_SRAM_ADDR=0).op(Op.DMA_READ)
    .set(DMA_SRAM_ADDR=5).op(Op.DMA_READ).end(),
    "ACT_MIN above ACT_MAX": CommandStream().set(IFM_H=1, IFM_W=1, IFM_C=4, OFM_H=1, OFM_W=1, OFM_C=4, OFM_ADDR=8,
                                                 ACT_MIN=5, ACT_MAX=4).op(Op.ACT_RELU).end(),
    "DMA write to the constants": CommandStream().set(DMA_BINDING=0xFF, DMA_LENGTH=1).op(Op.DMA_WRITE).end(),
    "LAYOUT is not 0 (HWC) or 1 (CHW)": CommandStream().set(IFM_H=2, IFM_W=2, IFM_C=1, OFM_H=2, OFM_W=2, OFM_C=1,
                                                            OFM_ADDR=64, KERNEL_H=1, KERNEL_W=1, STRIDE_H=1,
                                                            STRIDE_W=1, ACT_MAX=127, LAYOUT=2).op(Op.POOL).end(),
    "the table outside the SRAM": _table_stream(4, CONFIG.sram_bytes - 255, 0, 16),
    "the OFM overlaps the table": _table_stream(64, 1024, 0, 1024 + 255),
    "the OFM overlaps the IFM (not in place)": _table_stream(64, 1024, 0, 32),
    "IFM outside the SRAM": _table_stream(64, 0, CONFIG.sram_bytes - 63, 256),
    "OP_E_MUL arg is not 0 (same), 1 (channels) or 2 (one)": _product_stream(8, 4, 3, 0, 64, 128),
    "the OFM overlaps the IFM2": _product_stream(8, 4, E_MUL_SAME, 0, 64, 60),
    "IFM2 outside the SRAM": _product_stream(8, 4, E_MUL_CHANNELS, 0, CONFIG.sram_bytes - 3, 128),
    "IFM2_ZP out of -128..127": _product_stream(8, 4, E_MUL_ONE, 0, 64, 128, IFM2_ZP=128),
}


@pytest.mark.parametrize("reason", list(BAD_STREAMS))
def test_validator_rejects_naming_the_command(reason):
    with pytest.raises(StreamError, match=reason.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")) as e:
        run_stream(CONFIG, BAD_STREAMS[reason].encode(), bindings=[np.zeros(256, np.uint8)], constants=b"\0" * 8,
                   execute=False)
    assert "command" in str(e.value)


def test_missing_instruction_is_rejected():
    stream = CommandStream().set(IFM_H=4, IFM_W=4, IFM_C=4, OFM_H=4, OFM_W=4, OFM_C=4, KERNEL_H=3, KERNEL_W=3)
    stream.op(Op.DEPTH_CONV).end()
    with pytest.raises(StreamError, match="not in this hardware configuration"):
        run_stream(CONFIG.without(Op.DEPTH_CONV), stream.encode(), execute=False)


def test_table_instruction_needs_the_configuration_s_flag():
    stream = _table_stream(16, 0, 256, 256).encode()
    run_stream(CONFIG, stream, execute=False)
    with pytest.raises(StreamError, match="not in this hardware configuration"):
        run_stream(CONFIG.without(Op.TABLE), stream, execute=False)


def test_a_set_to_the_value_a_register_holds_is_left_out():
    """Registers start at 0 in a stream and keep their values: a SET that
    changes nothing is not written, in set() and in dma() alike, nor a count of
    1 where the register already means 1 (0 counts as 1)."""
    s = CommandStream().set(IFM_H=0, IFM_W=3).set(IFM_W=3, IFM_H=2)
    s.dma(False, 0, 16, 0, 4, 1, 0, 0).dma(False, 0, 32, 0, 4, 1, 0, 0)
    register = {name: i for i, name in enumerate(REGISTERS)}
    assert s.commands == [
        (Op.SET, register["IFM_W"], 3), (Op.SET, register["IFM_H"], 2),
        (Op.SET, register["DMA_OFFSET"], 16), (Op.SET, register["DMA_LENGTH"], 4),
        (Op.DMA_READ, 0, 0), (Op.SET, register["DMA_OFFSET"], 32), (Op.DMA_READ, 0, 0)]
