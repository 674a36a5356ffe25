"""Seeded sweeps over the parameters of the quantized layers npukit's
kernels and the mynpu NPU run: each sweep is one .tflite model of many
independent single-layer branches (so one compile and one firmware cover
it), with the odd cases real models have: channel counts that are no
multiple of 4, odd sizes, strides, dilations, both paddings, channel
multipliers, fused ReLU/ReLU6, per-tensor and per-channel weights, extreme
zero points and large biases."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from support.tflite_builder import Branch, Spec

SAME, VALID = 0, 1
NONE, RELU, RELU6 = 0, 1, 3


def _out_size(size: int, kernel: int, stride: int, dilation: int, padding: int) -> int:
    effective = (kernel - 1) * dilation + 1
    return (size + stride - 1) // stride if padding == SAME else (size + stride - effective) // stride


def _weights(rng, shape, channels: int, axis: int, per_channel: bool):
    w = rng.integers(-127, 128, shape, dtype=np.int8)
    scale = rng.uniform(0.002, 0.02, channels).astype(np.float32) if per_channel else \
        np.float32(rng.uniform(0.002, 0.02))
    return Spec.constant(w, scale, 0, axis)


def _bias(rng, channels: int, large: bool, x: Spec, w: Spec):
    """int32 biases in units of the accumulator (scale s_in * s_w, as TFLite requires)."""
    bound = 1 << 26 if large else 1 << 14
    scale = np.broadcast_to(np.float32(x.scale) * np.asarray(w.scale, np.float32), (channels,)).astype(np.float32)
    return Spec.constant(rng.integers(-bound, bound, channels).astype(np.int32), scale, 0)


def _input(rng, shape, zero_point: int):
    return Spec(tuple(shape), np.int8, np.float32(rng.uniform(0.01, 0.1)), zero_point)


def _output(rng, shape, zero_point: int | None = None):
    zp = int(rng.integers(-20, 20)) if zero_point is None else zero_point
    return Spec(tuple(shape), np.int8, np.float32(rng.uniform(0.05, 0.5)), zp)


def depthwise_sweep(seed: int = 0) -> list[Branch]:
    rng = np.random.default_rng(seed)
    cases = [
        # channels, multiplier, (h, w), kernel, stride, dilation, padding, activation, per_channel, zp, large bias
        (1, 8, (13, 9), (3, 3), (2, 2), (1, 1), VALID, RELU, True, -128, False),  # micro_speech's form
        (4, 1, (7, 7), (3, 3), (1, 1), (1, 1), SAME, NONE, True, 0, False),
        (5, 1, (6, 9), (3, 3), (1, 1), (1, 1), SAME, RELU6, True, -128, False),
        (8, 1, (9, 5), (3, 3), (2, 2), (1, 1), SAME, RELU, True, 5, True),
        (13, 1, (5, 6), (5, 5), (1, 1), (1, 1), SAME, NONE, False, -3, False),
        (16, 1, (8, 8), (3, 3), (1, 1), (2, 2), SAME, RELU6, True, -128, False),
        (3, 2, (6, 6), (3, 3), (1, 1), (1, 1), VALID, NONE, True, 10, False),
        (6, 3, (5, 4), (3, 3), (2, 1), (1, 1), SAME, RELU, True, -128, False),
        (12, 1, (1, 10), (1, 5), (1, 1), (1, 1), SAME, NONE, True, 0, False),
        (9, 1, (10, 1), (3, 1), (1, 1), (1, 1), VALID, NONE, True, 127, False),
        (33, 1, (4, 5), (3, 3), (1, 2), (1, 1), SAME, RELU, False, -128, True),
        (4, 1, (11, 11), (7, 7), (2, 2), (1, 1), SAME, NONE, True, -128, False),
    ]
    return _depthwise_branches(rng, cases)


def depthwise_multiplier_sweep(seed: int = 7) -> list[Branch]:
    """DEPTHWISE_CONV_2D with channel multipliers M in {2, 3, 4, 8} over C in
    {1, 2, 3, 5, 8, 16} input channels (output channel c * M + m reads input
    channel c): both strides and dilations, both paddings, odd sizes,
    per-tensor and per-channel weights, large biases, one output pixel.
    16 branches: npukit's runtime takes at most 16 inputs."""
    rng = np.random.default_rng(seed)
    cases = [
        # channels, multiplier, (h, w), kernel, stride, dilation, padding, activation, per_channel, zp, large bias
        (3, 2, (9, 9), (3, 3), (2, 2), (1, 1), VALID, NONE, False, 4, True),
        (5, 2, (6, 7), (3, 3), (1, 1), (2, 2), SAME, RELU, True, -9, False),
        (8, 2, (5, 5), (5, 5), (2, 2), (1, 1), SAME, NONE, True, 0, True),
        (16, 2, (6, 6), (3, 3), (1, 1), (1, 1), VALID, RELU6, True, -128, False),  # a MobileNet-like block
        (2, 3, (11, 7), (3, 5), (2, 1), (2, 1), VALID, RELU, False, -128, False),
        (3, 3, (4, 9), (1, 3), (1, 1), (1, 2), SAME, NONE, True, 127, True),
        (16, 3, (3, 5), (3, 3), (2, 2), (1, 1), SAME, RELU, False, -3, False),
        (1, 4, (6, 6), (3, 3), (2, 2), (2, 2), SAME, NONE, True, -128, True),
        (5, 4, (7, 7), (3, 3), (1, 1), (1, 1), SAME, RELU, True, 30, False),
        (8, 4, (9, 6), (3, 3), (2, 2), (2, 2), VALID, NONE, True, -60, False),
        (2, 8, (5, 3), (3, 3), (1, 1), (1, 1), SAME, NONE, False, -128, True),
        (3, 8, (8, 5), (2, 2), (2, 1), (1, 1), VALID, RELU6, True, 0, False),
        (8, 8, (4, 4), (3, 3), (1, 1), (2, 2), SAME, RELU, True, -20, False),
        (5, 3, (1, 12), (1, 5), (1, 2), (1, 1), SAME, NONE, True, 2, False),  # a 1-d layer
        (3, 2, (5, 5), (5, 5), (1, 1), (1, 1), VALID, RELU, False, -7, False),  # one output pixel
        (5, 3, (7, 1), (7, 1), (1, 1), (1, 1), VALID, NONE, True, 3, True),  # one output pixel of a 1-d layer
    ]
    return _depthwise_branches(rng, cases)


def depthwise_quad_sweep(seed: int = 8) -> list[Branch]:
    """Channel-last 3x3 DEPTHWISE_CONV_2D with small accumulators, the DSP
    cores' four-channel path that requantizes in registers: strides and
    dilations 1 and 2 along each axis, every activation form (none, ReLU's
    lower bound at the output zero point, ReLU6's both bounds), channels
    beyond a multiple of four, one output row, column or pixel."""
    rng = np.random.default_rng(seed)
    cases = [
        # channels, multiplier, (h, w), kernel, stride, dilation, padding, activation, per_channel, zp, large bias
        (12, 1, (5, 7), (3, 3), (1, 1), (1, 1), VALID, RELU6, True, 3, False),
        (4, 1, (3, 3), (3, 3), (1, 1), (1, 1), VALID, NONE, False, -128, False),  # one output pixel
        (20, 1, (1, 9), (3, 3), (1, 1), (1, 1), SAME, RELU, True, 0, False),  # one output row
        (8, 1, (7, 1), (3, 3), (2, 1), (1, 1), SAME, RELU6, True, -7, False),  # one output column
        (16, 1, (10, 5), (3, 3), (2, 1), (1, 2), SAME, RELU6, True, -128, False),
        (7, 1, (6, 6), (3, 3), (1, 1), (1, 1), SAME, RELU, False, 12, False),  # a quad and three channels
        (64, 1, (7, 5), (3, 3), (1, 1), (1, 1), SAME, RELU, True, -128, False),  # kws's form
        (24, 1, (9, 8), (3, 3), (2, 2), (1, 1), SAME, RELU, True, 60, False),
        # Pairs of output pixels per pass (pixel B one or two window columns right of A) and an odd last
        # column on the single-pixel loop (planes of at least 3 pairs, 9 with an odd column); the last two
        # with the extreme requantization the small path takes: a multiplier near 2^31 with a right shift
        # of 1, and right shifts of 21 to 23 (quads of shifts up to 22, the largest the pairs take, on the
        # pairs, one with 23 on the single-pixel loop).
        (12, 1, (7, 10), (3, 3), (1, 1), (1, 1), VALID, RELU6, True, 3, False),  # even width
        (9, 1, (6, 9), (3, 3), (1, 1), (1, 1), VALID, RELU, False, -128, False),  # odd width, 2 quads and 1
        (20, 1, (11, 15), (3, 3), (2, 2), (1, 1), VALID, RELU6, True, 10, False),  # stride 2, odd width
        (16, 1, (8, 12), (3, 3), (2, 2), (1, 1), SAME, NONE, False, 0, False),  # stride 2, int8's bounds
        (6, 2, (7, 9), (3, 3), (1, 1), (1, 1), VALID, RELU6, True, -3, False),  # multiplier 2, odd width
        (8, 2, (9, 10), (3, 3), (2, 2), (1, 1), SAME, RELU, True, 5, False),  # multiplier 2, stride 2
        (8, 1, (5, 8), (3, 3), (1, 1), (1, 1), VALID, NONE, False, -128, False, 0.4999),
        (13, 1, (6, 9), (3, 3), (1, 1), (1, 1), VALID, RELU, True, 7, True, 0.9 * 2.0**-21),
    ]
    return _depthwise_branches(rng, cases)



def depthwise_tiles_sweep(seed: int = 12) -> list[Branch]:
    """Padded channel-last DEPTHWISE_CONV_2D whose padded window rows exceed
    the kernels' 4 KiB strip (the DSP cores' tiles: the interior read in
    place, the border pixels from windows of a group of channels): padding
    on every side (SAME at strides 1 and 2, dilation 2), channels not a
    multiple of four, rows too wide for one window of four channels, no
    interior at all, kernels other than 3x3 and large accumulators; and
    channel-last layers with a channel multiplier of 2 (padded or not),
    which the DSP cores run four output channels at a time too."""
    rng = np.random.default_rng(seed)
    cases = [
        # channels, multiplier, (h, w), kernel, stride, dilation, padding, activation, per_channel, zp, large bias
        (96, 1, (6, 16), (3, 3), (1, 1), (1, 1), SAME, RELU6, True, -128, False),  # MobileNetV2's expansion
        (50, 1, (7, 30), (3, 3), (2, 2), (1, 1), SAME, RELU, True, 5, False),  # pads top, bottom, right
        (148, 1, (6, 9), (3, 3), (2, 2), (1, 1), SAME, RELU6, True, -128, False),  # 37 quads
        (36, 1, (9, 40), (3, 3), (1, 1), (2, 2), SAME, NONE, False, 12, False),  # two on every side
        (8, 1, (3, 400), (3, 3), (1, 1), (1, 1), SAME, RELU, True, -3, False),  # a row wider than a window
        (40, 1, (1, 40), (3, 3), (1, 1), (1, 1), SAME, NONE, True, 0, False),  # no interior
        (12, 1, (6, 80), (5, 5), (1, 1), (1, 1), SAME, RELU6, True, 0, False),  # 5x5
        (22, 1, (5, 70), (3, 3), (1, 1), (1, 1), SAME, RELU, False, -128, True),  # large accumulators
        # A channel multiplier of 2 (output channel c reads input channel c / 2).
        (48, 2, (6, 30), (3, 3), (1, 1), (1, 1), SAME, RELU6, True, -128, False),
        (10, 2, (7, 9), (3, 3), (2, 2), (1, 1), SAME, RELU, True, 4, False),
        (3, 2, (6, 40), (3, 3), (1, 1), (1, 1), SAME, RELU6, True, -5, False),  # a quad and two channels
        (16, 2, (8, 20), (3, 3), (1, 1), (1, 1), SAME, NONE, True, 7, False),  # rows that fit a strip
        (4, 2, (6, 6), (5, 5), (1, 1), (1, 1), SAME, RELU, True, 0, False),
        (6, 2, (5, 7), (3, 3), (1, 1), (1, 1), VALID, NONE, True, 3, False),
        (8, 2, (5, 40), (3, 3), (1, 1), (1, 1), SAME, RELU, False, -128, True),  # large accumulators
    ]
    return _depthwise_branches(rng, cases)


