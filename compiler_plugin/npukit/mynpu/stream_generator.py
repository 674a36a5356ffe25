"""Plans a layer's SRAM and tiles and writes its mynpu command stream.

Tiling follows the hardware's order of preference: the whole input stays in
the SRAM and the output channels are split into as few tiles as fit (weights,
biases, requantization table and output of one tile beside the input); only
when a single channel does not fit are the output rows split into bands too,
each band loading the input rows it needs. When two tiles' buffers fit, tiles
alternate between two buffer sets and their layers are marked
double-buffered (DMA overlaps compute). Layout changes are explicit DMAs:
windows of padded tensors, channel subsets of HWC tensors and depthwise
channel tiles are strided transfers, described per tensor dimension;
depthwise layers emulated one OP_CONV per channel on HWC tensors move each
channel's plane with one strided DMA. A depthwise layer with a channel
multiplier M runs as OP_DEPTH_CONV over M * C channel planes in SRAM, the
plane of output channel o gathered from input channel o // M by one DMA
each (exact: the same products and sums as TFLite's kernel).

The layers without weights (tables, pools, products) have their streams in
unweighted_streams.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from npukit.layer_recognition.layer_spec import LayerSpec, NotSupported, TensorLayout
from npukit.mynpu.isa import CONSTANTS_BINDING, LAYOUT_CHW, LAYOUT_HWC, CommandStream, HardwareConfig, Op
from npukit.mynpu.stream_plan import (
    Constants, StreamPlan, aligned, binding_sizes, candidates, dma, plane_dmas, region_dmas)
from npukit.mynpu.supported_operators import POOL_KINDS
from npukit.mynpu.unweighted_streams import pool_stream, product_stream, table_stream
from npukit.quantization.requantization import ADD_LEFT_SHIFT, scale_table

MAX_LAYER_DMA_READS = 256


@dataclass
class _Buffers:
    """One tile's SRAM buffers (addresses); ``end`` is the first byte after them."""

    weights: int
    bias: int
    quant: int
    ofm: int
    residual: int
    result: int
    ifm: int  # the tile's own input channels (depthwise)
    end: int


def _layout(spec: LayerSpec) -> int:
    return LAYOUT_HWC if "HWC" in (spec.ifm.layout, spec.ofm.layout) else LAYOUT_CHW


class _Tiling:
    def __init__(self, spec: LayerSpec, config: HardwareConfig) -> None:
        self.spec, self.config = spec, config
        self.out_bytes = 1 if spec.multipliers is not None else 4
        self.taps = spec.kernel[0] * spec.kernel[1] * (1 if spec.kind == "depthwise" else spec.ifm_chw[0])

    def input_rows(self, rows: int) -> int:
        s = self.spec
        return (rows - 1) * s.stride[0] + (s.kernel[0] - 1) * s.dilation[0] + 1

    def ifm_bytes(self, channels: int, rows: int) -> int:
        ic, _, iw = self.spec.ifm_chw
        c = channels if self.spec.kind == "depthwise" else ic
        return aligned(c * self.input_rows(rows) * iw)

    def buffers(self, channels: int, rows: int, at: int) -> _Buffers:
        """A tile's buffers placed from SRAM address ``at``."""
        spec, outputs = self.spec, channels * rows * self.spec.ofm_chw[2]
        weights = at
        bias = weights + aligned(channels * self.taps)
        quant = bias + aligned(4 * channels)
        ofm = quant + (aligned(8 * channels) if spec.multipliers is not None else 0)
        residual = ofm + aligned(outputs * self.out_bytes)
        result = residual + (aligned(outputs) if spec.add is not None else 0)
        ifm = result + (aligned(outputs) if spec.add is not None else 0)
        end = ifm + (self.ifm_bytes(channels, rows) if spec.kind == "depthwise" else 0)
        return _Buffers(weights, bias, quant, ofm, residual, result, ifm, end)

    def tile_bytes(self, channels: int, rows: int) -> int:
        return self.buffers(channels, rows, 0).end

    def choose(self, max_channels: Callable[[int], int] | None = None) -> tuple[int, int, bool]:
        """(channels per tile, rows per band, double-buffered); ``max_channels(rows)``:
        the most channels a tile of that many rows may have (its DMA reads)."""
        oc, oh, _ = self.spec.ofm_chw
        sram = self.config.sram_bytes
        for rows in candidates(oh):
            shared = 0 if self.spec.kind == "depthwise" else self.ifm_bytes(oc, rows)
            cap = max_channels(rows) if max_channels else oc
            for channels in candidates(oc):
                if channels > cap or shared + self.tile_bytes(channels, rows) > sram:
                    continue
                tiles = math.ceil(oc / channels) * math.ceil(oh / rows)
                double = tiles > 1 and shared + 2 * self.tile_bytes(channels, rows) <= sram
                return channels, rows, double
        raise NotSupported(f"the layer cannot be tiled into {sram // 1024} KiB of SRAM "
                           f"(one output channel and row need {self.ifm_bytes(1, 1) + self.tile_bytes(1, 1)} bytes)")


