"""Inputs a layer reads as a window of a larger tensor (a SPLIT, SLICE or
STRIDED_SLICE IREE fused into the layer's dispatch): which tensor dimension
each dimension of the load's result reads when the load drops dimensions of
one element, how the window is addressed, and the NPU's transfers of a
window and of a scalar (a one-output layer's rank-0 result)."""

from __future__ import annotations

import pytest

from npukit.layer_recognition.contraction_geometry import loaded_dimensions
from npukit.layer_recognition.dispatch_ir import SystemTensor
from npukit.layer_recognition.layer_spec import NotSupported, TensorLayout
from npukit.mynpu.stream_plan import merged, region_dmas


def _tensor(shape, offsets, sizes, dtype="i8", offset=64) -> SystemTensor:
    return SystemTensor(0, offset, tuple(shape), dtype, tuple(offsets), tuple(sizes))


@pytest.mark.parametrize("sizes,loaded,dims", [
    ((1, 5, 1, 32), (5, 32), [1, 3]),  # microWakeWord's state window: batch and width of one dropped
    ((1, 9, 1, 64), (1, 9, 1, 64), [0, 1, 2, 3]),  # nothing dropped
    ((1, 1, 32), (1, 32), [0, 2]),  # a dimension of one kept: either one is read at index 0
    ((4, 1), (4,), [0]),
])
def test_loaded_dimensions(sizes, loaded, dims):
    assert loaded_dimensions(_tensor(sizes, (0,) * len(sizes), sizes), loaded) == dims


@pytest.mark.parametrize("sizes,loaded", [((2, 5), (5,)), ((5, 3), (3, 5)), ((5, 1), (5, 2))])
def test_loads_that_do_not_follow_their_elements_are_refused(sizes, loaded):
    with pytest.raises(NotSupported):
        loaded_dimensions(_tensor(sizes, (0,) * len(sizes), sizes), loaded)


def test_window_is_addressed_from_its_start_with_the_whole_tensors_strides():
    window = TensorLayout(_tensor((1, 9, 1, 64), (0, 4, 0, 32), (1, 5, 1, 32)), (None, "W", None, "C"))
    a = window.addressing()
    assert (a.offset, a.sc, a.sw) == (64 + 4 * 64 + 32, 1, 64)
    assert window.layout == "HWC"


def test_npu_moves_a_window_row_by_row():
    """Rows 4-8, channels 32-63 of a 9x64 tensor: one transfer of five
    32-byte rows 64 bytes apart in the tensor, dense in SRAM."""
    window = TensorLayout(_tensor((1, 9, 1, 64), (0, 4, 0, 32), (1, 5, 1, 32)), (None, "W", None, "C"))
    assert merged(region_dmas(window, {}, 1024)) == [(64 + 4 * 64 + 32, 1024, 32, 5, 64, 32)]


def test_npu_moves_a_scalar_as_one_element():
    """A one-output layer's int32 result, a tensor of rank 0: one transfer of
    its four bytes."""
    scalar = TensorLayout(_tensor((), (), (), dtype="i32", offset=16), ())
    assert region_dmas(scalar, {}, 512) == [(16, 512, 4, 1, 0, 0)]