def depthwise_stride1_sweep(seed: int = 16) -> list[Branch]:
    """Channel-last 3x3 DEPTHWISE_CONV_2D at stride 1 and dilation 1 with a
    channel multiplier of 1, the DSP cores' most common depthwise form:
    output widths 1 to 9 (odd widths and rows that end inside a group of
    four pixels), channels beyond a multiple of four, SAME and VALID,
    per-tensor and per-channel weights, input zero points at both ends of
    int8, every activation form, and the extreme requantization the small
    path takes (a multiplier near 2^31 with a right shift of 1; right shifts
    of 21 to 23)."""
    rng = np.random.default_rng(seed)
    cases = [
        # channels, multiplier, (h, w), kernel, stride, dilation, padding, activation, per_channel, zp, large bias
        (4, 1, (3, 3), (3, 3), (1, 1), (1, 1), SAME, RELU6, True, -128, False),  # width 3
        (8, 1, (4, 3), (3, 3), (1, 1), (1, 1), VALID, NONE, False, 127, False),  # width 1
        (5, 1, (5, 4), (3, 3), (1, 1), (1, 1), VALID, RELU, True, -128, False),  # width 2, a quad and one
        (12, 1, (6, 5), (3, 3), (1, 1), (1, 1), SAME, RELU6, True, 127, False),  # width 5
        (11, 1, (7, 6), (3, 3), (1, 1), (1, 1), SAME, NONE, False, 0, False),  # width 6, a tail of three
        (16, 1, (5, 9), (3, 3), (1, 1), (1, 1), VALID, RELU6, True, -128, False),  # width 7
        (6, 1, (9, 8), (3, 3), (1, 1), (1, 1), SAME, RELU, True, 33, False),  # width 8
        (20, 1, (8, 11), (3, 3), (1, 1), (1, 1), VALID, RELU, False, -100, False),  # width 9
        (16, 1, (24, 24), (3, 3), (1, 1), (1, 1), SAME, RELU6, True, -128, False),  # bands of rows
        (8, 1, (30, 40), (3, 3), (1, 1), (1, 1), VALID, RELU6, True, 5, False),  # 38 wide
        (13, 1, (10, 12), (3, 3), (1, 1), (1, 1), SAME, RELU6, False, 127, True),  # large accumulators
        (8, 1, (6, 10), (3, 3), (1, 1), (1, 1), SAME, NONE, True, -128, False, 0.4999),  # right shift 1
        (12, 1, (7, 9), (3, 3), (1, 1), (1, 1), VALID, RELU, True, 7, False, 0.9 * 2.0**-21),  # shifts 21..23
    ]
    return _depthwise_branches(rng, cases)


def depthwise_planes_sweep(seed: int = 18) -> list[Branch]:
    """Channel-last 3x3 DEPTHWISE_CONV_2D at stride 1 on the DSP cores' int16
    channel planes (s8_depthwise_planes.c): output rows of 0 to 3 pixels
    beyond a multiple of four along the planes' rows and along their
    columns (the transposed planes of a narrow, tall layer), channels
    beyond a multiple of four, SAME and VALID, bands of rows, a channel
    multiplier of 2, per-tensor and per-channel weights, input zero points
    at both ends of int8 (the padding's value), int8's bounds and the
    activation clamps, the extreme requantization the planes take (a right
    shift of 1; of 22; biases up to 2^26) and beside them a layer outside
    their space (a right shift of 23) and one cheaper on the four-channel
    kernels (a 4x4 plane)."""
    rng = np.random.default_rng(seed)
    cases = [
        # channels, multiplier, (h, w), kernel, stride, dilation, padding, activation, per_channel, zp, large bias
        (8, 1, (9, 16), (3, 3), (1, 1), (1, 1), SAME, NONE, True, -128, False),  # rows of 16
        (12, 1, (7, 17), (3, 3), (1, 1), (1, 1), SAME, RELU, False, 127, False),  # 17
        (5, 1, (10, 20), (3, 3), (1, 1), (1, 1), VALID, RELU6, True, 3, False),  # 18, a quad and one
        (7, 1, (8, 19), (3, 3), (1, 1), (1, 1), SAME, RELU, True, -128, False),  # 19, a quad and three
        (6, 1, (30, 5), (3, 3), (1, 1), (1, 1), SAME, RELU, True, -128, False),  # transposed: columns of 30
        (16, 1, (27, 6), (3, 3), (1, 1), (1, 1), VALID, RELU6, False, 0, False),  # columns of 25
        (8, 1, (23, 4), (3, 3), (1, 1), (1, 1), SAME, NONE, True, 127, False),  # columns of 23
        (8, 1, (24, 4), (3, 3), (1, 1), (1, 1), SAME, RELU6, True, -100, False),  # columns of 24
        (9, 1, (40, 40), (3, 3), (1, 1), (1, 1), SAME, RELU6, True, -128, False),  # bands of rows
        (4, 2, (12, 13), (3, 3), (1, 1), (1, 1), SAME, RELU6, True, -128, False),  # multiplier 2
        (3, 2, (10, 22), (3, 3), (1, 1), (1, 1), VALID, RELU, True, 10, False),  # multiplier 2, three channels
        (8, 1, (12, 14), (3, 3), (1, 1), (1, 1), SAME, NONE, True, -128, False, 0.4999),  # right shift 1
        (12, 1, (11, 13), (3, 3), (1, 1), (1, 1), SAME, RELU, False, 7, False, 0.6 * 2.0**-22),  # right shift 22
        (12, 1, (11, 13), (3, 3), (1, 1), (1, 1), SAME, RELU, False, 7, False, 0.6 * 2.0**-23),  # 23: outside
        (8, 1, (12, 16), (3, 3), (1, 1), (1, 1), SAME, RELU6, True, -128, True),  # large accumulators
        (20, 1, (4, 4), (3, 3), (1, 1), (1, 1), SAME, RELU6, True, -128, False),  # the four-channel kernels
    ]
    return _depthwise_branches(rng, cases)


def depthwise_column_sweep(seed: int = 14) -> list[Branch]:
    """DEPTHWISE_CONV_2D one column wide (K x 1 filters on inputs of width
    1, temporal networks' 1-D depthwise layers over [1, T, 1, C]; the DSP
    cores' column kernel, s8_depthwise_column.c) and a 1 x K layer one row
    high: K of 3, 4, 5, 7 and 9, strides 1 to 3, SAME and VALID, odd and
    even T, a kernel longer than its input, outputs in more than one band,
    channels no multiple of four, per-tensor and per-channel weights, a
    channel multiplier of 2; and beside them layers outside its space (4
    outputs per channel, which the four-channel loop takes; dilation 2;
    large accumulators), which the other paths take."""
    rng = np.random.default_rng(seed)
    cases = [
        # channels, multiplier, (h, w), kernel, stride, dilation, padding, activation, per_channel, zp, large bias
        (120, 1, (13, 1), (9, 1), (1, 1), (1, 1), SAME, RELU, True, -128, False),  # keyword spotting's form
        (22, 1, (25, 1), (9, 1), (2, 1), (1, 1), SAME, RELU, True, -128, False),  # stride 2, odd T
        (7, 1, (12, 1), (9, 1), (2, 1), (1, 1), SAME, NONE, False, 5, False),  # even T, per-tensor
        (13, 1, (10, 1), (5, 1), (1, 1), (1, 1), VALID, RELU6, True, -3, False),
        (6, 1, (11, 1), (5, 1), (2, 1), (1, 1), SAME, RELU, False, 0, False),
        (5, 1, (8, 1), (3, 1), (1, 1), (1, 1), SAME, NONE, True, 127, False),
        (10, 1, (15, 1), (3, 1), (2, 1), (1, 1), VALID, RELU, True, -128, False),
        (9, 1, (7, 1), (9, 1), (1, 1), (1, 1), SAME, RELU6, True, -20, False),  # a kernel longer than T
        (9, 1, (4, 1), (9, 1), (1, 1), (1, 1), SAME, RELU, True, -20, False),  # 4 outputs: the quad loop
        (5, 1, (300, 1), (9, 1), (1, 1), (1, 1), SAME, RELU, True, -128, False),  # two bands of outputs
        (6, 2, (11, 1), (5, 1), (1, 1), (1, 1), SAME, NONE, True, 4, False),  # channel multiplier 2
        (11, 1, (20, 1), (7, 1), (3, 1), (1, 1), SAME, RELU, False, -9, False),  # stride 3
        (7, 1, (13, 1), (4, 1), (2, 1), (1, 1), SAME, NONE, True, 9, False),  # even K
        (12, 1, (1, 14), (1, 5), (1, 1), (1, 1), SAME, NONE, True, 3, False),  # one row high, 1 x K
        (10, 1, (12, 1), (3, 1), (1, 1), (2, 1), SAME, RELU, True, 0, False),  # dilation 2: outside
        (8, 1, (16, 1), (9, 1), (1, 1), (1, 1), SAME, NONE, True, -128, True),  # large accumulators: outside
    ]
    return _depthwise_branches(rng, cases)


def _depthwise_branches(rng, cases) -> list[Branch]:
    """A case may end with a requantization ratio (input scale * the largest
    weight scale / output scale) that sets the output scale."""
    branches = []
    for c, m, (h, w), (kh, kw), (sh, sw), (dh, dw), padding, activation, per_channel, zp, large, *ratio in cases:
        oh, ow = _out_size(h, kh, sh, dh, padding), _out_size(w, kw, sw, dw, padding)
        oc = c * m
        x, weights = _input(rng, (1, h, w, c), zp), _weights(rng, (1, kh, kw, oc), oc, 3, per_channel)
        output = _output(rng, (1, oh, ow, oc))
        if ratio:
            scale = np.float32(np.float64(x.scale) * np.max(np.asarray(weights.scale, np.float64)) / ratio[0])
            output = Spec(output.shape, np.int8, scale, output.zero_point)
        branches.append(Branch("DEPTHWISE_CONV_2D", [x, weights, _bias(rng, oc, large, x, weights)],
                               [output],
                               dict(padding=padding, strideH=sh, strideW=sw, dilationHFactor=dh, dilationWFactor=dw,
                                    depthMultiplier=m, fusedActivationFunction=activation)))
    return branches


