"""The host's choice of the lane convolution's row-taps form
(npukit.cpu.kernel_choice.rows_fit): offered exactly on the parameter space
the kernel covers (kernels/s8_conv_lanes_x86.c's row_taps checks the same),
the default where it measured faster, never on a board."""

from __future__ import annotations

import platform

import numpy as np
import pytest

from npukit.cpu.kernel_choice import KernelChoice, candidates, default_choice, rows_fit
from npukit.layer_recognition.layer_spec import LayerSpec
from npukit.targets.cpu_presets import CORTEX_M4, HOST
from cpu.test_layer_kernels import _layout

ROWS, LANES = KernelChoice(weights="lanes", conv_form="rows"), KernelChoice(weights="lanes")


def _spec(ic=16, oc=16, hw=(8, 8), kernel=(3, 3), stride=(1, 1), dilation=(1, 1), layout="HWC",
          padding=(1, 1, 1, 1), kind="conv") -> LayerSpec:
    out_hw = tuple((n + p0 + p1 - d * (k - 1) - 1) // s + 1
                   for n, p0, p1, k, s, d in zip(hw, padding[::2], padding[1::2], kernel, stride, dilation))
    return LayerSpec(kind=kind, ifm=_layout(0, 0, (ic, *hw), layout, 0), ofm=_layout(1, 0, (oc, *out_hw), layout, 0),
                     ifm_chw=(ic, *hw), ofm_chw=(oc, *out_hw), kernel=kernel, stride=stride, dilation=dilation,
                     weights=np.zeros((oc, *kernel, ic), np.int8), bias=np.zeros(oc, np.int32),
                     multipliers=[(1 << 30, -8)] * oc, ifm_zp=0, ofm_zp=0, act_min=-128, act_max=127, relu=False,
                     padding=padding)


FITS = {
    "resnet8's 3x3 16->16": _spec(),
    "1 output channel": _spec(oc=1),
    "13 output channels, stride 2 and dilation 2 in height": _spec(oc=13, stride=(2, 1), dilation=(2, 1)),
    "kernel rows of 2 taps, unpadded": _spec(kernel=(2, 2), padding=(0, 0, 0, 0)),
    "kernel rows of 5 taps, 4 input channels": _spec(ic=4, kernel=(1, 5), padding=(0, 0, 2, 2)),
}
OUTSIDE = {
    "17 output channels": _spec(oc=17),
    "3 input channels": _spec(ic=3),
    "18 input channels": _spec(ic=18),
    "stride 2 along the row": _spec(stride=(1, 2)),
    "dilation 2 along the row": _spec(dilation=(1, 2), padding=(2, 2, 2, 2)),
    "kernel rows of one tap": _spec(kernel=(3, 1), padding=(1, 1, 0, 0)),
    "kernel rows of 6 taps": _spec(kernel=(1, 6), padding=(0, 0, 2, 3)),
    "channel planes": _spec(layout="CHW"),
    "depthwise": _spec(ic=16, kind="depthwise"),
}


@pytest.mark.parametrize("name", list(FITS))
def test_row_taps_fit(name):
    assert rows_fit(FITS[name])


@pytest.mark.parametrize("name", list(OUTSIDE))
def test_row_taps_outside_their_space(name):
    spec = OUTSIDE[name]
    assert not rows_fit(spec)
    assert ROWS not in candidates(spec, HOST)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="the lane kernels are the x86 host's")
def test_host_default_is_rows_except_for_eight_channels():
    for spec in FITS.values():
        assert default_choice(spec, HOST) == ROWS and candidates(spec, HOST)[1] == LANES
    eight = _spec(oc=8)  # pairs of pixels measured faster
    assert rows_fit(eight) and candidates(eight, HOST)[:2] == [LANES, ROWS]
    assert default_choice(_spec(oc=17), HOST) == LANES


def test_boards_never_offer_rows():
    for spec in FITS.values():
        assert all(c.conv_form != "rows" and c.weights != "lanes" for c in candidates(spec, CORTEX_M4))
