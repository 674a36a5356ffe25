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
