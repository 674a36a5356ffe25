"""The weights of channel-last layers whose output channels are vector
lanes (``NPUKIT_S8_WEIGHTS_LANES``, laid out in ``kernels/s8_lanes.h``).

Convolutions read four reduction values as one 32-bit word of the input:
the reduction (kernel y, kernel x, input channel) is cut into segments of
values side by side in a channel-last input, each padded to a multiple of
four with zero weights. Depthwise layers group their taps by four.
"""

from __future__ import annotations

import numpy as np

from npukit.layer_recognition.layer_spec import LayerSpec

CONV_BLOCK = 16  # output channels per weight block (s8_lanes.h's NPUKIT_S8_LANE_BLOCK)
DEPTHWISE_BLOCK = 64  # NPUKIT_S8_DW_BLOCK
# The channel multipliers of depthwise layers the lane kernels take (the x86
# kernel widens each input byte to M copies; s8_depthwise_lanes_x86.c).
DEPTHWISE_MULTIPLIERS = (1, 2, 4)


def channels_last_input(spec: LayerSpec) -> bool:
    """An input whose channels are side by side (or only one channel)."""
    return spec.ifm_chw[0] == 1 or spec.ifm.addressing().sc == 1


def lane_segment(spec: LayerSpec) -> int:
    """Values of the reduction per segment: a whole kernel row's taps and
    channels where they follow each other in the input, else one tap's
    channels."""
    ic, kw = spec.ifm_chw[0], spec.kernel[1]
    tap_step = spec.dilation[1] * spec.ifm.addressing().sw
    if channels_last_input(spec) and (kw == 1 or tap_step == ic):
        return kw * ic
    return ic


def lane_weights(spec: LayerSpec) -> np.ndarray:
    w = np.asarray(spec.weights, np.int8)
    if spec.kind == "depthwise":  # [KH][KW][C] -> [C / 64][taps / 4][4][16][4]
        taps = w.reshape(-1, w.shape[-1])
        taps = np.pad(taps, ((0, -taps.shape[0] % 4), (0, -taps.shape[1] % DEPTHWISE_BLOCK)))
        groups, blocks = taps.shape[0] // 4, taps.shape[1] // DEPTHWISE_BLOCK
        # [g][t][b][L][k][i] -> [b][g][k][L][i][t]: lane 4L + i of quarter k is channel 16L + 4k + i.
        return np.ascontiguousarray(taps.reshape(groups, 4, blocks, 4, 4, 4).transpose(2, 0, 4, 3, 5, 1))
    oc = w.shape[0]
    segment = lane_segment(spec)
    segments = w.reshape(oc, -1, segment)
    segments = np.pad(segments, ((0, -oc % CONV_BLOCK), (0, 0), (0, -segment % 4)))
    groups = segments.shape[1] * segments.shape[2] // 4
    # [OC / 16][16][groups][4] -> [OC / 16][groups][16][4]
    return np.ascontiguousarray(segments.reshape(-1, CONV_BLOCK, groups, 4).transpose(0, 2, 1, 3))
