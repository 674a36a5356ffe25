"""Streams for layers in TFLite's HWC layout, from kws_int8.tflite's
recognised layers: depthwise convolutions emulated one OP_CONV per channel
(channel planes gathered and scattered by strided DMAs) compute exactly what
OP_DEPTH_CONV computes, also tiled; a fully connected layer that requantizes
with fixed-point multipliers (a 1x1 convolution over one pixel, as
TFLite's CONV_2D gives it) runs as that convolution."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from npukit.exploration.recognition import recognise
from npukit.mynpu.isa import HardwareConfig, Op, decode
from npukit.mynpu.simulator import run_stream
from npukit.mynpu.stream_generator import Constants, generate
from npukit.quantization.fixed_point_reference import multiply_by_quantized_multiplier_array


@pytest.fixture(scope="module")
def kws_tflite(shared_models):
    return recognise(shared_models / "kws_int8.tflite")


def _run(spec, binding_count, config, mode, inputs):
    constants = Constants()
    plan = generate(spec, config, constants, binding_count, mode)
    bindings = [np.zeros(max(n, 1), np.uint8) for n in plan.binding_sizes]
    i = spec.ifm.tensor
    bindings[i.binding][i.offset:i.offset + inputs.size] = inputs
    run = run_stream(config, plan.stream, bindings, bytes(constants.data), max_instructions=1)
    o = spec.ofm.tensor
    return bindings[o.binding][o.offset:o.extent].copy(), plan, run.counters


@pytest.mark.parametrize("sram_kib", [256, 4])
def test_depthwise_per_channel_on_hwc_tensors(kws_tflite, sram_kib):
    layers = [d for d in kws_tflite.dispatches if d.spec is not None and d.spec.kind == "depthwise"]
    assert len(layers) == 4 and all(d.spec.ifm.layout == "HWC" for d in layers)
    config = HardwareConfig(sram_bytes=sram_kib * 1024)
    rng = np.random.default_rng(sram_kib)
    for d in layers:
        x = rng.integers(0, 256, int(np.prod(d.spec.ifm.tensor.shape)), dtype=np.uint8)
        native, _, native_counters = _run(d.spec, d.binding_count, config, "instruction", x)
        emulated, plan, counters = _run(d.spec, d.binding_count, config.without(Op.DEPTH_CONV), "per-channel", x)
        np.testing.assert_array_equal(emulated, native)
        assert plan.depthwise_mode == "per-channel" and counters.cycles > native_counters.cycles
        if sram_kib == 4:
            assert plan.channel_tile < d.spec.ofm_chw[0]  # tiled


def test_fully_connected_with_fixed_point_multipliers_is_a_1x1_convolution(kws_tflite):
    dense = next(d for d in kws_tflite.dispatches if d.spec is not None and d.spec.kind == "fully_connected")
    spec = dataclasses.replace(dense.spec, scales=None)
    n, k = spec.weights.shape
    rng = np.random.default_rng(4)
    for sram_kib in (256, 1):
        x = rng.integers(0, 256, k, dtype=np.uint8)
        got, plan, _ = _run(spec, dense.binding_count, HardwareConfig(sram_bytes=sram_kib * 1024), "instruction", x)
        opcodes = [c[0] for c in decode(plan.stream)]
        assert Op.CONV in opcodes and Op.MAT_MUL not in opcodes
        acc = spec.bias.astype(np.int64) + spec.weights.astype(np.int64) @ (x.view(np.int8).astype(np.int64)
                                                                           - spec.ifm_zp)
        multipliers = np.array([m for m, _ in spec.multipliers])
        shifts = np.array([s for _, s in spec.multipliers])
        expected = np.clip(multiply_by_quantized_multiplier_array(acc, multipliers, shifts) + spec.ofm_zp,
                           spec.act_min, spec.act_max).astype(np.int8)
        np.testing.assert_array_equal(got.view(np.int8), expected)


def _table_spec(n: int, in_offset: int, out_binding: int, table: np.ndarray):
    from npukit.layer_recognition.dispatch_ir import SystemTensor
    from npukit.layer_recognition.layer_spec import LayerSpec, TensorLayout

    def flat(binding, offset):
        return TensorLayout(SystemTensor(binding, offset, (n,), "i8", (0,), (n,)), ("W",))

    return LayerSpec("table", flat(0, in_offset), flat(out_binding, 0), (1, 1, n), (1, 1, n), (1, 1), (1, 1),
                     (1, 1), table, np.zeros(1, np.int32), [(0, 0)], 0, 0, -128, 127, False)


@pytest.mark.parametrize("n,sram_kib,tiles", [(1, 256, 1), (1003, 4, 1), (5000, 4, 3), (65535, 256, 1),
                                              (200_001, 256, 4)])
def test_table_layers(n, sram_kib, tiles):
    """A table layer: the table by one DMA in a layer of its own, then tiles
    of at most 65,535 elements (two buffers alternating, double-buffered,
    when they do not fit the SRAM at once), each looked up in place: every
    element is the table's entry for it, at any offset in the binding."""
    rng = np.random.default_rng(n)
    table = rng.integers(-128, 128, 256, dtype=np.int8)
    x = rng.integers(-128, 128, n, dtype=np.int8)
    config = HardwareConfig(sram_bytes=sram_kib * 1024)
    spec = _table_spec(n, 5, 1, table)
    got, plan, counters = _run(spec, 2, config, "instruction", x.view(np.uint8))
    np.testing.assert_array_equal(got.view(np.int8), table[x.astype(np.int32) + 128])
    ops = [op for op, _, _ in decode(plan.stream)]
    assert ops.count(Op.TABLE) == tiles and plan.double_buffered == (tiles > 1)
    assert counters.layers == tiles + 1 and counters.macs == 0 and plan.sram_bytes <= config.sram_bytes
    assert counters.dma_bytes == 256 + 2 * n