def conv_sweep(seed: int = 1) -> list[Branch]:
    rng = np.random.default_rng(seed)
    cases = [
        # in_c, out_c, (h, w), kernel, stride, dilation, padding, activation, per_channel, zp, large bias
        (3, 16, (9, 9), (3, 3), (1, 1), (1, 1), SAME, RELU, True, -128, False),
        (1, 8, (12, 5), (10, 4), (2, 2), (1, 1), SAME, RELU, True, -128, False),  # a kws-like first layer
        (16, 16, (5, 5), (1, 1), (1, 1), (1, 1), VALID, NONE, True, 3, False),  # pointwise
        (7, 5, (6, 7), (3, 3), (2, 2), (1, 1), SAME, RELU6, True, -5, True),
        (8, 12, (4, 4), (1, 1), (2, 2), (1, 1), VALID, NONE, False, 0, False),  # strided 1x1 shortcut
        (5, 9, (8, 8), (3, 3), (1, 1), (2, 2), SAME, NONE, True, 100, False),
        (12, 4, (1, 16), (1, 5), (1, 1), (1, 1), SAME, RELU, True, -128, False),  # a 1-d convolution
        (4, 6, (10, 1), (3, 1), (2, 1), (1, 1), VALID, NONE, True, 0, True),
        (40, 3, (3, 3), (3, 3), (1, 1), (1, 1), SAME, NONE, True, -128, False),
        (64, 64, (3, 3), (1, 1), (1, 1), (1, 1), SAME, RELU6, True, -128, False),
        # one output channel (IREE drops the dimension of size 1; unet's last layers)
        (32, 1, (8, 8), (1, 1), (1, 1), (1, 1), SAME, NONE, True, -6, False),
        (8, 1, (9, 7), (3, 3), (1, 1), (1, 1), SAME, RELU, False, -128, False),
        (5, 1, (7, 6), (3, 3), (2, 2), (1, 2), VALID, NONE, True, 9, True),
        (2049, 5, (2, 3), (1, 1), (1, 1), (1, 1), VALID, RELU, True, -128, False),  # 1x1, K past a chunk
        (1003, 3, (4, 3), (3, 1), (1, 1), (1, 1), VALID, NONE, True, 9, False),  # K = 3009 across taps
    ]
    return _conv_branches(rng, cases)


def _conv_branches(rng, cases) -> list[Branch]:
    branches = []
    for ic, oc, (h, w), (kh, kw), (sh, sw), (dh, dw), padding, activation, per_channel, zp, large in cases:
        oh, ow = _out_size(h, kh, sh, dh, padding), _out_size(w, kw, sw, dw, padding)
        x, weights = _input(rng, (1, h, w, ic), zp), _weights(rng, (oc, kh, kw, ic), oc, 0, per_channel)
        branches.append(Branch("CONV_2D", [x, weights, _bias(rng, oc, large, x, weights)], [_output(rng, (1, oh, ow, oc))], dict(padding=padding, strideH=sh, strideW=sw, dilationHFactor=dh,
                                                  dilationWFactor=dw, fusedActivationFunction=activation)))
    return branches


def conv_whole_window_sweep(seed: int = 18) -> list[Branch]:
    """CONV_2D whose window covers its whole input (one output pixel), as
    streaming keyword spotters apply their first layer to the last frames:
    IREE makes it a matrix-vector product, which the kernels must still
    requantize as a convolution (fixed-point multipliers, not the double
    scale of a FULLY_CONNECTED)."""
    rng = np.random.default_rng(seed)
    cases = [
        # in_c, out_c, (h, w), kernel, stride, dilation, padding, activation, per_channel, zp, large bias
        (40, 32, (5, 1), (5, 1), (1, 1), (1, 1), VALID, RELU, True, -128, False),  # a streaming first layer
        (40, 30, (5, 1), (5, 1), (1, 1), (1, 1), VALID, RELU, True, -128, False),  # ... of 30 channels
        (30, 60, (1, 1), (1, 1), (1, 1), (1, 1), VALID, RELU, True, -128, False),
        (64, 64, (1, 1), (1, 1), (1, 1), (1, 1), VALID, NONE, True, 5, False),  # 1x1 on one pixel
        (7, 5, (3, 3), (3, 3), (1, 1), (1, 1), VALID, RELU6, False, 3, True),
        (3, 10, (4, 4), (4, 4), (2, 2), (1, 1), VALID, RELU, True, 100, False),
        (30, 9, (1, 21), (1, 21), (1, 1), (1, 1), VALID, NONE, True, -128, True),
    ]
    return _conv_branches(rng, cases)


def conv_small_sweep(seed: int = 9) -> list[Branch]:
    """CONV_2D where the DSP cores' pixel-pair loop over receptive fields
    inside the input runs (unpadded layers and the bands of padded ones):
    first layers of one to three input channels whose kernel rows are no
    multiple of 4 bytes (read a word at a time, one to three words a row,
    and byte by byte where a word would pass the input's end), pointwise
    layers with few input channels (K of 4 to 24), odd channel counts (a
    lone last channel, one output channel), more than one block of 64
    channels, odd pixel counts (a lone last pixel), every activation form."""
    rng = np.random.default_rng(seed)
    cases = [
        # in_c, out_c, (h, w), kernel, stride, dilation, padding, activation, per_channel, zp, large bias
        (1, 8, (17, 15), (3, 3), (2, 2), (1, 1), SAME, RELU6, True, -128, False),  # MobileNet's first layer
        (1, 8, (9, 11), (3, 3), (1, 1), (1, 1), SAME, RELU, True, -128, False),  # ResNet's first layer
        (1, 5, (7, 9), (3, 3), (1, 1), (1, 1), VALID, NONE, True, 17, False),  # reads up to the input's end
        (3, 8, (11, 13), (3, 3), (2, 2), (1, 1), SAME, RELU6, True, -128, False),  # rows of 9 bytes
        (3, 6, (8, 7), (3, 3), (1, 1), (1, 1), VALID, RELU, False, 3, True),
        (1, 4, (9, 8), (5, 5), (1, 1), (1, 1), SAME, NONE, True, -5, False),  # rows of 5 bytes
        (2, 7, (6, 9), (3, 3), (2, 1), (1, 1), VALID, NONE, True, 0, False),  # rows of 6 bytes
        (8, 16, (7, 9), (1, 1), (1, 1), (1, 1), VALID, RELU6, True, -128, False),  # pointwise K = 8
        (16, 32, (5, 5), (1, 1), (1, 1), (1, 1), VALID, RELU6, True, -128, False),
        (4, 3, (3, 5), (1, 1), (1, 1), (1, 1), VALID, NONE, True, 9, True),  # K = 4, a lone last channel
        (12, 1, (5, 3), (1, 1), (1, 1), (1, 1), VALID, RELU, True, -7, False),  # one output channel
        (24, 67, (3, 3), (1, 1), (1, 1), (1, 1), VALID, RELU, True, -128, False),  # two blocks, odd last one
        (8, 130, (2, 3), (1, 1), (1, 1), (1, 1), VALID, NONE, False, 1, False),  # three blocks
        (20, 10, (6, 5), (3, 3), (1, 1), (1, 1), SAME, RELU, True, -128, False),  # channel-last rows in words
        (6, 9, (5, 7), (2, 2), (2, 2), (1, 1), VALID, RELU6, True, 40, False),  # rows of 12 bytes
        (1, 6, (8, 8), (3, 3), (1, 1), (2, 2), SAME, NONE, True, -128, False),  # dilated: byte gathers
    ]
    return _conv_branches(rng, cases)


def conv_few_sweep(seed: int = 13) -> list[Branch]:
    """CONV_2D with a reduction of at most 48 values (few input channels:
    the DSP cores' kernel that keeps a channel pair's dot products and
    output stage in registers, its table of FEW_CHANNELS = 32 channels at a
    time), and just past it: pointwise layers of 1 to 16 input channels
    (5, 6, 7 no multiple of 4), 3x3 first layers of 1 and 3 channels (padded:
    their strips), a 10x4 first layer of one channel (K = 40), K = 48,
    output channels odd, past one and two blocks of 32 and a block of one
    lone channel, odd pixel counts, per-tensor and per-channel
    weights, every clamp (none, ReLU6's upper bound alone at output zero
    point -128, both bounds), and output multipliers from 2^-1 (shift -1)
    down to 2^-27 with small and extreme output zero points (where
    (2 zp + 1) << e reaches 2^30 the layer takes the general kernel)."""
    rng = np.random.default_rng(seed)
    cases = [
        # in_c, out_c, (h, w), kernel, stride, padding, activation, per_channel, in zp, out zp, multiplier
        (8, 48, (7, 9), (1, 1), (1, 1), VALID, RELU6, True, -128, -128, None),  # MobileNetV2's expansion
        (5, 37, (5, 7), (1, 1), (1, 1), VALID, RELU6, True, 7, 10, None),  # K = 5: both bounds, 35 pixels
        (6, 33, (3, 5), (1, 1), (1, 1), VALID, NONE, False, -1, 3, None),  # a last block of one channel
        (16, 70, (3, 3), (1, 1), (1, 1), VALID, RELU, False, -128, -5, None),  # three blocks, 9 pixels
        (1, 9, (9, 7), (3, 3), (1, 1), SAME, RELU6, True, -128, -128, None),  # K = 9
        (3, 16, (11, 11), (3, 3), (2, 2), SAME, RELU6, True, 0, -128, None),  # MobileNet's first layer, K = 27
        (7, 12, (4, 5), (1, 1), (1, 1), VALID, NONE, True, 100, 0, None),  # K = 7, byte gathers
        (1, 32, (12, 7), (10, 4), (2, 2), SAME, RELU, True, -128, -128, None),  # ds_cnn's first layer, K = 40
        (13, 5, (5, 6), (2, 2), (1, 1), VALID, RELU, True, -50, 20, None),  # K = 52: past the kernel
        (48, 32, (5, 5), (1, 1), (1, 1), VALID, RELU6, True, -128, -128, None),  # K = 48: twelve groups
        (4, 6, (3, 3), (1, 1), (1, 1), VALID, NONE, True, 0, 0, 0.45),  # shift -1
        (12, 10, (5, 3), (1, 1), (1, 1), VALID, NONE, False, -3, -128, 2.0 ** -20),  # |2 zp + 1| << 18
        (8, 11, (3, 3), (1, 1), (1, 1), VALID, NONE, True, 9, 0, 2.0 ** -27),  # e = 26, zp 0
        (8, 7, (3, 3), (1, 1), (1, 1), VALID, NONE, True, 9, -128, 2.0 ** -27),  # past 2^30: general kernel
        (15, 3, (1, 7), (1, 1), (1, 1), VALID, RELU6, True, -128, 60, None),  # one row, odd channels, K = 15
        (3, 2, (1, 3), (1, 1), (1, 1), VALID, RELU, True, 0, -7, None),  # one channel pair, three pixels
    ]
    return _few_branches(rng, cases)


