"""A depthwise output with a channel multiplier addresses channel c * M + m
as two dimensions (C, M); merged_channels makes them one channel dimension
where that is exact (M right after C, read whole) and refuses the rest, so
a consumer never writes channel c * M + m where another one goes."""

from __future__ import annotations

import pytest

from npukit.layer_recognition.dispatch_ir import SystemTensor
from npukit.layer_recognition.layer_spec import NotSupported, TensorLayout, merged_channels


def _layout(shape, roles, offsets=None, sizes=None) -> TensorLayout:
    offsets = offsets or (0,) * len(shape)
    return TensorLayout(SystemTensor(1, 16, tuple(shape), "i8", tuple(offsets), tuple(sizes or shape)), roles)


def test_hwc_with_multiplier_is_channel_c_times_m_plus_m():
    merged = merged_channels(_layout((7, 6, 3, 2), ("H", "W", "C", "M")))
    assert merged.roles == ("H", "W", "C") and merged.tensor.shape == (7, 6, 6)
    a = merged.addressing()
    assert (a.offset, a.sc, a.sh, a.sw) == (16, 1, 36, 6)
    assert merged.layout == "HWC"


def test_channel_window_keeps_its_offset():
    merged = merged_channels(_layout((5, 4, 8, 3), ("H", "W", "C", "M"), (0, 0, 2, 0), (5, 4, 4, 3)))
    assert merged.tensor.offsets == (0, 0, 6) and merged.tensor.sizes == (5, 4, 12)


def test_chw_with_multiplier():
    merged = merged_channels(_layout((4, 2, 5, 5), ("C", "M", "H", "W")))
    assert merged.roles == ("C", "H", "W") and merged.tensor.shape == (8, 5, 5) and merged.layout == "CHW"


@pytest.mark.parametrize("shape,roles,offsets,sizes", [
    ((3, 7, 6, 2), ("C", "H", "W", "M"), None, None),  # M apart from C: channels not c * M + m densely
    ((7, 6, 2, 3), ("H", "W", "M", "C"), None, None),  # m outer: channel m * C + c
    ((7, 6, 3, 4), ("H", "W", "C", "M"), (0, 0, 0, 1), (7, 6, 3, 2)),  # part of M
    ((7, 6, 2), ("H", "W", "M"), None, None),  # no channel dimension
])
def test_other_layouts_are_refused(shape, roles, offsets, sizes):
    with pytest.raises(NotSupported):
        merged_channels(_layout(shape, roles, offsets, sizes))
