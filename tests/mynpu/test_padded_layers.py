"""Layers that read their input padding (LayerSpec.padding, as the
recogniser reads a tensor.pad inside a dispatch) on mynpu: PAD_TOP per row
band, PAD_LEFT, the bottom and right from the output size, and IFM_ZP set to
the pad value with the biases corrected (docs/mynpu-compiler.md). Against
TFLite's integer arithmetic over the padded input written out in numpy:
convolutions and depthwise layers (with a channel multiplier), every side
alone and together, strides and dilations, HWC and CHW, untiled and tiled
into a small SRAM (bands that start and end in the padding), OP_DEPTH_CONV
and its per-channel emulation, a pad value equal to the zero point and one
of its own (a zero point folded into the bias). The whole path from .tflite
models is tests/kernels/test_layer_sweeps.py's mynpu test."""

from __future__ import annotations

import numpy as np
import pytest

from npukit.layer_recognition.layer_spec import LayerSpec, NotSupported
from npukit.mynpu.isa import HardwareConfig, Op
from npukit.mynpu.options import MynpuOptions
from npukit.mynpu.supported_operators import check_npu_supported
from support.mynpu_streams import layer_tensor, requantized_int8, run_generated_layer


def _spec(rng, kind: str, ic: int, oc: int, size, kernel, stride, dilation, padding, layout: str,
          ifm_zp: int, pad_value: int, multiplier: int = 1) -> LayerSpec:
    (h, w), (kh, kw), (sh, sw), (dh, dw) = size, kernel, stride, dilation
    top, bottom, left, right = padding
    oh = (h + top + bottom - (kh - 1) * dh - 1) // sh + 1
    ow = (w + left + right - (kw - 1) * dw - 1) // sw + 1
    shape = (kh, kw, oc) if kind == "depthwise" else (oc, kh, kw, ic)
    multipliers = [(int(rng.integers(1 << 30, 1 << 31)), int(rng.integers(-14, -8))) for _ in range(oc)]
    return LayerSpec(kind, layer_tensor(0, (ic, h, w), layout), layer_tensor(1, (oc, oh, ow), layout), (ic, h, w),
                     (oc, oh, ow), kernel, stride, dilation, rng.integers(-127, 128, shape, dtype=np.int8),
                     rng.integers(-(1 << 16), 1 << 16, oc).astype(np.int32), multipliers, ifm_zp,
                     int(rng.integers(-20, 20)), -128, 127, False, multiplier=multiplier, padding=padding,
                     pad_value=pad_value)


def _reference(spec: LayerSpec, x: np.ndarray) -> np.ndarray:
    """[OC][OH][OW] int8 from x [C][H][W]: the padded input, then TFLite's arithmetic."""
    oc, oh, ow = spec.ofm_chw
    (kh, kw), (sh, sw), (dh, dw) = spec.kernel, spec.stride, spec.dilation
    top, bottom, left, right = spec.padding
    xs = np.pad(x, ((0, 0), (top, bottom), (left, right)), constant_values=spec.pad_value).astype(np.int64)
    xs -= spec.ifm_zp
    acc = np.zeros((oc, oh, ow), np.int64) + spec.bias.astype(np.int64)[:, None, None]
    if spec.kind == "depthwise":
        xs = xs[np.arange(oc) // spec.multiplier]
    for i in range(kh):
        for j in range(kw):
            window = xs[:, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
            if spec.kind == "depthwise":
                acc += window * spec.weights[i, j].astype(np.int64)[:, None, None]
            else:
                acc += np.einsum("oc,chw->ohw", spec.weights[:, i, j, :].astype(np.int64), window)
    return requantized_int8(spec, acc)


CASES = {
    # kind, ic, oc, (h, w), kernel, stride, dilation, (top, bottom, left, right), multiplier
    "conv SAME": ("conv", 5, 7, (9, 8), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1),
    "conv top only": ("conv", 3, 4, (7, 6), (3, 3), (1, 1), (1, 1), (2, 0, 0, 0), 1),
    "conv bottom only": ("conv", 3, 4, (7, 6), (3, 3), (1, 1), (1, 1), (0, 2, 0, 0), 1),
    "conv left only": ("conv", 3, 4, (7, 6), (3, 3), (1, 1), (1, 1), (0, 0, 2, 0), 1),
    "conv right only": ("conv", 3, 4, (7, 6), (3, 3), (1, 1), (1, 1), (0, 0, 0, 2), 1),
    "conv stride 2, bottom and right": ("conv", 4, 6, (10, 8), (3, 3), (2, 2), (1, 1), (0, 1, 0, 1), 1),
    "conv 10x4 stride 2 (kws)": ("conv", 1, 8, (49, 10), (10, 4), (2, 2), (1, 1), (4, 5, 1, 1), 1),
    "conv dilation 2, every side different": ("conv", 2, 3, (8, 9), (3, 3), (1, 2), (2, 2), (3, 1, 2, 4), 1),
    "depthwise SAME": ("depthwise", 8, 8, (12, 9), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1),
    "depthwise stride 2, bottom and right": ("depthwise", 6, 6, (10, 10), (3, 3), (2, 2), (1, 1), (0, 1, 0, 1), 1),
    "depthwise 5x5 every side different": ("depthwise", 4, 4, (9, 7), (5, 5), (1, 1), (1, 1), (3, 1, 0, 2), 1),
    "depthwise multiplier 2": ("depthwise", 3, 6, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 2),
}


@pytest.mark.parametrize("folded", [False, True], ids=["pad=zp", "zp folded into the bias"])
@pytest.mark.parametrize("layout", ["HWC", "CHW"])
@pytest.mark.parametrize("name", list(CASES))
def test_padded_layer_is_exact(name, layout, folded):
    kind, ic, oc, size, kernel, stride, dilation, padding, multiplier = CASES[name]
    rng = np.random.default_rng(len(name) * 7 + folded)
    zp = int(rng.integers(-128, 128))
    spec = _spec(rng, kind, ic, oc, size, kernel, stride, dilation, padding, layout,
                 0 if folded else zp, zp, multiplier)
    check_npu_supported(spec, MynpuOptions())
    x = rng.integers(-128, 128, spec.ifm_chw, dtype=np.int8)
    want = _reference(spec, x)
    runs = [("instruction", HardwareConfig()), ("instruction", HardwareConfig(sram_bytes=1024))]
    if kind == "depthwise":
        runs.append(("per-channel", HardwareConfig().without(Op.DEPTH_CONV)))
    for mode, config in runs:
        got, plan, _ = run_generated_layer(spec, config, mode, x)
        np.testing.assert_array_equal(got, want, err_msg=f"{mode}, {config.sram_bytes} bytes of SRAM")


def test_padding_beyond_the_registers_is_refused():
    rng = np.random.default_rng(0)
    spec = _spec(rng, "conv", 1, 1, (300, 4), (3, 3), (1, 1), (1, 1), (256, 0, 0, 0), "HWC", 0, 0)
    with pytest.raises(NotSupported, match="PAD_TOP and PAD_LEFT take"):
        check_npu_supported(spec, MynpuOptions())