def conv_first_sweep(seed: int = 17) -> list[Branch]:
    """CONV_2D first layers of 1 to 4 input channels on the few-channel
    kernel (conv_few_sweep's columns, gathered doubled: kernel rows of 2 to
    12 bytes, one to three words a row; K = 4 n + 1 takes the kernel's
    one-value last group): 3x3 and 5x5 windows, strides 1 and 2, SAME and
    VALID, odd sizes, per-tensor and per-channel weights, output multipliers
    of 2^-1 (shift -1) and 2^-27 (e = 26), input zero points -128 to 127,
    every clamp (none, the upper bound alone, both)."""
    rng = np.random.default_rng(seed)
    cases = [
        # in_c, out_c, (h, w), kernel, stride, padding, activation, per_channel, in zp, out zp, multiplier
        (2, 6, (9, 10), (3, 3), (2, 2), VALID, RELU, False, 5, -3, None),  # rows of 6 bytes, per tensor
        (4, 8, (7, 7), (3, 3), (1, 2), SAME, NONE, True, -128, 0, 2.0 ** -20),  # rows of 12 bytes (words)
        (1, 10, (13, 11), (5, 5), (2, 2), SAME, RELU6, True, -128, -128, None),  # 5x5, K = 25, odd sizes
        (1, 7, (10, 9), (5, 5), (1, 1), VALID, NONE, False, 3, 5, 0.45),  # shift -1, an odd last channel
        (3, 5, (7, 8), (3, 3), (2, 2), VALID, RELU, True, -20, 1, 2.0 ** -27),  # e = 26, K = 27
        (1, 3, (5, 4), (3, 3), (2, 1), SAME, NONE, True, 127, -128, 2.0 ** -12),  # in zp 127, 3 bytes a row
        (1, 8, (15, 17), (3, 3), (2, 2), SAME, RELU6, True, -128, -128, None),  # MobileNet's first layer, odd sizes
        (1, 6, (9, 8), (3, 3), (1, 1), SAME, RELU, True, -3, 7, None),  # K = 9, both bounds clamp
        (2, 9, (8, 7), (5, 5), (1, 1), SAME, RELU, True, 0, 4, None),  # K = 50: past the kernel, padded
    ]
    return _few_branches(rng, cases)


def conv_four_sweep(seed: int = 31) -> list[Branch]:
    """CONV_2D on the DSP cores' four-pixel kernel (s8_conv.c, conv_four_dsp:
    one output channel of four output pixels at a time, K_PADDED up to 128,
    taken where it costs fewer instructions than the pixel-pair kernels):
    K = 1 to 65 (pointwise layers of 1, 2, 3, 12, 20, 24, 32, 33, 64 and 65
    input channels; conv_four_long takes K up to 128 and past it), odd and
    no-multiple-of-4 K gathered byte by byte, 1 to 64 output channels, pixel counts no multiple of four
    (the last group of four moved back onto pixels already done: 5, 6, 7,
    and 49 pixels over several strips), one output column (pixels a row
    apart), per-tensor and per-channel weights, input zero points -128 and
    127, every clamp (none, ReLU6's upper bound alone, both), output
    multipliers from 2^-1 (shift -1) to 2^-27, and 1-D layers with dilation
    (their taps gathered one by one). A 1x1 layer of one input channel (K =
    1) is an elementwise product for IREE (no contraction): it checks the
    outputs only. Split in two sweeps: conv_four and conv_four_tails."""
    return _few_branches(np.random.default_rng(seed), _CONV_FOUR_CASES[:9])


def conv_four_tails_sweep(seed: int = 41) -> list[Branch]:
    """conv_four_sweep's other cases: the layers after its first nine and the
    dilated 1-D layers (npukit's runtime takes models of at most 16 inputs)."""
    rng = np.random.default_rng(seed)
    return _few_branches(rng, _CONV_FOUR_CASES[9:]) + _conv_branches(rng, _CONV_FOUR_DILATED)


_CONV_FOUR_CASES = [
    # in_c, out_c, (h, w), kernel, stride, padding, activation, per_channel, in zp, out zp, multiplier
    (1, 16, (6, 7), (1, 1), (1, 1), VALID, RELU, True, -128, -128, None),  # K = 1
    (2, 5, (5, 5), (1, 1), (1, 1), VALID, NONE, False, 127, 3, None),  # K = 2, 25 pixels
    (3, 64, (4, 9), (1, 1), (1, 1), VALID, RELU6, True, 0, -128, None),  # K = 3, 64 channels
    (12, 63, (7, 7), (1, 1), (1, 1), VALID, RELU6, True, -128, 5, None),  # both bounds, 49 pixels
    (20, 1, (9, 9), (1, 1), (1, 1), VALID, NONE, True, 7, -9, None),  # one output channel
    (24, 17, (5, 6), (1, 1), (2, 2), VALID, RELU, False, -128, -128, None),  # strided
    (32, 40, (6, 6), (1, 1), (1, 1), VALID, NONE, True, -5, 0, 0.45),  # shift -1
    (33, 9, (5, 7), (1, 1), (1, 1), VALID, RELU6, True, 127, -128, None),  # K = 33, bytes
    (64, 24, (7, 7), (1, 1), (1, 1), VALID, RELU, True, -128, 2, None),  # K = 64: 16 groups, strips
    (65, 8, (5, 5), (1, 1), (1, 1), VALID, NONE, True, 1, 1, None),  # K = 65: 17 groups
    (8, 48, (1, 5), (1, 1), (1, 1), VALID, RELU6, True, -128, -128, None),  # five pixels
    (16, 8, (2, 3), (1, 1), (1, 1), VALID, NONE, True, 3, -3, 2.0 ** -27),  # six pixels, e = 26
    (8, 32, (7, 1), (1, 1), (1, 1), VALID, RELU, True, -1, 6, None),  # one column of seven pixels
    (3, 16, (12, 12), (3, 3), (2, 2), SAME, RELU6, True, -128, -128, None),  # a first layer, K = 27
    (5, 11, (6, 8), (2, 3), (1, 1), VALID, RELU, False, 60, -60, 2.0 ** -12),  # K = 30, rows of 15 bytes
    # Kernel rows of 6 and 3 bytes (two channels: packed four pixels at a time; one channel: too short to pack),
    # 5 x 5 and 6 x 6 pixels: groups of four across output rows.
    (2, 10, (7, 7), (3, 3), (1, 1), VALID, NONE, True, -128, 4, None),  # K = 18
    (1, 6, (8, 8), (3, 3), (1, 1), VALID, RELU, True, 9, -1, None),  # K = 9
]
_CONV_FOUR_DILATED = [
    # in_c, out_c, (h, w), kernel, stride, dilation, padding, activation, per_channel, zp, large bias
    (16, 16, (1, 40), (1, 3), (1, 1), (1, 2), VALID, RELU, True, -128, False),  # a TCN layer, K = 48
    # Dilated taps of a 2-D window (two kernel rows of three taps of eight channels: K = 48), 7 x 5 pixels: groups
    # of four across output rows.
    (8, 12, (9, 9), (2, 3), (1, 1), (2, 2), VALID, RELU6, True, 5, False),
    (8, 12, (1, 33), (1, 3), (1, 1), (1, 4), SAME, NONE, True, 5, False),  # padded, dilation 4
    (5, 7, (30, 1), (3, 1), (1, 1), (2, 1), VALID, RELU6, False, -7, True),  # along h, K = 15
]


def _few_branches(rng, cases) -> list[Branch]:
    branches = []
    for ic, oc, (h, w), (kh, kw), (sh, sw), padding, activation, per_channel, zp, out_zp, multiplier in cases:
        oh, ow = _out_size(h, kh, sh, 1, padding), _out_size(w, kw, sw, 1, padding)
        x, weights = _input(rng, (1, h, w, ic), zp), _weights(rng, (oc, kh, kw, ic), oc, 0, per_channel)
        out = _output(rng, (1, oh, ow, oc), out_zp)
        if multiplier is not None:  # the largest channel's multiplier s_in * s_w / s_out
            out.scale = np.float32(np.float32(x.scale) * np.max(np.asarray(weights.scale, np.float32)) / multiplier)
        branches.append(Branch("CONV_2D", [x, weights, _bias(rng, oc, False, x, weights)], [out],
                               dict(padding=padding, strideH=sh, strideW=sw, dilationHFactor=1, dilationWFactor=1,
                                    fusedActivationFunction=activation)))
    return branches


def conv_add_sweep(seed: int = 19) -> list[Branch]:
    """CONV_2D followed by TFLite's int8 ADD of a residual tensor (MobileNetV2's
    projection with its shortcut), which the compiler fuses into the layer's
    output stage; on the DSP cores, channel-last outputs and residual a pixel
    pair at a time (s8_conv.c's add_pairs, the ADD's right shift 1 to 31;
    shift 0 the per-pixel path): pointwise layers of 8 to 96 input channels
    and 3 to 130 output channels (odd counts, past one and two blocks of 64),
    odd pixel counts (a lone last pixel), per-tensor and per-channel weights,
    zero points at both ends of int8 for the layer's input and output and the
    residual (the sum's -128 to 9), the residual's scale larger or smaller
    than the layer's. Branches chained: each ADD reads its CONV_2D's output
    (chain=True); 7 cases, 14 inputs (the NPU runtime takes 16 a model)."""
    return _conv_add_branches(np.random.default_rng(seed), [
        # in_c, out_c, (h, w), kernel, conv act, add act, per_channel, in zp, conv out zp, res zp, add out zp,
        # residual scale / conv output scale, the ADD's output multiplier (None: from a plain output scale)
        (16, 8, (7, 9), (1, 1), NONE, NONE, True, -128, 3, -5, 2, 1.3, None),  # MobileNetV2's projection
        (8, 8, (5, 5), (1, 1), NONE, NONE, True, 7, -128, 127, -128, 0.6, None),  # K = 8, 25 pixels
        (48, 16, (3, 5), (1, 1), NONE, NONE, True, -3, -90, -128, 2, 1.9, None),  # K = 48
        (96, 24, (4, 4), (1, 1), NONE, RELU6, True, 127, 127, 0, -3, 0.9, None),
        (32, 67, (3, 3), (1, 1), RELU, NONE, True, -128, -7, 11, 0, 1.0, None),  # two blocks, odd last channel
        (8, 130, (1, 3), (1, 1), NONE, NONE, True, 0, 5, -128, 9, 0.5, None),  # three blocks, three pixels
        (12, 3, (3, 3), (1, 1), NONE, NONE, False, -4, 0, 60, -60, 1.7, None),  # one pair and a lone channel
    ])


def conv_add_stages_sweep(seed: int = 23) -> list[Branch]:
    """conv_add_sweep's layers for the output stages: a 3x3 VALID layer, the
    ADD's output multipliers from 2^-1 (shift 0, the per-pixel path) to
    2^-30, the layer's and the ADD's activations (none, ReLU, ReLU6: the
    ADD's clamp, and the layer's folded into its operand table, the lower
    bound and the upper); 6 cases, 12 inputs."""
    return _conv_add_branches(np.random.default_rng(seed), [
        (8, 8, (5, 5), (3, 3), NONE, NONE, True, -128, 1, -2, 4, 1.1, None),  # 3x3 VALID, 9 pixels
        (16, 8, (3, 3), (1, 1), NONE, NONE, True, -128, 2, -3, 1, 1.2, 0.75),  # the ADD's shift 0: per pixel
        (16, 8, (3, 5), (1, 1), NONE, NONE, True, -128, 2, -3, -128, 1.2, 0.45),  # shift 1
        (16, 10, (3, 3), (1, 1), NONE, RELU, True, 5, -20, 20, -128, 0.8, 2.0 ** -30),  # shift 30
        (24, 6, (3, 3), (1, 1), RELU, RELU6, True, 0, -100, 100, -20, 1.4, None),  # both clamps of both
        (16, 12, (3, 3), (1, 1), RELU6, NONE, True, -128, -50, 7, -9, 1.2, None),  # the layer's upper bound folded
    ])


