"""Depthwise layers with a channel multiplier M > 1 on mynpu (output channel
o = c * M + m reads input channel c = o // M): OP_DEPTH_CONV over the M * C
output channels, each tile's input planes gathered by DMA from input channel
o // M (docs/mynpu-compiler.md). Against TFLite's integer arithmetic written
out here in numpy, on HWC and CHW tensors, untiled and tiled into a small
SRAM, with OP_DEPTH_CONV and emulated per channel. The whole path from a
.tflite model against TFLite's reference kernels is
tests/kernels/test_layer_sweeps.py's depthwise_multiplier sweep."""

from __future__ import annotations

import numpy as np
import pytest

from npukit.layer_recognition.layer_spec import LayerSpec
from npukit.mynpu.isa import HardwareConfig, Op, decode
from support.mynpu_streams import layer_tensor, requantized_int8, run_generated_layer


def _spec(rng, channels: int, multiplier: int, size: tuple[int, int], kernel: tuple[int, int],
          stride: tuple[int, int], dilation: tuple[int, int], layout: str) -> LayerSpec:
    oc = channels * multiplier
    (h, w), (kh, kw), (sh, sw), (dh, dw) = size, kernel, stride, dilation
    oh, ow = (h - (kh - 1) * dh - 1) // sh + 1, (w - (kw - 1) * dw - 1) // sw + 1
    multipliers = [(int(rng.integers(1 << 30, 1 << 31)), int(rng.integers(-12, -5))) for _ in range(oc)]
    return LayerSpec("depthwise", layer_tensor(0, (channels, h, w), layout), layer_tensor(1, (oc, oh, ow), layout),
                     (channels, h, w), (oc, oh, ow), kernel, stride, dilation,
                     rng.integers(-127, 128, (kh, kw, oc), dtype=np.int8),
                     rng.integers(-(1 << 16), 1 << 16, oc).astype(np.int32), multipliers,
                     int(rng.integers(-128, 128)), int(rng.integers(-20, 20)), -128, 127, False,
                     multiplier=multiplier)


def _reference(spec: LayerSpec, x: np.ndarray) -> np.ndarray:
    """TFLite's depthwise arithmetic: [OC][OH][OW] int8 from x [C][H][W]."""
    oc, oh, ow = spec.ofm_chw
    (kh, kw), (sh, sw), (dh, dw) = spec.kernel, spec.stride, spec.dilation
    planes = x.astype(np.int64)[np.arange(oc) // spec.multiplier] - spec.ifm_zp  # [OC][H][W]
    acc = np.zeros((oc, oh, ow), np.int64) + spec.bias.astype(np.int64)[:, None, None]
    for i in range(kh):
        for j in range(kw):
            window = planes[:, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
            acc += window * spec.weights[i, j].astype(np.int64)[:, None, None]
    return requantized_int8(spec, acc)


CASES = [
    # channels, multiplier, (h, w), kernel, stride, dilation
    (3, 2, (9, 8), (3, 3), (1, 1), (1, 1)),
    (5, 3, (11, 7), (3, 3), (2, 2), (1, 1)),
    (16, 4, (8, 8), (3, 3), (1, 1), (2, 2)),
    (2, 8, (7, 10), (5, 3), (2, 1), (1, 2)),
    (8, 2, (1, 12), (1, 5), (1, 2), (1, 1)),
]


@pytest.mark.parametrize("layout", ["HWC", "CHW"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"c{c[0]}m{c[1]}")
def test_depthwise_multiplier_is_exact(case, layout):
    rng = np.random.default_rng(case[0] * 10 + case[1])
    spec = _spec(rng, *case, layout=layout)
    x = rng.integers(-128, 128, spec.ifm_chw, dtype=np.int8)
    want = _reference(spec, x)
    whole = None
    for sram, mode, config in ((256 << 10, "instruction", HardwareConfig()),
                               (1024, "instruction", HardwareConfig(sram_bytes=1024)),
                               (256 << 10, "per-channel", HardwareConfig().without(Op.DEPTH_CONV))):
        got, plan, counters = run_generated_layer(spec, config, mode, x)
        np.testing.assert_array_equal(got, want, err_msg=f"{layout} {mode} {sram} bytes of SRAM")
        opcodes = {c[0] for c in decode(plan.stream)}
        assert (Op.DEPTH_CONV in opcodes) == (mode == "instruction")
        assert counters.macs == spec.macs
        whole = whole or plan
        if sram == 1024 and whole.sram_bytes > 1024:
            assert plan.channel_tile < spec.ofm_chw[0] or plan.row_tile < spec.ofm_chw[1]  # tiled


def test_depthwise_multiplier_reads_each_plane_once_per_output_channel():
    """The input DMA moves M times the input (each output channel's plane),
    the output DMA the output once."""
    rng = np.random.default_rng(1)
    spec = _spec(rng, 8, 4, (10, 10), (3, 3), (1, 1), (1, 1), "HWC")
    x = rng.integers(-128, 128, spec.ifm_chw, dtype=np.int8)
    _, plan, counters = run_generated_layer(spec, HardwareConfig(), "instruction", x)
    c, h, w = spec.ifm_chw
    oc, oh, ow = spec.ofm_chw
    constants = spec.weights.size + 4 * oc + 8 * oc
    assert counters.dma_bytes == 4 * c * h * w + oc * oh * ow + constants