def test_table_of_another_size_is_refused():
    from npukit.layer_recognition.layer_spec import NotSupported

    with pytest.raises(NotSupported, match="a table of 255 entries"):
        generate(_table_spec(8, 0, 1, np.zeros(255, np.int8)), HardwareConfig(), Constants(), 2)


def _pool_spec(kind: str, shape: tuple[int, int, int], kernel, stride, bounds=(-128, 127), window=None):
    """A pool of the int8 HWC tensor of ``shape`` (H, W, C) in binding 0 at
    offset 3 (``window``: the channels [c0, c1) of a wider tensor), its
    output in binding 1."""
    from npukit.layer_recognition.dispatch_ir import SystemTensor
    from npukit.layer_recognition.layer_spec import LayerSpec, TensorLayout

    h, w, c = shape
    (kh, kw), (sh, sw) = kernel, stride
    oh, ow = (h - kh) // sh + 1, (w - kw) // sw + 1
    c0, c1 = window or (0, c)
    ifm = TensorLayout(SystemTensor(0, 3, (1, h, w, c), "i8", (0, 0, 0, c0), (1, h, w, c1 - c0)),
                       (None, "H", "W", "C"))
    ofm = TensorLayout(SystemTensor(1, 0, (1, oh, ow, c1 - c0), "i8", (0, 0, 0, 0), (1, oh, ow, c1 - c0)),
                       (None, "H", "W", "C"))
    return LayerSpec(kind, ifm, ofm, (c1 - c0, h, w), (c1 - c0, oh, ow), kernel, stride, (1, 1), np.zeros(0, np.int8),
                     np.zeros(0, np.int32), None, 0, 0, *bounds, False)


def _pooled(spec, x: np.ndarray) -> np.ndarray:
    """TFLite's int8 pool of ``x`` (H, W, C), on its integers."""
    from npukit.layer_recognition.int8_pool import rounded_average

    (kh, kw), (sh, sw) = spec.kernel, spec.stride
    _, oh, ow = spec.ofm_chw
    windows = np.stack([x[i * sh:i * sh + kh, j * sw:j * sw + kw].reshape(kh * kw, -1)
                        for i in range(oh) for j in range(ow)]).astype(np.int64)
    got = rounded_average(windows.sum(1), kh * kw) if spec.kind == "average_pool" else windows.max(1)
    return np.clip(got, spec.act_min, spec.act_max).reshape(oh, ow, -1).astype(np.int8)