def conv_add_ranges_sweep(seed: int = 29) -> list[Branch]:
    """conv_add_sweep's layers where IREE's canonicalisation changes the
    dispatch: an ADD whose output zero point keeps its sum positive (IREE
    proves the value under the clamp not negative and writes the clamp's
    minimum unsigned below its lower bound of -128), an ADD whose clamp
    leaves one value (ReLU or ReLU6 above a zero point of 127: IREE folds
    the layer and the ADD to a constant the initializer fills, next to the
    other layers' constant pool), and VALID windows as wide or as high as
    the input (3x1, 1x3 and 1x2 outputs: IREE drops the output dimension of
    one pixel, and the window's dimension reads the input alone, as the
    input channels do); 7 cases, 14 inputs."""
    return _conv_add_branches(np.random.default_rng(seed), [
        (48, 16, (3, 5), (1, 1), NONE, NONE, True, -3, -90, -128, 100, 1.9, None),  # the sum's minimum unsigned
        (32, 12, (3, 3), (1, 1), RELU, NONE, True, 0, -100, -128, 20, 1.4, None),  # both terms not negative
        (16, 8, (3, 3), (1, 1), NONE, RELU6, True, -128, 2, -3, 127, 1.2, None),  # a constant 127: folded
        (8, 8, (5, 3), (3, 3), NONE, NONE, True, -128, 1, -2, 4, 1.1, None),  # 3x3 VALID, 3x1 output
        (24, 10, (3, 3), (1, 1), NONE, RELU, True, 5, -20, 20, 127, 0.8, None),  # a constant 127 after ReLU
        (8, 6, (3, 5), (3, 3), NONE, RELU, True, 3, -5, 7, -20, 0.9, None),  # 1x3 output
        (4, 7, (2, 4), (2, 3), RELU6, NONE, True, 9, 1, -2, 60, 1.1, None),  # a 2x3 window, 1x2 output
    ])


def conv_rows_sweep(seed: int = 31) -> list[Branch]:
    """CONV_2D over the host's row-taps form's parameter space
    (npukit.cpu.kernel_choice.rows_fit): 1 to 16 output channels, kernel rows
    of 2 to 5 taps at stride and dilation 1 along the row, input channels a
    multiple of four; strides and dilations in height, SAME (the padded
    strips) and VALID (the input read in place), rows of 31 and 33 columns
    (every block of 16, 8, 4, 2 and 1 pixels), zero points at both ends,
    per-tensor weights, large biases; 8 output channels (pairs of pixels by
    default) and one case just outside (17 channels)."""
    rng = np.random.default_rng(seed)
    cases = [
        # in_c, out_c, (h, w), kernel, stride, dilation, padding, activation, per_channel, zp, large bias
        (16, 16, (6, 33), (3, 3), (1, 1), (1, 1), SAME, RELU, True, -128, False),  # resnet8's
        (8, 12, (9, 31), (3, 3), (2, 1), (1, 1), SAME, NONE, True, 5, True),
        (4, 16, (11, 23), (3, 3), (1, 1), (2, 1), SAME, RELU6, True, -5, False),
        (12, 5, (6, 10), (5, 5), (1, 1), (1, 1), SAME, NONE, False, 0, False),
        (16, 1, (5, 19), (2, 2), (1, 1), (1, 1), VALID, RELU, True, 127, False),
        (20, 16, (6, 14), (3, 4), (1, 1), (1, 1), SAME, NONE, True, -128, True),
        (8, 8, (8, 17), (3, 3), (1, 1), (1, 1), SAME, RELU, True, -128, False),
        (32, 9, (4, 9), (1, 3), (1, 1), (1, 1), VALID, NONE, True, 3, False),
        (4, 16, (10, 18), (3, 3), (2, 1), (1, 1), VALID, NONE, True, -128, False),
        (16, 17, (5, 16), (3, 3), (1, 1), (1, 1), SAME, RELU, True, -128, False),  # one vector too many
    ]
    return _conv_branches(rng, cases)


def conv_add_rows_sweep(seed: int = 37) -> list[Branch]:
    """conv_add_sweep's chained CONV_2D and ADD with SAME padding on the
    row-taps form: resnet8's 3x3 16->16 with its residual, 8 to 16 input
    and 7 to 16 output channels, kernel rows of 3 and 5 taps, the ADD's
    shift 0 (per pixel) to 30, both layers' clamps; 5 cases, 10 inputs."""
    return _conv_add_branches(np.random.default_rng(seed), [
        (16, 16, (8, 33), (3, 3), NONE, RELU, True, -128, 3, -5, -128, 1.3, None),  # resnet8's
        (8, 12, (5, 18), (3, 3), RELU, NONE, True, 7, -128, 127, 2, 0.6, None),
        (4, 16, (4, 9), (3, 3), NONE, NONE, False, -3, -90, -128, 2, 1.9, 0.75),  # the ADD's shift 0
        (12, 7, (6, 5), (5, 5), RELU6, RELU6, True, 127, 120, 0, -3, 0.9, None),
        (16, 16, (3, 20), (3, 3), NONE, NONE, True, -128, 2, -3, 1, 1.2, 2.0 ** -30),  # shift 30
    ], padding=SAME)


def conv_four_add_sweep(seed: int = 43) -> list[Branch]:
    """CONV_2D and TFLite's int8 ADD of a residual on the DSP cores' four-pixel
    kernel with the ADD fused (s8_conv.c, conv_four_dsp with
    npukit_s8_conv_four_add_dsp: K_PADDED up to 128 (conv_four_long past 64), the residual channel-last
    and evenly spaced, the ADD's right shift 1 to 31), taken where it costs
    fewer instructions than the pixel-pair kernels: a TCN's dilated 1-D layer
    (K = 48), pointwise layers of 2, 16, 33 and 64 input channels (K = 33
    gathered byte by byte, K = 64 over several strips), 1 to 64 output
    channels, pixel counts no multiple of four (the last group moved back),
    one output column along h with dilation 4 and SAME padding (a padded
    layer's bands), per-tensor and per-channel weights, zero points at both
    ends of int8, the layer's multiplier 2^-27 and the ADD's 2^-1 (shift 1)
    and 2^-30 (shift 30, zero point 0), ReLU on the layer (folded into the
    ADD's operand table; ReLU6 in the tails) and ReLU and ReLU6 on the ADD.
    Chained; 8 cases, 16 inputs."""
    return _conv_four_add_branches(np.random.default_rng(seed), [
        # in_c, out_c, (h, w), kernel, stride, dilation, padding, conv act, add act, per_channel, in zp, conv out zp,
        # res zp, add out zp, residual scale / conv output scale, the ADD's output multiplier, the layer's multiplier
        (16, 16, (1, 41), (1, 3), (1, 1), (1, 2), VALID, NONE, NONE, True, -128, 3, -5, 2, 1.3, None, None),  # TCN
        (16, 16, (5, 7), (1, 1), (1, 1), (1, 1), VALID, NONE, RELU, True, 7, -128, 127, -128, 0.6, None, None),
        (64, 24, (7, 7), (1, 1), (1, 1), (1, 1), VALID, RELU, RELU6, False, -128, -20, 20, -3, 1.9, None, None),
        (2, 5, (5, 5), (1, 1), (1, 1), (1, 1), VALID, NONE, NONE, True, 127, 5, -128, 9, 0.9, 0.45, None),  # shift 1
        (12, 64, (3, 7), (1, 1), (1, 1), (1, 1), VALID, NONE, NONE, True, -3, 0, 60, 0, 1.0, 2.0 ** -30, None),
        (33, 9, (5, 7), (1, 1), (1, 1), (1, 1), VALID, NONE, NONE, False, 127, -128, 127, -128, 1.4, None, 2.0 ** -27),
        (8, 12, (33, 1), (3, 1), (1, 1), (4, 1), SAME, NONE, RELU, True, 5, 1, -2, -60, 1.1, None, None),  # one column
        (20, 1, (9, 9), (1, 1), (1, 1), (1, 1), VALID, RELU, RELU6, True, 0, -100, 100, -20, 0.8, None, None),
    ])


def conv_four_add_tails_sweep(seed: int = 47) -> list[Branch]:
    """conv_four_add_sweep's tails: five, six and seven pixels (the moved last
    group over pixels already done), a strided 3x3 first layer (K = 27), the
    layer's shift -1 (multiplier 0.45), K = 3 and 64 output channels, a 2x3
    window (rows of 6 bytes), and ADDs of two layers' outputs (the residual
    another layer's int8 output), with 5 and 35 pixels; 8 cases, 16
    inputs."""
    rng = np.random.default_rng(seed)
    return _conv_four_add_branches(rng, [
        (8, 48, (1, 5), (1, 1), (1, 1), (1, 1), VALID, RELU6, NONE, True, -128, -128, 3, 7, 1.2, None, None),  # 5 px
        (16, 8, (2, 3), (1, 1), (1, 1), (1, 1), VALID, NONE, RELU6, True, 3, -3, -40, 11, 0.7, None, None),  # 6 pixels
        (8, 32, (7, 1), (1, 1), (1, 1), (1, 1), VALID, RELU, NONE, True, -1, 6, -128, -128, 2.2, 0.45, None),  # 7 px
        (3, 16, (12, 12), (3, 3), (2, 2), (1, 1), SAME, RELU6, RELU, True, -128, -128, 0, 1, 1.1, None, None),  # K = 27
        (32, 40, (6, 6), (1, 1), (1, 1), (1, 1), VALID, NONE, NONE, True, -5, 0, 90, -90, 0.5, None, 0.45),
        (3, 64, (4, 9), (1, 1), (1, 1), (1, 1), VALID, NONE, RELU, True, 0, 127, -128, 0, 1.5, None, None),  # K = 3
    ]) + _conv_four_add_pair(rng, 16, 12, (1, 5), True) + _conv_four_add_pair(rng, 24, 7, (5, 7), False)


def conv_four_long_sweep(seed: int = 53) -> list[Branch]:
    """The four-pixel kernel's longer reductions, K_PADDED 68 to 128 (17 to
    32 groups of four: the kernel's columns of one group of four pixels take
    up to 1 KiB, strips of one to three groups on an unpadded layer's
    stack; a padded layer's band is shortened until its strip has room for
    four), plain and with the ADD fused: K = 65 gathered byte by byte,
    micro_speech's first layer (10x8 window over one channel, stride 2, SAME:
    K = 80 from a padded band), 3x3 windows over 8 and 12 channels (K = 72,
    108; stride 2 and SAME for the latter), pointwise layers of 96 and 128
    input channels (K = 128: 32 groups, five groups of pixels over two
    strips, the layer's multiplier 2^-27), K = 129 just past the kernel, and
    ADDs after K = 72 (padded), 96 and 128 layers. Chained (the ADDs);
    7 + 3 cases, 13 inputs."""
    rng = np.random.default_rng(seed)
    plain = _few_branches(rng, [
        # in_c, out_c, (h, w), kernel, stride, padding, activation, per_channel, in zp, out zp, multiplier
        (65, 8, (5, 6), (1, 1), (1, 1), VALID, NONE, True, 1, 1, None),  # K = 65: 17 groups, bytes
        (1, 8, (17, 16), (10, 8), (2, 2), SAME, RELU, True, -128, -128, None),  # micro_speech's first layer, K = 80
        (8, 16, (9, 10), (3, 3), (1, 1), VALID, RELU6, True, -128, 5, None),  # K = 72: rows of 24 bytes
        (96, 12, (5, 6), (1, 1), (1, 1), VALID, NONE, False, 127, -3, None),  # K = 96, per tensor
        (128, 20, (4, 5), (1, 1), (1, 1), VALID, RELU, True, -128, 2, 2.0 ** -27),  # K = 128: 32 groups
        (12, 10, (7, 7), (3, 3), (2, 2), SAME, RELU6, True, -7, -128, None),  # K = 108, strided, padded
        (129, 8, (4, 4), (1, 1), (1, 1), VALID, NONE, True, -128, 0, None),  # K = 129: past the kernel
    ])
    return plain + _conv_four_add_branches(rng, [
        # in_c, out_c, (h, w), kernel, stride, dilation, padding, conv act, add act, per_channel, in zp, conv out zp,
        # res zp, add out zp, residual scale / conv output scale, the ADD's output multiplier, the layer's multiplier
        (8, 12, (6, 7), (3, 3), (1, 1), (1, 1), SAME, RELU, NONE, True, -128, -128, 5, -9, 1.2, None, None),  # K = 72
        (96, 16, (6, 6), (1, 1), (1, 1), (1, 1), VALID, NONE, RELU6, True, 3, 0, -128, 4, 0.8, None, None),  # K = 96
        (128, 32, (4, 8), (1, 1), (1, 1), (1, 1), VALID, NONE, NONE, False, -128, 7, 30, -30, 1.6, 0.45, None),
    ])