def _pixel_row(t: TensorLayout) -> tuple[int, bool] | None:
    """(the pixel count, channel-first) of a whole, dense tensor of one row
    of pixels, (W, C) or (C, W), else None."""
    shape, roles = t.tensor.shape, t.roles
    kept = [(r, n) for r, n in zip(roles, shape) if not (r is None and n == 1)]
    if not t.tensor.is_whole or [r for r, _ in kept] not in (["W", "C"], ["C", "W"]):
        return None
    channel_first = kept[0][0] == "C"
    return kept[1 if channel_first else 0][1], channel_first


def rows_of_pixels(spec: LayerSpec) -> LayerSpec:
    """A pointwise layer whose pixels IREE flattened into one row (H 1, W
    the pixel count) seen as a rectangle of rows: a 1x1 kernel of stride 1
    on whole dense tensors (channel-last or channel-first) computes the same
    whatever the rectangle, and only rows of a bounded width tile into SRAM."""
    tensors = [spec.ifm, spec.ofm] + ([spec.add.residual] if spec.add is not None else [])
    if spec.kind != "conv" or spec.kernel != (1, 1) or spec.stride != (1, 1) or spec.ofm_chw[1] != 1 or spec.padded:
        return spec
    rows = {_pixel_row(t) for t in tensors}
    if len(rows) != 1 or None in rows:
        return spec
    n, channel_first = rows.pop()
    height = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
    if height == 1:
        return spec

    def rectangle(t: TensorLayout) -> TensorLayout:
        channels = next(size for role, size in zip(t.roles, t.tensor.shape) if role == "C")
        if channel_first:
            shape, roles = (channels, height, n // height), ("C", "H", "W")
        else:
            shape, roles = (height, n // height, channels), ("H", "W", "C")
        return TensorLayout(replace(t.tensor, shape=shape, offsets=(0, 0, 0), sizes=shape), roles)

    add = replace(spec.add, residual=rectangle(spec.add.residual)) if spec.add is not None else None
    return replace(spec, ifm=rectangle(spec.ifm), ofm=rectangle(spec.ofm), add=add,
                   ifm_chw=(spec.ifm_chw[0], height, n // height), ofm_chw=(spec.ofm_chw[0], height, n // height))


def _padding_zero_point(spec: LayerSpec, weights: np.ndarray) -> tuple[int, np.ndarray]:
    """IFM_ZP and the biases for the NPU. Its padding holds IFM_ZP (a padded
    position adds nothing), the layer's holds ``pad_value`` whatever its
    zero point: with IFM_ZP = pad_value, each channel's bias takes the
    difference, (pad_value - ifm_zp) * the sum of its weights, so the
    positions inside the input and in the padding add what the layer's do."""
    bias = np.asarray(spec.bias, np.int64)
    if not spec.padded or spec.pad_value == spec.ifm_zp:
        return spec.ifm_zp, bias
    axes = (0, 1) if spec.kind == "depthwise" else tuple(range(1, weights.ndim))
    bias = bias + (spec.pad_value - spec.ifm_zp) * weights.astype(np.int64).sum(axis=axes)
    if (bias < -2**31).any() or (bias >= 2**31).any():
        raise NotSupported("a padded layer whose biases, with the padding value as input zero point, leave int32")
    return spec.pad_value, bias


def generate(spec: LayerSpec, config: HardwareConfig, constants: Constants, binding_count: int,
             depthwise_mode: str = "instruction") -> StreamPlan:
    """The stream of one layer. ``depthwise_mode`` is 'instruction' (OP_DEPTH_CONV)
    or 'per-channel' (one OP_CONV per channel, for hardware without it)."""
    if spec.kind == "table":
        return table_stream(spec, config, constants, binding_count)
    if spec.kind in POOL_KINDS:
        return pool_stream(spec, config, binding_count)
    if spec.kind == "mul":
        return product_stream(spec, config, constants, binding_count)
    spec = rows_of_pixels(spec)
    tiling = _Tiling(spec, config)
    ic, _, iw = spec.ifm_chw
    oc, oh, ow = spec.ofm_chw
    layout = _layout(spec)
    per_channel = spec.kind == "depthwise" and depthwise_mode == "per-channel"
    # A channel multiplier M: the layer is a depthwise layer of M * C
    # channels over the input with each channel repeated M times (output
    # channel o reads input channel o // M), which the DMA builds in SRAM
    # one channel plane at a time.
    multiplier = spec.multiplier if spec.kind == "depthwise" else 1
    # Per channel, or with a channel multiplier, on HWC tensors: each
    # channel's plane is gathered from (and scattered back to) system memory
    # by strided DMAs, and the layer computes on planes (CHW) in SRAM.
    planes = (per_channel or multiplier > 1) and layout != LAYOUT_CHW
    if planes and spec.add is not None:
        raise NotSupported("a depthwise layer with a residual addition, emulated per channel or with a channel "
                           "multiplier on HWC tensors")
    if planes and multiplier > 1:
        layout = LAYOUT_CHW  # OP_DEPTH_CONV on the planes

    def sources(first: int, count: int) -> range | list[int]:
        """The input channels of output channels first .. first + count - 1."""
        return [o // multiplier for o in range(first, first + count)] if multiplier > 1 else \
            range(first, first + count)
    # A fully connected layer that requantizes with fixed-point multipliers
    # (a 1x1 convolution over one pixel) is that convolution.
    as_conv = spec.kind == "fully_connected" and spec.multipliers is not None and spec.scales is None
    if as_conv:
        layout = LAYOUT_HWC

    def plane_reads(rows: int) -> int:
        band = (0, tiling.input_rows(rows))
        return len(plane_dmas(spec.ifm, band, [0], 0, 0))

    # Weights, biases and the requantization table take three of a layer's DMA reads.
    cap = (lambda r: (MAX_LAYER_DMA_READS - 3) // plane_reads(r)) if planes or multiplier > 1 else None
    channels, rows, double = tiling.choose(cap)
    s = CommandStream()
    sizes = binding_sizes([spec.ifm, spec.ofm] + ([spec.add.residual] if spec.add else []), binding_count)

    shared_ifm = spec.kind != "depthwise"
    ifm_at = 0
    buffer_sets = [tiling.buffers(channels, rows, tiling.ifm_bytes(oc, rows) if shared_ifm else 0)]
    if double:
        buffer_sets.append(tiling.buffers(channels, rows, buffer_sets[0].end))
    peak = buffer_sets[-1].end

    weights = np.asarray(spec.weights, np.int8)
    ifm_zp, bias = _padding_zero_point(spec, weights)
    # The requantization table (npukit.quantization.requantization.quant_table's layout), sliced per tile.
    quant_pairs = np.asarray(spec.multipliers, "<i4").reshape(-1, 2) if spec.multipliers is not None else None
    s.set(LAYOUT=layout, STRIDE_H=spec.stride[0], STRIDE_W=spec.stride[1], KERNEL_H=spec.kernel[0],
          KERNEL_W=spec.kernel[1], DILATION_H=spec.dilation[0], DILATION_W=spec.dilation[1], PAD_TOP=0,
          PAD_LEFT=spec.padding[2], IFM_ZP=ifm_zp, OFM_ZP=spec.ofm_zp, ACT_MIN=spec.act_min, ACT_MAX=spec.act_max,
          OUT_INT32=0 if spec.multipliers is not None else 1)
    tile_index = 0
    for y0 in range(0, oh, rows):
        r = min(rows, oh - y0)
        # The band's input rows, without the rows of padding above and below the input (PAD_TOP: those above).
        first = y0 * spec.stride[0] - spec.padding[0]
        iy0, end = max(first, 0), min(first + tiling.input_rows(r), spec.ifm_chw[1])
        band_in, pad_top = end - iy0, iy0 - first
        if band_in < 1:
            raise NotSupported("output rows whose windows lie entirely in the input padding")
        if shared_ifm:
            s.layer()
            dma(s, spec.ifm.tensor.binding, region_dmas(spec.ifm, {"H": (iy0, band_in)}, ifm_at), False)
        for o0 in range(0, oc, channels):
            t = min(channels, oc - o0)
            buffers = buffer_sets[tile_index % len(buffer_sets)]
            tile_index += 1
            s.layer(double)
            ifm = ifm_at
            if planes or multiplier > 1:
                ifm = buffers.ifm
                dma(s, spec.ifm.tensor.binding,
                     plane_dmas(spec.ifm, (iy0, band_in), sources(o0, t), band_in * iw, ifm), False)
            elif not shared_ifm:
                ifm = buffers.ifm
                dma(s, spec.ifm.tensor.binding,
                     region_dmas(spec.ifm, {"H": (iy0, band_in), "C": (o0, t)}, ifm), False)
            if spec.kind == "depthwise":
                tile_weights = weights[:, :, o0:o0 + t]
            else:
                tile_weights = weights[o0:o0 + t]
            if per_channel:
                tile_weights = np.ascontiguousarray(tile_weights.transpose(2, 0, 1))  # [C][KH][KW] = [OC][KH][KW][1]
            # Weights, biases and the requantization table, laid out in the
            # constants as in the SRAM (the gaps zero): one DMA.
            blob = bytearray(np.ascontiguousarray(tile_weights).tobytes())
            blob += bytes(buffers.bias - buffers.weights - len(blob))
            blob += np.asarray(bias[o0:o0 + t], np.int32).tobytes()
            if spec.multipliers is not None:
                blob += bytes(buffers.quant - buffers.weights - len(blob))
                if spec.kind == "fully_connected" and spec.scales is not None:
                    blob += scale_table(spec.scales[o0:o0 + t])
                else:
                    blob += quant_pairs[o0:o0 + t].tobytes()
            dma(s, CONSTANTS_BINDING, [(constants.add(bytes(blob)), buffers.weights, len(blob), 1, 0, 0)], False)
            in_c = t if spec.kind == "depthwise" else ic
            s.set(IFM_ADDR=ifm, IFM_H=band_in, IFM_W=iw, IFM_C=in_c, PAD_TOP=pad_top, OFM_ADDR=buffers.ofm, OFM_H=r,
                  OFM_W=ow,
                  OFM_C=t, WEIGHT_ADDR=buffers.weights, BIAS_ADDR=buffers.bias, QUANT_ADDR=buffers.quant)
            if as_conv:
                s.op(Op.CONV)
            elif spec.kind == "fully_connected":
                s.op(Op.MAT_MUL)
            elif per_channel:
                plane_in, plane_out = band_in * iw, r * ow
                s.set(IFM_C=1, OFM_C=1)
                for c in range(t):
                    s.set(IFM_ADDR=ifm + c * plane_in, OFM_ADDR=buffers.ofm + c * plane_out,
                          WEIGHT_ADDR=buffers.weights + c * spec.kernel[0] * spec.kernel[1],
                          BIAS_ADDR=buffers.bias + 4 * c, QUANT_ADDR=buffers.quant + 8 * c)
                    s.op(Op.CONV)
            elif spec.kind == "depthwise":
                s.op(Op.DEPTH_CONV)
            else:
                s.op(Op.CONV_RELU if spec.relu else Op.CONV)
            result = buffers.ofm
            if spec.add is not None:
                a = spec.add
                dma(s, a.residual.tensor.binding,
                     region_dmas(a.residual, {"H": (y0, r), "C": (o0, t)}, buffers.residual), False)
                s.set(IFM_ADDR=buffers.ofm, IFM_H=t, IFM_W=r, IFM_C=ow, OFM_ADDR=buffers.result, OFM_H=t, OFM_W=r,
                      OFM_C=ow, IFM2_ADDR=buffers.residual, IFM_ZP=a.conv_zp, IFM2_ZP=a.residual_zp,
                      IFM_MULT=a.input_multiplier[0], IFM_SHIFT=a.input_multiplier[1],
                      IFM2_MULT=a.residual_multiplier[0], IFM2_SHIFT=a.residual_multiplier[1],
                      OUT_MULT=a.output_multiplier[0], OUT_SHIFT=a.output_multiplier[1], LEFT_SHIFT=ADD_LEFT_SHIFT,
                      OFM_ZP=a.output_zp, ACT_MIN=a.act_min, ACT_MAX=a.act_max)
                s.op(Op.E_ADD)
                s.set(IFM_ZP=ifm_zp, OFM_ZP=spec.ofm_zp, ACT_MIN=spec.act_min, ACT_MAX=spec.act_max)
                result = buffers.result
            if planes:
                dma(s, spec.ofm.tensor.binding, plane_dmas(spec.ofm, (y0, r), range(o0, o0 + t), r * ow, result),
                     True)
            else:
                dma(s, spec.ofm.tensor.binding,
                     region_dmas(spec.ofm, {"H": (y0, r), "C": (o0, t)}, result), True)
    s.end()
    mode = depthwise_mode if spec.kind == "depthwise" else ""
    return StreamPlan(s.encode(), sizes, channels, rows, double, mode, peak)
