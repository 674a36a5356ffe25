"""A hand-written stream for the first convolution of kws_int8 (its weights,
biases and scales taken from the model) reproduces TFLite's integer result of
that layer exactly, and its cycles follow the documented model as the
processing elements double or the SRAM halves.

TFLite runs with its reference kernels (BUILTIN_REF), whose requantization is
the integer arithmetic the ISA specifies; the optimised kernels may round
through floating point."""

from __future__ import annotations

import numpy as np
import pytest

from npukit.mynpu.isa import HardwareConfig
from npukit.mynpu.simulator import run_stream, validate_executable
from support.mynpu_streams import conv_executable, conv_macs, conv_stream, expected_conv_cycles, tflite_first_conv


@pytest.fixture(scope="module")
def kws_conv(shared_models):
    return tflite_first_conv(shared_models / "kws_int8.tflite")


def run_layer(layer, config, x, double_buffered=False):
    stream, constants, tile = conv_stream(layer, config, double_buffered)
    out = np.zeros(layer.output_shape, np.int8)
    run = run_stream(config, stream, [np.ascontiguousarray(x), out], constants)
    return out, run, tile


def test_the_layer_is_what_the_test_expects(kws_conv):
    layer, _ = kws_conv
    assert (layer.input_shape, layer.output_shape) == ((49, 10, 1), (25, 5, 64))
    assert layer.weights.shape == (64, 10, 4, 1) and layer.stride == (2, 2) and layer.relu


@pytest.mark.parametrize("sram_kib,double_buffered", [(256, False), (8, True), (2, False)])
def test_matches_tflite_exactly(kws_conv, rng, sram_kib, double_buffered):
    layer, reference = kws_conv
    config = HardwareConfig(sram_bytes=sram_kib * 1024)
    validate_executable(conv_executable(layer, config, double_buffered=double_buffered))
    for _ in range(5):
        x = rng.integers(-128, 128, layer.input_shape, dtype=np.int8)
        out, run, _ = run_layer(layer, config, x, double_buffered)
        np.testing.assert_array_equal(out, reference(x))
        assert run.counters.macs == conv_macs(layer)


def test_cycles_when_the_processing_elements_double(kws_conv, rng):
    layer, _ = kws_conv
    x = rng.integers(-128, 128, layer.input_shape, dtype=np.int8)
    out_channels = layer.output_shape[2]
    previous = None
    for pes in (8, 16, 32, 64, 128, 256):
        config = HardwareConfig(pes=pes)
        _, run, tile = run_layer(layer, config, x)
        assert run.counters.cycles == expected_conv_cycles(layer, config, tile, False)
        conv = [i for i in run.instructions if i.macs]
        assert len(conv) == 1 and conv[0].macs == conv_macs(layer)
        utilisation = run.counters.utilisation(pes)
        if previous is not None:
            if pes <= out_channels:  # more PEs still find output channels to work on
                assert conv[0].compute_cycles < previous[0] and utilisation == pytest.approx(previous[1], rel=0.01)
            else:  # nothing left to parallelise: the same time, half the utilisation
                assert conv[0].compute_cycles == previous[0] and utilisation < previous[1]
        previous = (conv[0].compute_cycles, utilisation)


def test_cycles_when_the_sram_halves(kws_conv, rng):
    layer, _ = kws_conv
    x = rng.integers(-128, 128, layer.input_shape, dtype=np.int8)
    previous = None
    for sram_kib in (16, 8, 4, 2):
        config = HardwareConfig(sram_bytes=sram_kib * 1024)
        _, run, tile = run_layer(layer, config, x)
        assert run.counters.cycles == expected_conv_cycles(layer, config, tile, False)
        assert run.counters.sram_high_water <= config.sram_bytes
        assert run.counters.layers == 1 + layer.output_shape[2] // tile
        if previous is not None:
            # Half the SRAM, half the channels per tile: the same bytes move in
            # more transfers, and each tile uses fewer of the 64 PEs.
            assert tile == previous.tile // 2
            assert run.counters.dma_bytes == previous.run.counters.dma_bytes
            assert run.counters.dma_cycles > previous.run.counters.dma_cycles
            assert run.counters.cycles > previous.run.counters.cycles
        previous = type("Previous", (), {"tile": tile, "run": run})


def test_double_buffering_takes_the_larger_of_compute_and_dma(kws_conv, rng):
    layer, _ = kws_conv
    x = rng.integers(-128, 128, layer.input_shape, dtype=np.int8)
    config = HardwareConfig(sram_bytes=4096)
    _, serial, tile = run_layer(layer, config, x, double_buffered=False)
    _, overlapped, _ = run_layer(layer, config, x, double_buffered=True)
    assert overlapped.counters.cycles == expected_conv_cycles(layer, config, tile, True)
    assert overlapped.counters.cycles < serial.counters.cycles
    for layer_counters in overlapped.layers[1:]:
        assert layer_counters.cycles == max(layer_counters.compute_cycles, layer_counters.dma_cycles)


def test_input_parallelism_follows_its_formula(kws_conv, rng):
    layer, _ = kws_conv
    x = rng.integers(-128, 128, layer.input_shape, dtype=np.int8)
    by_output = HardwareConfig(parallelism="output")
    by_input = HardwareConfig(parallelism="input")
    out_o, run_o, tile = run_layer(layer, by_output, x)
    out_i, run_i, _ = run_layer(layer, by_input, x)
    np.testing.assert_array_equal(out_o, out_i)
    assert run_i.counters.cycles == expected_conv_cycles(layer, by_input, tile, False)
    # One input channel: input parallelism leaves 63 of 64 PEs idle.
    assert run_i.counters.compute_cycles > run_o.counters.compute_cycles