def _conv_four_add_branches(rng, cases) -> list[Branch]:
    branches = []
    for (ic, oc, (h, w), (kh, kw), (sh, sw), (dh, dw), padding, conv_act, add_act, per_channel, zp, conv_zp, res_zp,
         add_zp, ratio, add_multiplier, multiplier) in cases:
        oh, ow = _out_size(h, kh, sh, dh, padding), _out_size(w, kw, sw, dw, padding)
        x, weights = _input(rng, (1, h, w, ic), zp), _weights(rng, (oc, kh, kw, ic), oc, 0, per_channel)
        conv_out = _output(rng, (1, oh, ow, oc), conv_zp)
        if multiplier is not None:  # the largest channel's multiplier s_in * s_w / s_out
            conv_out.scale = np.float32(np.float32(x.scale) * np.max(np.asarray(weights.scale, np.float32)) / multiplier)
        residual = Spec((1, oh, ow, oc), np.int8, np.float32(conv_out.scale * ratio), res_zp)
        if add_multiplier is None:
            add_scale = np.float32(rng.uniform(1.0, 2.5) * max(conv_out.scale, residual.scale))
        else:  # TFLite's ADD output multiplier 2 max(s1, s2) / (2^20 s_out)
            add_scale = np.float32(2 * max(conv_out.scale, residual.scale) / (2.0 ** 20 * add_multiplier))
        out = Spec((1, oh, ow, oc), np.int8, add_scale, add_zp)
        branches.append(Branch("CONV_2D", [x, weights, _bias(rng, oc, False, x, weights)], [conv_out],
                               dict(padding=padding, strideH=sh, strideW=sw, dilationHFactor=dh, dilationWFactor=dw,
                                    fusedActivationFunction=conv_act)))
        branches.append(Branch("ADD", [conv_out, residual], [out], dict(fusedActivationFunction=add_act)))
    return branches


def _conv_four_add_pair(rng, ic: int, oc: int, hw, per_channel: bool) -> list[Branch]:
    """Two pointwise layers of the same input shape and the ADD of their outputs."""
    branches, outs = [], []
    for zp, out_zp in ((-128, 4), (9, -7)):
        x, weights = _input(rng, (1, *hw, ic), zp), _weights(rng, (oc, 1, 1, ic), oc, 0, per_channel)
        out = _output(rng, (1, *hw, oc), out_zp)
        branches.append(Branch("CONV_2D", [x, weights, _bias(rng, oc, False, x, weights)], [out],
                               dict(padding=VALID, strideH=1, strideW=1, dilationHFactor=1, dilationWFactor=1,
                                    fusedActivationFunction=NONE)))
        outs.append(out)
    add_scale = np.float32(rng.uniform(1.0, 2.5) * max(outs[0].scale, outs[1].scale))
    branches.append(Branch("ADD", outs, [Spec((1, *hw, oc), np.int8, add_scale, -3)], dict(fusedActivationFunction=NONE)))
    return branches


def constant_output(branch: Branch) -> bool:
    """Whether an int8 branch's activation leaves its output one value (a
    ReLU or ReLU6 above a zero point of 127): IREE folds it to a constant."""
    out = branch.outputs[0]
    activation = branch.options.get("fusedActivationFunction", NONE)
    if out.dtype != np.int8 or activation not in (RELU, RELU6):
        return False
    low = max(-128, int(out.zero_point))
    high = 127 if activation == RELU else min(127, int(out.zero_point) + int(round(6.0 / float(out.scale))))
    return low >= high


def _conv_add_branches(rng, cases, padding: int = VALID) -> list[Branch]:
    """_conv_four_add_branches' layers at stride and dilation 1, one padding
    for all, the layer's scale drawn."""
    return _conv_four_add_branches(rng, [(ic, oc, hw, kernel, (1, 1), (1, 1), padding, *rest, None)
                                         for ic, oc, hw, kernel, *rest in cases])


def fully_connected_sweep(seed: int = 2) -> list[Branch]:
    rng = np.random.default_rng(seed)
    cases = [(64, 12, NONE, True, -128), (10, 5, RELU, False, 0), (1000, 3, NONE, True, 7), (7, 9, RELU6, True, -3),
             (1, 1, NONE, False, 0), (256, 33, NONE, True, -128),
             # Reductions around and past the convolution kernel's chunk of 2048 values (micro_speech: 4000).
             (2047, 5, RELU, True, -128), (2048, 3, NONE, False, 5), (2049, 7, RELU6, True, -3),
             (4000, 4, NONE, True, -128), (5000, 6, RELU, True, 0), (9000, 3, NONE, True, 17)]
    branches = []
    for depth, units, activation, per_channel, zp in cases:
        x, weights = _input(rng, (1, depth), zp), _weights(rng, (units, depth), units, 0, per_channel)
        branches.append(Branch("FULLY_CONNECTED", [x, weights, _bias(rng, units, False, x, weights)], [_output(rng, (1, units))], dict(fusedActivationFunction=activation)))
    return branches


def fully_connected_matvec_sweep(seed: int = 15) -> list[Branch]:
    """FULLY_CONNECTED of one input row, the DSP cores' matrix-vector kernel
    (s8_fully_connected.c): input lengths 2 to 700 (multiples of 4 and
    not: the tails of a group of four), 2 to 130 outputs (whole quads of
    rows, one, two and three left over, more than one block of 64), per-tensor
    and per-channel weights, input zero points -128 and 127, ReLU and ReLU6,
    large biases, output scales far below the accumulator's (about 2^-30)
    and near it (saturating outputs), and an input of rank 4; and a layer of
    one input, which IREE turns into an elementwise product. (Layers of one
    output: fully_connected_one_output_sweep; the recogniser leaves a layer
    whose scale ratio exceeds 1 to IREE's code; npukit's runtime takes
    models of at most 16 inputs: 16 branches.)"""
    rng = np.random.default_rng(seed)
    cases = [
        # depth, units, activation, per_channel, input zp, large bias, requantization ratio (None: _output's)
        (640, 128, RELU, True, -128, False, None),  # the MLPerf Tiny autoencoder's layers
        (128, 640, NONE, True, 3, False, None),
        (8, 128, RELU, True, -128, False, None),
        (2, 2, NONE, True, 127, False, None),
        (5, 3, NONE, False, 127, True, None),
        (17, 6, RELU6, False, -128, False, None),
        (33, 7, NONE, True, 9, True, None),
        (100, 9, RELU, True, -128, False, 2.0 ** -30),  # tiny outputs: extreme right shifts
        (63, 10, NONE, True, 127, False, 0.999),  # a ratio near 1: outputs saturate
        (250, 11, NONE, True, -128, False, 0.9),
        (401, 65, RELU6, True, 127, True, None),  # more than one block of 64 rows, an odd last row
        (699, 130, NONE, True, -128, False, None),
        (700, 67, RELU, False, 127, False, None),
        (31, 66, NONE, True, -100, False, 2.0 ** -20),
    ]
    branches = []
    for depth, units, activation, per_channel, zp, large, ratio in cases:
        x, weights = _input(rng, (1, depth), zp), _weights(rng, (units, depth), units, 0, per_channel)
        out = _output(rng, (1, units))
        if ratio is not None:
            out.scale = np.float32(np.float32(x.scale) * np.max(np.asarray(weights.scale, np.float32)) / ratio)
        branches.append(Branch("FULLY_CONNECTED", [x, weights, _bias(rng, units, large, x, weights)], [out],
                               dict(fusedActivationFunction=activation)))
    x, weights = _input(rng, (1, 3, 5, 7), -128), _weights(rng, (12, 105), 12, 0, True)  # rank 4, flattened
    branches.append(Branch("FULLY_CONNECTED", [x, weights, _bias(rng, 12, False, x, weights)], [_output(rng, (1, 12))],
                           dict(fusedActivationFunction=RELU)))
    x, weights = _input(rng, (1, 1), 5), _weights(rng, (5, 1), 5, 0, True)  # one input: a table
    branches.append(Branch("FULLY_CONNECTED", [x, weights, _bias(rng, 5, False, x, weights)], [_output(rng, (1, 5))],
                           dict(fusedActivationFunction=NONE)))
    return branches


def fully_connected_one_output_sweep(seed: int = 31) -> list[Branch]:
    """FULLY_CONNECTED of one output unit (a detector's last layer): IREE
    makes the dot product a reduction to a scalar (rank 0) of int32, stored
    for a dispatch of its own that requantizes it; the layer is a fully
    connected one of int32 output. Input lengths 2 to 4,097 (the tails of a
    group of four, past the kernel's chunk of 2,048), per-tensor and
    per-channel weights, input zero points at both ends, ReLU and ReLU6,
    large biases, an input of rank 4, and tiny and saturating output scales;
    10 branches."""
    rng = np.random.default_rng(seed)
    cases = [
        # input shape, activation, per_channel, input zp, large bias, requantization ratio (None: _output's)
        ((1, 320), RELU, False, -128, False, None),  # microWakeWord's detectors
        ((1, 64), NONE, True, 127, False, None),
        ((1, 2), NONE, True, 0, True, None),
        ((1, 3), RELU6, False, -128, False, None),
        ((1, 17), NONE, True, 9, True, None),
        ((1, 700), RELU, True, -128, False, 2.0 ** -30),
        ((1, 1001), NONE, True, 127, False, 0.999),
        ((1, 4097), RELU6, True, -128, True, None),
        ((1, 2, 3, 5), NONE, True, 5, False, None),  # rank 4, flattened
        ((1, 9), NONE, False, -3, False, 0.5),
    ]
    branches = []
    for shape, activation, per_channel, zp, large, ratio in cases:
        depth = int(np.prod(shape[1:]))
        x, weights = _input(rng, shape, zp), _weights(rng, (1, depth), 1, 0, per_channel)
        out = _output(rng, (1, 1))
        if ratio is not None:
            out.scale = np.float32(np.float32(x.scale) * np.max(np.asarray(weights.scale, np.float32)) / ratio)
        branches.append(Branch("FULLY_CONNECTED", [x, weights, _bias(rng, 1, large, x, weights)], [out],
                               dict(fusedActivationFunction=activation)))
    return branches


def _index(values) -> Spec:
    return Spec.constant(np.asarray(values, np.int32))