@pytest.mark.parametrize("kind,shape,kernel,stride,sram_kib,bounds,window,tiled", [
    ("average_pool", (10, 12, 24), (2, 2), (2, 2), 256, (-128, 127), None, ""),  # one tile
    ("max_pool", (33, 20, 37), (3, 3), (2, 2), 1, (-20, 127), None, "CH"),  # halves of the SRAM: bands
    ("max_pool", (3, 200, 5), (3, 3), (1, 1), 1, (-128, 127), None, "C1"),  # one row of a channel: over half
    ("max_pool", (60, 40, 37), (3, 3), (2, 2), 1, (-20, 127), None, "CH"),  # channel tiles and row bands
    ("average_pool", (30, 30, 40), (5, 5), (1, 1), 1, (0, 100), None, "CH"),  # bands whose input rows overlap
    ("max_pool", (11, 11, 20), (3, 2), (3, 2), 256, (-128, 127), None, ""),  # rows and columns left unread
    ("average_pool", (10, 12, 32), (3, 3), (2, 2), 1, (-128, 127), (8, 24), "C"),  # channels 8..23 of 32
    ("average_pool", (16, 17, 8), (16, 16), (1, 1), 256, (-128, 127), None, ""),  # 256 values a window
])
def test_pool_layers(kind, shape, kernel, stride, sram_kib, bounds, window, tiled):
    """OP_POOL tiles: every output is TFLite's integer average (rounded half
    away from zero) or maximum of its window, clamped, whatever the tiles
    (``tiled``: C tiles of channels, H bands of output rows, 1 a single
    buffer set); each tile one OP_POOL, the buffers within the SRAM, in two
    sets of half the SRAM where a tile fits one."""
    h, w, c = shape
    rng = np.random.default_rng(sum(shape))
    x = rng.integers(-128, 128, h * w * c, dtype=np.int8)
    spec = _pool_spec(kind, shape, kernel, stride, bounds, window)
    config = HardwareConfig(sram_bytes=sram_kib * 1024)
    got, plan, counters = _run(spec, 2, config, "instruction", x.view(np.uint8))
    c0, c1 = window or (0, c)
    want = _pooled(spec, x.reshape(h, w, c)[:, :, c0:c1])
    np.testing.assert_array_equal(got.view(np.int8).reshape(want.shape), want)
    channels, rows = -(-spec.ofm_chw[0] // plan.channel_tile), -(-spec.ofm_chw[1] // plan.row_tile)
    assert ("C" if channels > 1 else "") + ("H" if rows > 1 else "") == tiled.rstrip("1")
    assert [op for op, _, _ in decode(plan.stream)].count(Op.POOL) == channels * rows == counters.layers
    assert plan.sram_bytes <= config.sram_bytes
    assert plan.double_buffered == (channels * rows > 1 and not tiled.endswith("1"))


def test_global_pool_of_a_flattened_plane():
    """A global pool IREE flattened into one dimension of 256 values (a
    window side OP_POOL does not take) runs on the plane as 16 x 16; one of
    257 values (no rectangle of sides up to 255) is refused with the reason,
    and so is a window side of 256 that is not a global pool."""
    from npukit.layer_recognition.dispatch_ir import SystemTensor
    from npukit.layer_recognition.layer_spec import LayerSpec, NotSupported, TensorLayout

    def flat(n: int, c: int, kernel=None):
        kernel = kernel or (n, 1)
        oh = n - kernel[0] + 1
        ifm = TensorLayout(SystemTensor(0, 0, (n, c), "i8", (0, 0), (n, c)), ("H", "C"))
        ofm = TensorLayout(SystemTensor(1, 0, (oh, c), "i8", (0, 0), (oh, c)), ("H", "C"))
        return LayerSpec("average_pool", ifm, ofm, (c, n, 1), (c, oh, 1), kernel, (1, 1), (1, 1),
                         np.zeros(0, np.int8), np.zeros(0, np.int32), None, 0, 0, -128, 127, False)

    rng = np.random.default_rng(256)
    x = rng.integers(-128, 128, 256 * 6, dtype=np.int8)
    spec = flat(256, 6)
    got, plan, _ = _run(spec, 2, HardwareConfig(), "instruction", x.view(np.uint8))
    sums = x.reshape(256, 6).astype(np.int64).sum(0)
    from npukit.layer_recognition.int8_pool import rounded_average

    np.testing.assert_array_equal(got.view(np.int8), rounded_average(sums, 256))
    registers = {}
    for op, arg, value in decode(plan.stream):
        if op == Op.SET:
            registers[arg] = value
    from npukit.mynpu.isa import REGISTER

    assert [registers[REGISTER[n]] for n in ("IFM_H", "IFM_W", "KERNEL_H", "KERNEL_W")] == [16, 16, 16, 16]
    with pytest.raises(NotSupported, match="a pool window of 257x1"):
        generate(flat(257, 2), HardwareConfig(), Constants(), 2)
    with pytest.raises(NotSupported, match="a pool window of 256x1"):
        generate(flat(300, 2, (256, 1)), HardwareConfig(), Constants(), 2)


def _product_spec(rows: int, channels: int, broadcast: str, fx, fy, multiplier: int, shift: int, zp: int, bounds):
    """A product of x (``rows`` x ``channels``, binding 0) and y (binding 1:
    "none" the same shape, "rows" one value per channel, "all" one value),
    its factors tabulated on the 256 int8 values, the output in binding 2."""
    from npukit.layer_recognition.dispatch_ir import SystemTensor
    from npukit.layer_recognition.elementwise_product import factor_bytes
    from npukit.layer_recognition.layer_spec import LayerSpec, TensorLayout

    def tensor(binding, shape, roles):
        return TensorLayout(SystemTensor(binding, 0, shape, "i8", (0,) * len(shape), shape), roles)

    operand = {"none": tensor(1, (rows, channels), ("W", "C")), "rows": tensor(1, (channels,), ("C",)),
               "all": tensor(1, (1,), (None,))}[broadcast]
    spec = LayerSpec("mul", tensor(0, (rows, channels), ("W", "C")), tensor(2, (rows, channels), ("W", "C")),
                     (channels, 1, rows), (channels, 1, rows), (1, 1), (1, 1), (1, 1), factor_bytes(fx, fy),
                     np.zeros(1, np.int32), [(multiplier, shift)], 0, zp, *bounds, False)
    spec.operand = operand
    return spec


_VALUES = np.arange(-128, 128)
_GATE = np.round(255 / (1 + np.exp(-_VALUES / 16))).astype(np.int64)  # a LOGISTIC gate's factor, 0 .. 255


@pytest.mark.parametrize("rows,channels,broadcast,fx,fy,sram_kib,tables", [
    (256, 16, "rows", _VALUES + 3, _GATE, 256, "y"),  # squeeze-and-excitation: x - zx times a gate per channel
    (300, 40, "none", _VALUES - 20, _VALUES + 128, 4, ""),  # two tensors, tiles in halves of the SRAM
    (1000, 24, "none", _GATE, _VALUES // 2, 8, "xy"),  # both factors tables
    (600, 24, "rows", _GATE, _GATE - 128, 4, "xy"),  # both, y's looked up once
    (77, 5, "all", _VALUES + 128, _VALUES - 127, 256, ""),  # one value, factors up to 255 x 255
])
def test_product_layers(rows, channels, broadcast, fx, fy, sram_kib, tables):
    """OP_E_MUL streams: every output is clamp(MBQM(fx(x) * fy(y), M,
    shift) + zp), a factor that is not its value less an int8 zero point
    looked up by OP_TABLE first (once for a broadcast operand), in tiles of
    rows where the SRAM needs them."""
    from npukit.quantization.fixed_point_reference import multiply_by_quantized_multiplier_array

    rng = np.random.default_rng(rows)
    spec = _product_spec(rows, channels, broadcast, fx, fy, 1518500250, -9, -3, (-120, 127))
    x = rng.integers(-128, 128, rows * channels, dtype=np.int8)
    size = {"none": rows * channels, "rows": channels, "all": 1}[broadcast]
    y = rng.integers(-128, 128, size, dtype=np.int8)
    config = HardwareConfig(sram_bytes=sram_kib * 1024)
    constants = Constants()
    plan = generate(spec, config, constants, 3)
    bindings = [x.view(np.uint8).copy(), y.view(np.uint8).copy(), np.zeros(rows * channels, np.uint8)]
    run = run_stream(config, plan.stream, bindings, bytes(constants.data), max_instructions=1)
    wide = np.broadcast_to(y, (rows, channels)).reshape(-1) if broadcast == "rows" else np.resize(y, rows * channels)
    product = fx[x.astype(np.int64) + 128] * fy[wide.astype(np.int64) + 128]
    want = np.clip(multiply_by_quantized_multiplier_array(product, 1518500250, -9) - 3, -120, 127)
    np.testing.assert_array_equal(bindings[2].view(np.int8), want)
    ops = [op for op, _, _ in decode(plan.stream)]
    tiles = -(-rows // plan.row_tile)
    assert ops.count(Op.E_MUL) == tiles and (tiles > 1) == (sram_kib < 256) == plan.double_buffered
    y_lookups = tiles if broadcast == "none" else 1  # a broadcast y is looked up once
    assert ops.count(Op.TABLE) == ("x" in tables) * tiles + ("y" in tables) * y_lookups
    assert plan.sram_bytes <= config.sram_bytes and run.counters.macs == 0


def test_product_factor_without_an_int8_form_is_refused():
    """A factor spanning 256 values whose every int8 table needs a zero point
    outside int8 (128 .. 383: table = factor - c with c from 256 to 255) has
    no OP_E_MUL form: refused with the reason, before any stream."""
    from npukit.layer_recognition.layer_spec import NotSupported
    from npukit.mynpu.options import MynpuOptions
    from npukit.mynpu.supported_operators import check_npu_supported

    spec = _product_spec(4, 4, "none", _VALUES + 256, _VALUES, 1 << 30, -1, 0, (-128, 127))
    with pytest.raises(NotSupported, match="a product factor spanning 128..383"):
        check_npu_supported(spec, MynpuOptions())
    with pytest.raises(NotSupported, match="no OP_E_MUL"):
        check_npu_supported(_product_spec(4, 4, "none", _VALUES, _VALUES, 1 << 30, -1, 0, (-128, 127)),
                            MynpuOptions(mul=False))


@pytest.mark.parametrize("shape,sram_kib", [((16, 16, 16), 256), ((30, 30, 40), 1)])
def test_mean_layers(shape, sram_kib):
    """TFLite's MEAN as OP_POOL's mean: MBQM(sum - zx * n, M, shift) + zy,
    clamped, IFM_ZP the bias over the count; whole or in tiles."""
    from npukit.layer_recognition.int8_pool import mean_output
    from npukit.layer_recognition.layer_spec import NotSupported
    from npukit.mynpu.options import MynpuOptions
    from npukit.mynpu.supported_operators import check_npu_supported

    h, w, c = shape
    spec = _pool_spec("mean", shape, (h, w), (1, 1), (-100, 127))
    n = h * w
    spec.bias, spec.multipliers, spec.ofm_zp = np.full(c, 5 * n, np.int32), [(1518500250, -9)] * c, 17
    rng = np.random.default_rng(n)
    x = rng.integers(-128, 128, n * c, dtype=np.int8)
    config = HardwareConfig(sram_bytes=sram_kib * 1024)
    got, plan, _ = _run(spec, 2, config, "instruction", x.view(np.uint8))
    want = mean_output(x.reshape(n, c).astype(np.int64).sum(0), 5 * n, 1518500250, -9, 17, -100, 127)
    np.testing.assert_array_equal(got.view(np.int8), want)
    assert (plan.channel_tile < c) == (sram_kib < 256)
    check_npu_supported(spec, MynpuOptions())
    spec.bias = np.full(c, 5 * n + 1, np.int32)
    with pytest.raises(NotSupported, match="not an int8 input zero point times"):
        check_npu_supported(spec, MynpuOptions())
    spec.bias, spec.multipliers = np.full(c, 5 * n, np.int32), [(1518500250, -9)] * (c - 1) + [(1 << 30, -9)]
    with pytest.raises(NotSupported, match="requantize differently"):
        check_npu_supported(spec, MynpuOptions())