def _slice(x: Spec, begin, end) -> Branch:
    """A STRIDED_SLICE of ``x`` (steps of 1) from ``begin`` to ``end``."""
    shape = tuple(e - b for b, e in zip(begin, end))
    out = Spec(shape, np.int8, x.scale, x.zero_point)
    return Branch("STRIDED_SLICE", [x, _index(begin), _index(end), _index([1] * len(begin))], [out], {})


def _split_channels(x: Spec, sizes) -> Branch:
    """A SPLIT_V of ``x`` along its last dimension into parts of ``sizes``."""
    outs = [Spec(x.shape[:-1] + (n,), np.int8, x.scale, x.zero_point) for n in sizes]
    return Branch("SPLIT_V", [x, _index(sizes), _index([len(x.shape) - 1])], outs, dict(numSplits=len(sizes)))


def _layer_of(rng, op: str, x: Spec, out_c: int, kernel=(1, 1), padding=VALID, activation=NONE,
              per_channel=True) -> Branch:
    """A CONV_2D, DEPTHWISE_CONV_2D (multiplier out_c / in_c) or
    FULLY_CONNECTED layer reading ``x`` (stride 1)."""
    in_c = x.shape[-1]
    if op == "FULLY_CONNECTED":
        weights = _weights(rng, (out_c, int(np.prod(x.shape[1:]))), out_c, 0, per_channel)
        return Branch(op, [x, weights, _bias(rng, out_c, False, x, weights)], [_output(rng, (1, out_c))],
                      dict(fusedActivationFunction=activation))
    (_, h, w, _), (kh, kw) = x.shape, kernel
    out_shape = (1, _out_size(h, kh, 1, 1, padding), _out_size(w, kw, 1, 1, padding), out_c)
    options = dict(padding=padding, strideH=1, strideW=1, dilationHFactor=1, dilationWFactor=1,
                   fusedActivationFunction=activation)
    if op == "DEPTHWISE_CONV_2D":
        weights = _weights(rng, (1, kh, kw, out_c), out_c, 3, per_channel)
        options["depthMultiplier"] = out_c // in_c
    else:
        weights = _weights(rng, (out_c, kh, kw, in_c), out_c, 0, per_channel)
    return Branch(op, [x, weights, _bias(rng, out_c, False, x, weights)], [_output(rng, out_shape)], options)


def slice_consumers_sweep(seed: int = 37) -> list[Branch]:
    """Layers reading a window of a larger tensor (SPLIT_V, STRIDED_SLICE),
    which IREE fuses into the layer's dispatch as a read of part of the
    tensor (the kernels and the NPU address it with the whole tensor's
    strides from the window's start): channel windows at offset 0 and past
    it feeding depthwise (3x3 SAME: a padded window; a channel multiplier
    of 2), pointwise and 3x3 convolutions; row windows (microWakeWord's
    streaming form: rows 4-8 and channels 0-31 of a 9x1x64 state, read by a
    5x1 depthwise layer); a row and column window read by a padded 3x3
    convolution; part of a vector read by a fully connected layer. Branches
    chained; 4 inputs."""
    rng = np.random.default_rng(seed)
    branches = []
    x = _input(rng, (1, 6, 5, 24), -128)
    split = _split_channels(x, [8, 12, 4])
    branches.append(split)
    low, middle, high = split.outputs
    branches.append(_layer_of(rng, "DEPTHWISE_CONV_2D", low, 8, (3, 3), SAME, RELU6))
    branches.append(_layer_of(rng, "CONV_2D", middle, 10, activation=RELU))
    branches.append(_layer_of(rng, "DEPTHWISE_CONV_2D", high, 8, (3, 3), VALID, per_channel=False))
    state = _input(rng, (1, 9, 1, 64), 3)
    recent = _slice(state, [0, 4, 0, 0], [1, 9, 1, 32])
    older = _slice(state, [0, 0, 0, 32], [1, 9, 1, 64])
    branches += [recent, older, _layer_of(rng, "DEPTHWISE_CONV_2D", recent.outputs[0], 32, (5, 1)),
                 _layer_of(rng, "DEPTHWISE_CONV_2D", older.outputs[0], 32, (9, 1), activation=RELU)]
    image = _input(rng, (1, 10, 7, 12), 127)
    window = _slice(image, [0, 2, 1, 0], [1, 8, 6, 12])
    branches += [window, _layer_of(rng, "CONV_2D", window.outputs[0], 6, (3, 3), SAME, RELU6)]
    vector = _input(rng, (1, 40), -7)
    part = _slice(vector, [0, 8], [1, 40])
    branches += [part, _layer_of(rng, "FULLY_CONNECTED", part.outputs[0], 5, per_channel=False)]
    return branches


def transpose_conv_sweep(seed: int = 5) -> list[Branch]:
    """TRANSPOSE_CONV: the output size from the input, kernel, stride and
    padding as a model's converter gives it, with the odd ones too (an
    output a row short or long, which changes the padding)."""
    rng = np.random.default_rng(seed)
    cases = [
        # ic, oc, (h, w), kernel, stride, padding, activation, per_channel, zp, output size adjustment
        (8, 4, (4, 4), (3, 3), (2, 2), SAME, NONE, True, -128, 0),
        (3, 5, (5, 3), (2, 2), (2, 2), VALID, RELU, True, 0, 0),
        (4, 4, (3, 5), (4, 4), (2, 2), SAME, RELU6, False, 9, 0),
        (6, 3, (4, 4), (3, 3), (1, 1), SAME, NONE, True, -7, 0),
        (2, 7, (3, 3), (5, 3), (3, 2), VALID, NONE, True, 3, 0),
        (5, 2, (4, 3), (3, 3), (2, 2), SAME, RELU, True, -128, -1),
        (4, 6, (2, 4), (3, 3), (2, 2), VALID, NONE, True, 100, 1),
    ]
    branches = []
    for ic, oc, (h, w), (kh, kw), (sh, sw), padding, activation, per_channel, zp, adjust in cases:
        def out_size(size, kernel, stride):
            return (size * stride if padding == SAME else (size - 1) * stride + kernel) + adjust

        oh, ow = out_size(h, kh, sh), out_size(w, kw, sw)
        x, weights = _input(rng, (1, h, w, ic), zp), _weights(rng, (oc, kh, kw, ic), oc, 0, per_channel)
        shape = Spec.constant(np.array([1, oh, ow, oc], np.int32))
        branches.append(Branch("TRANSPOSE_CONV", [shape, weights, x, _bias(rng, oc, False, x, weights)],
                               [_output(rng, (1, oh, ow, oc))],
                               dict(padding=padding, strideH=sh, strideW=sw, fusedActivationFunction=activation)))
    return branches


def hybrid_sweep(seed: int = 4) -> list[Branch]:
    """Dynamic-range layers: float input and output, int8 weights, float bias;
    the input quantized on the fly."""
    rng = np.random.default_rng(seed)
    branches = []
    for ic, oc, (h, w), (kh, kw), (sh, sw), padding, activation in [
            (1, 8, (12, 5), (10, 4), (2, 2), SAME, RELU), (16, 16, (5, 5), (1, 1), (1, 1), VALID, NONE),
            (5, 7, (6, 9), (3, 3), (1, 2), SAME, RELU6), (3, 4, (2, 3), (1, 1), (1, 1), SAME, NONE)]:
        oh, ow = _out_size(h, kh, sh, 1, padding), _out_size(w, kw, sw, 1, padding)
        branches.append(Branch("CONV_2D", [
            Spec((1, h, w, ic), np.float32), _weights(rng, (oc, kh, kw, ic), oc, 0, per_channel=False),
            Spec.constant(rng.uniform(-1, 1, oc).astype(np.float32)),
        ], [Spec((1, oh, ow, oc), np.float32)], dict(padding=padding, strideH=sh, strideW=sw, dilationHFactor=1,
                                                    dilationWFactor=1, fusedActivationFunction=activation)))
    for depth, units, per_channel, activation in [(64, 12, False, NONE), (10, 5, True, RELU), (13, 3, True, NONE)]:
        branches.append(Branch("FULLY_CONNECTED", [
            Spec((1, depth), np.float32), _weights(rng, (units, depth), units, 0, per_channel),
            Spec.constant(rng.uniform(-1, 1, units).astype(np.float32)),
        ], [Spec((1, units), np.float32)], dict(fusedActivationFunction=activation)))
    return branches


def repeated_layers_sweep(seed: int = 6) -> list[Branch]:
    """Layers of equal shape and arithmetic but their own constants, three of
    each (MobileNet's repeated blocks): IREE gives such layers one shared
    executable whose constants arrive at offsets known only at run time,
    unless the compiler separates them again. Per-channel parameters of 72
    channels are large enough that IREE keeps them out of the executable."""
    rng = np.random.default_rng(seed)
    branches = []
    for op, kernel in (("CONV_2D", 1), ("CONV_2D", 3), ("DEPTHWISE_CONV_2D", 3), ("FULLY_CONNECTED", 0)):
        for _ in range(3):
            if op == "FULLY_CONNECTED":
                x = _input(rng, (1, 96), -7)
                weights = _weights(rng, (72, 96), 72, 0, True)
                y = Spec((1, 72), np.int8, np.float32(rng.uniform(0.05, 0.5)), 4)
                options = dict(fusedActivationFunction=RELU)
            else:
                x = _input(rng, (1, 6, 6, 72), -7)
                shape = (72, kernel, kernel, 72) if op == "CONV_2D" else (1, kernel, kernel, 72)
                weights = _weights(rng, shape, 72, 0 if op == "CONV_2D" else 3, True)
                y = Spec((1, 6, 6, 72), np.int8, np.float32(rng.uniform(0.05, 0.5)), 4)
                options = dict(padding=SAME, strideH=1, strideW=1, dilationHFactor=1, dilationWFactor=1,
                               fusedActivationFunction=RELU)  # clamp bounds equal between the three
                if op == "DEPTHWISE_CONV_2D":
                    options["depthMultiplier"] = 1
            branches.append(Branch(op, [x, weights, _bias(rng, 72, False, x, weights)], [y], options))
    return branches


def elementwise_mul_sweep(seed: int = 59) -> list[Branch]:
    """TFLite's int8 MUL (npukit/layer_recognition/elementwise_product.py,
    kernels/s8_mul.c): a squeeze-and-excitation block's form (a per-channel
    scale through LOGISTIC, which IREE fuses into the product, times the
    feature map), a per-channel vector broadcast over the rows as the
    second operand and as the first, two tensors of one shape, one value
    broadcast over all, a 2-D product, an output scale small enough for a
    left shift (the kernels' general arithmetic), zero points at both ends
    of int8, every activation form, and a gate steep enough that its table
    is stored whole. Branches chained; 16 inputs."""
    rng = np.random.default_rng(seed)
    branches = []

    def mul(a: Spec, b: Spec, shape, activation, out: Spec | None = None) -> Branch:
        out = out or _output(rng, shape)
        return Branch("MUL", [a, b], [out], dict(fusedActivationFunction=activation))

    x, scale = _input(rng, (1, 8, 8, 16), -5), _input(rng, (1, 1, 1, 16), 10)
    gate = Spec((1, 1, 1, 16), np.int8, np.float32(1 / 256), -128)
    branches += [Branch("LOGISTIC", [scale], [gate], {}), mul(x, gate, (1, 8, 8, 16), NONE)]
    # A steep gate: its LOGISTIC rises by more than 15 between neighbouring inputs (a table of 256 values, not
    # of 4-bit steps).
    x, steep = _input(rng, (1, 6, 7, 12), 3), replace(_input(rng, (1, 1, 1, 12), -128), scale=np.float32(0.4))
    steep_gate = Spec((1, 1, 1, 12), np.int8, np.float32(1 / 256), -128)
    branches += [Branch("LOGISTIC", [steep], [steep_gate], {}), mul(x, steep_gate, (1, 6, 7, 12), RELU)]
    branches.append(mul(_input(rng, (1, 1, 1, 8), 0), _input(rng, (1, 5, 5, 8), 7), (1, 5, 5, 8), RELU6))
    branches.append(mul(_input(rng, (1, 4, 9, 10), -20), _input(rng, (1, 4, 9, 10), 9), (1, 4, 9, 10), NONE))
    branches.append(mul(_input(rng, (1, 6, 6, 8), 1), _input(rng, (1,), -3), (1, 6, 6, 8), RELU))
    a, b = _input(rng, (1, 5, 3, 6), 2), _input(rng, (1, 1, 1, 6), -1)
    small = Spec((1, 5, 3, 6), np.int8, np.float32(np.float64(a.scale) * np.float64(b.scale) / 5.0), 4)
    branches.append(mul(a, b, a.shape, NONE, small))  # the product scaled up: a left shift of 3
    branches.append(mul(_input(rng, (1, 64), -128), _input(rng, (1, 64), 127), (1, 64), NONE))
    branches.append(mul(_input(rng, (1, 3, 4, 20), 127), _input(rng, (1, 1, 1, 20), -128), (1, 3, 4, 20), RELU,
                        _output(rng, (1, 3, 4, 20), -100)))
    return branches



def pool_sweep(seed: int = 61) -> list[Branch]:
    """int8 AVERAGE_POOL_2D and MAX_POOL_2D (layer_recognition/int8_pool.py,
    kernels/s8_pool.c): 2x2 windows at stride 2 (the kernels' unrolled
    form), 3x3 at strides 1 and 2, 2x3 and 3x2, 4x4, 5x5 (a count that is
    no power of two), 16x16 (256 values, the largest window), 3x1 (one
    reduction loop), a whole 5x25 plane, windows that
    leave input rows and columns unread, channel counts that are and are not
    multiples of 4 and one channel, every activation, zero points at both
    ends of int8; SAME padding, which the kernels refuse (an average divides
    by a count per output pixel, a max pools a padded copy), except where it
    pads nothing."""
    rng = np.random.default_rng(seed)
    cases = [
        # op, channels, (h, w), (kh, kw), (sh, sw), padding, activation, zero point
        ("AVERAGE_POOL_2D", 24, (10, 12), (2, 2), (2, 2), VALID, NONE, -3),
        ("AVERAGE_POOL_2D", 5, (7, 9), (3, 3), (1, 1), VALID, RELU, -128),
        ("AVERAGE_POOL_2D", 16, (9, 10), (3, 3), (2, 2), VALID, RELU6, 10),
        ("AVERAGE_POOL_2D", 1, (6, 7), (2, 3), (2, 1), VALID, NONE, 127),
        ("AVERAGE_POOL_2D", 37, (6, 5), (5, 5), (1, 1), VALID, NONE, 0),
        ("AVERAGE_POOL_2D", 8, (16, 17), (16, 16), (1, 1), VALID, NONE, -128),
        ("AVERAGE_POOL_2D", 12, (9, 8), (4, 4), (4, 4), VALID, RELU, 5),
        ("AVERAGE_POOL_2D", 8, (7, 7), (3, 3), (2, 2), SAME, NONE, 0),
        ("AVERAGE_POOL_2D", 20, (8, 6), (2, 2), (2, 2), SAME, NONE, -7),  # SAME that pads nothing
        ("MAX_POOL_2D", 24, (10, 12), (2, 2), (2, 2), VALID, NONE, -3),
        ("MAX_POOL_2D", 7, (9, 8), (3, 3), (2, 2), VALID, RELU, -20),
        ("MAX_POOL_2D", 20, (11, 11), (3, 2), (3, 2), VALID, RELU6, -100),
        ("MAX_POOL_2D", 4, (6, 6), (2, 2), (1, 1), VALID, RELU, 120),
        ("MAX_POOL_2D", 9, (7, 7), (3, 3), (2, 2), SAME, NONE, 0),
        ("MAX_POOL_2D", 16, (42, 1), (3, 1), (3, 1), VALID, NONE, -5),  # a window of one column
        ("AVERAGE_POOL_2D", 32, (5, 25), (5, 25), (1, 1), VALID, NONE, 3),  # a whole plane of 125 values
    ]
    branches = []
    for op, c, (h, w), (kh, kw), (sh, sw), padding, activation, zp in cases:
        x = _input(rng, (1, h, w, c), zp)
        oh, ow = _out_size(h, kh, sh, 1, padding), _out_size(w, kw, sw, 1, padding)
        out = Spec((1, oh, ow, c), np.int8, x.scale, zp)  # TFLite's pools keep the input's quantization
        branches.append(Branch(op, [x], [out], dict(padding=padding, strideH=sh, strideW=sw, filterHeight=kh,
                                                    filterWidth=kw, fusedActivationFunction=activation)))
    return branches



def quantize_sweep(seed: int = 67) -> list[Branch]:
    """TFLite's QUANTIZE of a float32 input to int8 (layer_recognition/float_quantize.py,
    kernels/s8_quantize.c; inputs uniform in [-2, 2]): scales that leave the
    range inside int8 and that clamp at both ends, zero points at both ends
    of int8 and between, lengths that are and are not multiples of a vector.
    The rounding boundaries themselves are checked in tests/cpu (the probes
    the recogniser uses)."""
    cases = [((1, 8, 8, 3), 0.02, -9), ((1, 96), 1 / 128, 0), ((1, 5, 7), 0.5, 3), ((33,), 0.016, -128),
             ((1, 4, 4, 2), 0.0157, 127), ((1, 17), 3e-3, 20), ((1, 3, 3, 3), 1.0, -128), ((1, 40), 0.0078125, 1)]
    return [Branch("QUANTIZE", [Spec(shape, np.float32)], [Spec(shape, np.int8, np.float32(scale), zp)], {})
            for shape, scale, zp in cases]

def mean_sweep(seed: int = 71) -> list[Branch]:
    """TFLite's int8 MEAN over the plane (layer_recognition/int8_pool.py,
    kind "mean"; kernels/s8_pool.c; mynpu's OP_POOL mean): a
    squeeze-and-excitation block's 16x16 (256 values, the largest window),
    output scales above and below the input's (right and left shifts),
    the same scale, zero points at both ends of int8, dimensions kept or
    dropped, one row, channel counts that are and are not multiples of 4; a
    plane of 400 values (over the kernels' 256) stays on IREE's code."""
    rng = np.random.default_rng(seed)
    cases = [
        # (h, w, c), keep dims, input scale, input zp, output scale, output zp
        ((16, 16, 16), True, 0.05, -128, 0.02, -5),
        ((7, 3, 9), False, 0.1, 3, 0.3, 127),
        ((1, 10, 12), True, 0.02, 0, 0.02, 0),  # the same quantization: a rounded average
        ((5, 5, 3), True, 0.1, 127, 0.0005, -128),  # an output scale below input / count: a left shift
        ((4, 4, 37), False, 0.07, -20, 0.01, 20),
        ((20, 20, 4), True, 0.03, 5, 0.03, 0),  # 400 values
    ]
    branches = []
    for (h, w, c), keep, in_scale, in_zp, out_scale, out_zp in cases:
        x = Spec((1, h, w, c), np.int8, np.float32(in_scale), in_zp)
        out = Spec((1, 1, 1, c) if keep else (1, c), np.int8, np.float32(out_scale), out_zp)
        branches.append(Branch("MEAN", [x, Spec.constant(np.array([1, 2], np.int32))], [out], dict(keepDims=keep)))
    return branches


def mean_window(branch: Branch) -> int:
    """The values a MEAN branch averages (its input's plane)."""
    return branch.inputs[0].shape[1] * branch.inputs[0].shape[2]


def pool_pads(branch: Branch) -> bool:
    """Whether a pool branch reads padding (SAME windows that reach past its input)."""
    if branch.options["padding"] != SAME:
        return False
    (_, h, w, _), (_, oh, ow, _) = branch.inputs[0].shape, branch.outputs[0].shape
    o = branch.options
    return (oh - 1) * o["strideH"] + o["filterHeight"] > h or (ow - 1) * o["strideW"] + o["filterWidth"] > w

# Sweeps whose branches feed one another (build_model's chain): a branch input that is an earlier branch's
# output is no model input.
CHAINED = ("conv_add", "conv_add_stages", "conv_add_ranges", "conv_add_rows", "slice_consumers", "conv_four_add",
           "conv_four_add_tails", "conv_four_long", "elementwise_mul")

SWEEPS = {"depthwise": depthwise_sweep, "depthwise_multiplier": depthwise_multiplier_sweep,
          "depthwise_quad": depthwise_quad_sweep, "depthwise_tiles": depthwise_tiles_sweep,
          "depthwise_column": depthwise_column_sweep, "depthwise_stride1": depthwise_stride1_sweep,
          "depthwise_planes": depthwise_planes_sweep,
          "conv": conv_sweep, "conv_small": conv_small_sweep, "conv_few": conv_few_sweep,
          "conv_first": conv_first_sweep, "conv_four": conv_four_sweep, "conv_four_tails": conv_four_tails_sweep,
          "conv_add": conv_add_sweep, "conv_four_add": conv_four_add_sweep,
          "conv_four_add_tails": conv_four_add_tails_sweep, "conv_four_long": conv_four_long_sweep,
          "conv_add_stages": conv_add_stages_sweep, "conv_add_ranges": conv_add_ranges_sweep,
          "conv_rows": conv_rows_sweep, "conv_add_rows": conv_add_rows_sweep,
          "conv_whole_window": conv_whole_window_sweep,
          "fully_connected": fully_connected_sweep, "fully_connected_matvec": fully_connected_matvec_sweep,
          "fully_connected_one_output": fully_connected_one_output_sweep, "slice_consumers": slice_consumers_sweep,
          "transpose_conv": transpose_conv_sweep, "hybrid": hybrid_sweep, "repeated_layers": repeated_layers_sweep,
          "elementwise_mul": elementwise_mul_sweep, "pool": pool_sweep, "quantize": quantize_sweep,
          "mean": mean_sweep}


def prepared_sweep(name: str, branches: list[Branch], path, seed: int, samples: int = 2):
    """A sweep as its tests use it: the model written to ``path``, seeded
    inputs and the reference kernels' outputs for them."""
    from support.tflite_builder import build_model, run_reference

    build_model(branches, path, chain=name in CHAINED)
    rng = np.random.default_rng(seed)
    inputs = [sweep_inputs(branches, rng, chain=name in CHAINED) for _ in range(samples)]
    return name, branches, path, inputs, [run_reference(path, x) for x in inputs]


def sweep_inputs(branches: list[Branch], rng, chain: bool = False) -> list[np.ndarray]:
    """Seeded values of the model's inputs, in build_model's order. Chained
    (build_model's chain): a tensor an earlier branch writes is no model
    input, and one that several branches read is one input."""
    from support.tflite_builder import random_input

    produced = {id(spec) for b in branches for spec in b.outputs}
    inputs = []
    seen: set[int] = set()
    for spec in (spec for b in branches for spec in b.inputs):
        if spec is None or spec.data is not None or id(spec) in produced or (chain and id(spec) in seen):
            continue
        seen.add(id(spec))
        inputs.append(random_input(spec, rng))
    return inputs

