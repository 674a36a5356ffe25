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

An int8 table layer (LayerSpec kind "table") loads its 256-byte table once,
in a layer of its own, then looks its elements up in tiles of at most
65535 elements (IFM_W's range), each tile read, looked up in place by
OP_TABLE and written back; with more than one tile two buffers alternate
and the tiles' layers double-buffer.

An int8 pool (LayerSpec kinds "average_pool", "max_pool" and "mean") runs as
OP_POOL on tiles of channels and, when one channel's plane does not fit,
bands of output rows (each reading the input rows its windows cover): per
tile the input region by DMA, OP_POOL, the output region back; two buffer
sets alternate (double-buffered) when they fit.

An int8 product (kind "mul", TFLite's MUL) loads the factors' tables (a
factor that is not its value less a zero point: a fused LOGISTIC gate) and a
broadcast operand (one value per channel, or one value) in a first layer,
the operand looked up there once; then per tile of rows x by DMA (looked up
in place), y by DMA where it is a whole tensor (looked up in place),
OP_E_MUL writing over x, the result by DMA.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Callable, TypeVar

import numpy as np

from npukit.mynpu.isa import (
    CONSTANTS_BINDING, E_MUL_CHANNELS, E_MUL_ONE, E_MUL_SAME, LAYOUT_CHW, LAYOUT_HWC, POOL_AVERAGE, POOL_MAX,
    POOL_MEAN, TABLE_BYTES, CommandStream, HardwareConfig, Op)
from npukit.quantization.requantization import ADD_LEFT_SHIFT, scale_table
from npukit.layer_recognition.layer_spec import LayerSpec, NotSupported, TensorLayout
from npukit.mynpu.supported_operators import POOL_KINDS, mean_registers, pool_window, product_factors

ALIGN = 16
MAX_DMA_LENGTH = 1 << 24
MAX_LAYER_DMA_READS = 256


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


@dataclass
class Constants:
    """The executable's constant segment, shared by its exports."""

    data: bytearray = field(default_factory=bytearray)

    def add(self, blob: bytes) -> int:
        self.data.extend(b"\0" * (-len(self.data) % ALIGN))
        at = len(self.data)
        self.data.extend(blob)
        return at

    def __len__(self) -> int:
        return len(self.data)


@dataclass
class StreamPlan:
    stream: bytes
    binding_sizes: tuple[int, ...]
    channel_tile: int
    row_tile: int
    double_buffered: bool
    depthwise_mode: str  # "instruction", "per-channel" or "" for other layers
    sram_bytes: int  # planned peak


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


def _region_dmas(t: TensorLayout, region: dict[str, tuple[int, int]], sram_at: int):
    """DMA descriptors (sys offset, sram offset, length, rows, sys stride, sram
    stride) moving a C/H/W region of a system tensor to or from a dense SRAM
    copy of the region in the tensor's own dimension order."""
    shape = t.tensor.shape
    offsets, sizes = [], []
    for dim, role in enumerate(t.roles):
        base = t.tensor.offsets[dim]
        start, count = region.get(role, (0, t.tensor.sizes[dim])) if role else (0, t.tensor.sizes[dim])
        offsets.append(base + start)
        sizes.append(count)
    e = t.tensor.element_bytes
    n = len(shape)
    # Dimensions j.. form one contiguous run when every dimension after j is whole;
    # dimension j - 1 is the DMA's rows and the ones before it are separate transfers
    # (a scalar, rank 0: one run of one element).
    j = next((k for k in range(n) if all(sizes[i] == shape[i] for i in range(k + 1, n))), 0)
    run = math.prod(sizes[j:]) * e
    sys_strides = [math.prod(shape[i + 1:]) * e for i in range(n)]
    sram_strides = [math.prod(sizes[i + 1:]) * e for i in range(n)]
    row_dim = j - 1
    rows = sizes[row_dim] if row_dim >= 0 else 1
    outer = sizes[:max(row_dim, 0)]
    base_sys = t.tensor.offset + sum(offsets[i] * sys_strides[i] for i in range(n))
    row_strides = (sys_strides[row_dim], sram_strides[row_dim]) if row_dim >= 0 else (0, 0)
    dmas = []
    for index in itertools.product(*(range(k) for k in outer)):
        sys_at = base_sys + sum(p * st for p, st in zip(index, sys_strides))
        sram = sram_at + sum(p * st for p, st in zip(index, sram_strides))
        dmas.append((sys_at, sram, run, rows, *row_strides))
    return dmas


def _merged(dmas):
    """``dmas`` with each transfer that continues the previous one (the same
    row length and strides, its first row where the previous one's rows
    end, on both sides) folded into it as more rows."""
    merged: list[tuple[int, int, int, int, int, int]] = []
    for dma in dmas:
        if merged:
            sys_at, sram, length, rows, sys_stride, sram_stride = merged[-1]
            if (dma[2:3] + dma[4:] == (length, sys_stride, sram_stride) and rows > 0
                    and dma[0] == sys_at + rows * sys_stride and dma[1] == sram + rows * sram_stride):
                merged[-1] = (sys_at, sram, length, rows + dma[3], sys_stride, sram_stride)
                continue
        merged.append(dma)
    return merged


def _in_planes(dmas):
    """``dmas`` (2-D transfers) with each run of equal transfers at a fixed
    distance from one another on both sides, no closer than one transfer's
    span, folded into one three-dimensional transfer (DMA_PLANES): a
    channel-planar region, or one channel plane after another, is one DMA."""
    out: list[list[int]] = []  # sys, sram, length, rows, sys stride, sram stride, planes, plane strides
    for sys_at, sram, length, rows, sys_stride, sram_stride in dmas:
        if out:
            last = out[-1]
            spans = ((rows - 1) * sys_stride + length, (rows - 1) * sram_stride + length)
            if last[2:6] == [length, rows, sys_stride, sram_stride]:
                if last[6] == 1:
                    deltas = (sys_at - last[0], sram - last[1])
                    if deltas[0] >= spans[0] and deltas[1] >= spans[1]:
                        last[6], last[7], last[8] = 2, *deltas
                        continue
                elif (sys_at == last[0] + last[6] * last[7]) and sram == last[1] + last[6] * last[8]:
                    last[6] += 1
                    continue
        out.append([sys_at, sram, length, rows, sys_stride, sram_stride, 1, 0, 0])
    return [tuple(d) for d in out]


def _plane_dmas(t: TensorLayout, rows: tuple[int, int], channels: "range | list[int]", plane_bytes: int,
                sram_at: int):
    """DMAs moving each channel of ``channels`` (rows ``rows``) of a system
    tensor to or from a channel plane in SRAM (the i-th at ``sram_at + i *
    plane_bytes``): per channel, one transfer (strided in an HWC tensor)
    when the tensor's rows are whole. A channel may repeat (a depthwise
    layer's channel multiplier reads each input channel M times)."""
    one = _merged(_region_dmas(t, {"H": rows, "C": (0, 1)}, sram_at))
    c_dim = t.roles.index("C")
    step = math.prod(t.tensor.shape[c_dim + 1:]) * t.tensor.element_bytes
    return [(sys_at + c * step, sram + i * plane_bytes, *rest)
            for i, c in enumerate(channels) for sys_at, sram, *rest in one]


def _dma(s: CommandStream, binding: int, dmas, write: bool) -> None:
    for transfer in _in_planes(dmas):
        if transfer[2] > MAX_DMA_LENGTH:
            raise NotSupported("a transfer longer than the DMA engine's 16 MiB")
        s.dma(write, binding, *transfer)


def _candidates(n: int) -> list[int]:
    return sorted({math.ceil(n / k) for k in range(1, n + 1)}, reverse=True)


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
        return _aligned(c * self.input_rows(rows) * iw)

    def buffers(self, channels: int, rows: int, at: int) -> _Buffers:
        """A tile's buffers placed from SRAM address ``at``."""
        spec, outputs = self.spec, channels * rows * self.spec.ofm_chw[2]
        weights = at
        bias = weights + _aligned(channels * self.taps)
        quant = bias + _aligned(4 * channels)
        ofm = quant + (_aligned(8 * channels) if spec.multipliers is not None else 0)
        residual = ofm + _aligned(outputs * self.out_bytes)
        result = residual + (_aligned(outputs) if spec.add is not None else 0)
        ifm = result + (_aligned(outputs) if spec.add is not None else 0)
        end = ifm + (self.ifm_bytes(channels, rows) if spec.kind == "depthwise" else 0)
        return _Buffers(weights, bias, quant, ofm, residual, result, ifm, end)

    def tile_bytes(self, channels: int, rows: int) -> int:
        return self.buffers(channels, rows, 0).end

    def choose(self, max_channels: Callable[[int], int] | None = None) -> tuple[int, int, bool]:
        """(channels per tile, rows per band, double-buffered); ``max_channels(rows)``:
        the most channels a tile of that many rows may have (its DMA reads)."""
        oc, oh, _ = self.spec.ofm_chw
        sram = self.config.sram_bytes
        for rows in _candidates(oh):
            shared = 0 if self.spec.kind == "depthwise" else self.ifm_bytes(oc, rows)
            cap = max_channels(rows) if max_channels else oc
            for channels in _candidates(oc):
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


def _binding_sizes(tensors: list[TensorLayout], binding_count: int) -> tuple[int, ...]:
    """Each binding's size: the end of the furthest of ``tensors`` in it."""
    sizes = [0] * binding_count
    for t in tensors:
        sizes[t.tensor.binding] = max(sizes[t.tensor.binding], t.tensor.extent)
    return tuple(sizes)


#: The most elements one OP_TABLE looks up (IFM_W's range; IFM_H = IFM_C = 1).
MAX_TABLE_TILE = 65535


def _table_tile(elements: int, sram_bytes: int) -> tuple[int, bool]:
    """(elements per tile, double-buffered) of a table layer: all of them in
    one tile when they fit beside the table, else as many as two buffers of
    the SRAM left after it hold."""
    free = sram_bytes - _aligned(TABLE_BYTES)
    if elements <= min(free, MAX_TABLE_TILE):
        return elements, False
    tile = min(free // 2 // ALIGN * ALIGN, MAX_TABLE_TILE)
    if tile < 1:
        raise NotSupported(f"the table and one element do not fit into {sram_bytes // 1024} KiB of SRAM")
    return tile, True


def _table_stream(spec: LayerSpec, config: HardwareConfig, constants: Constants, binding_count: int) -> StreamPlan:
    """The stream of an int8 table layer: the table by DMA once, then per
    tile DMA in, OP_TABLE in place, DMA out."""
    table = np.asarray(spec.weights, np.int8).reshape(-1)
    if table.size != TABLE_BYTES:
        raise NotSupported(f"a table of {table.size} entries (OP_TABLE takes {TABLE_BYTES})")
    n = spec.ifm_chw[2]
    if spec.ofm_chw[2] != n:
        raise NotSupported("a table layer whose output has another number of elements than its input")
    tile, double = _table_tile(n, config.sram_bytes)
    s = CommandStream()
    table_at = 0
    buffers = [_aligned(TABLE_BYTES)]
    if double:
        buffers.append(buffers[0] + _aligned(tile))
    # The table, in a layer of its own (layer 0: not double-buffered) before any lookup.
    _dma(s, CONSTANTS_BINDING, [(constants.add(table.tobytes()), table_at, TABLE_BYTES, 1, 0, 0)], False)
    s.set(TABLE_ADDR=table_at, IFM_H=1, IFM_C=1, OFM_H=1, OFM_C=1)
    for index, x0 in enumerate(range(0, n, tile)):
        count = min(tile, n - x0)
        at = buffers[index % len(buffers)]
        s.layer(double)
        _dma(s, spec.ifm.tensor.binding, _region_dmas(spec.ifm, {"W": (x0, count)}, at), False)
        s.set(IFM_ADDR=at, IFM_W=count, OFM_ADDR=at, OFM_W=count)
        s.op(Op.TABLE)
        _dma(s, spec.ofm.tensor.binding, _region_dmas(spec.ofm, {"W": (x0, count)}, at), True)
    s.end()
    return StreamPlan(s.encode(), _binding_sizes([spec.ifm, spec.ofm], binding_count), 1, tile, double, "",
                      buffers[-1] + _aligned(tile))


_Tile = TypeVar("_Tile")


def _tile_in_halves(tile_within: Callable[[int], _Tile | None], whole: _Tile,
                    sram_bytes: int) -> tuple[_Tile | None, bool]:
    """(tile, double-buffered): ``whole`` (the layer in one tile) where
    ``tile_within(sram_bytes)`` gives it; otherwise a tile of half the SRAM
    where one fits, two buffer sets alternating (the next tile's DMA
    overlaps this one's compute); otherwise a tile of the whole SRAM (None:
    none fits)."""
    tile = tile_within(sram_bytes)
    half = tile_within(sram_bytes // 2) if tile != whole else None
    return (half, True) if half is not None else (tile, False)


def _pool_stream(spec: LayerSpec, config: HardwareConfig, binding_count: int) -> StreamPlan:
    """The stream of an int8 pool: per tile of channels and output rows, the
    input rows its windows read by DMA, OP_POOL, the output by DMA."""
    (ih, iw), (kh, kw) = pool_window(spec)
    whole_plane = (ih, iw) != spec.ifm_chw[1:]  # a global pool on a rectangle of its flattened plane
    c, oh, ow = spec.ofm_chw
    sh, sw = spec.stride

    def input_rows(rows: int) -> int:
        return ih if whole_plane else (rows - 1) * sh + kh

    def tile_bytes(channels: int, rows: int) -> int:
        return _aligned(input_rows(rows) * iw * channels) + _aligned(rows * ow * channels)

    def tile_within(budget: int) -> tuple[int, int] | None:
        """The largest tile (channels, rows; whole rows first) within ``budget`` bytes."""
        fits = ((channels, rows) for rows in _candidates(oh) for channels in _candidates(c)
                if tile_bytes(channels, rows) <= budget)
        return next(fits, None)

    tile, double = _tile_in_halves(tile_within, (c, oh), config.sram_bytes)
    if tile is None:
        raise NotSupported(f"the pool cannot be tiled into {config.sram_bytes // 1024} KiB of SRAM (one channel "
                           f"and output row need {tile_bytes(1, 1)} bytes)")
    channels, rows = tile
    size = tile_bytes(channels, rows)
    buffers = [0, size] if double else [0]
    s = CommandStream()
    s.set(LAYOUT=LAYOUT_HWC, KERNEL_H=kh, KERNEL_W=kw, STRIDE_H=sh, STRIDE_W=sw, PAD_TOP=0, PAD_LEFT=0,
          ACT_MIN=spec.act_min, ACT_MAX=spec.act_max)
    variant = {"average_pool": POOL_AVERAGE, "max_pool": POOL_MAX, "mean": POOL_MEAN}[spec.kind]
    if spec.kind == "mean":
        s.set(**mean_registers(spec))
    index = 0
    for y0 in range(0, oh, rows):
        r = min(rows, oh - y0)
        band = {} if whole_plane else {"H": (y0 * sh, input_rows(r))}
        for c0 in range(0, c, channels):
            t = min(channels, c - c0)
            ifm = buffers[index % len(buffers)]
            ofm = ifm + _aligned(input_rows(r) * iw * t)
            index += 1
            s.layer(double)
            _dma(s, spec.ifm.tensor.binding, _region_dmas(spec.ifm, band | {"C": (c0, t)}, ifm), False)
            s.set(IFM_ADDR=ifm, IFM_H=input_rows(r), IFM_W=iw, IFM_C=t, OFM_ADDR=ofm, OFM_H=r, OFM_W=ow, OFM_C=t)
            s.op(Op.POOL, variant)
            _dma(s, spec.ofm.tensor.binding, _region_dmas(spec.ofm, {"H": (y0, r), "C": (c0, t)}, ofm), True)
    s.end()
    return StreamPlan(s.encode(), _binding_sizes([spec.ifm, spec.ofm], binding_count), channels, rows, double, "",
                      buffers[-1] + size)


def _lookup_in_place(s: CommandStream, table_at: int, at: int, n: int) -> None:
    """OP_TABLE on the ``n`` elements at ``at``, in place, with the table at ``table_at``."""
    s.set(TABLE_ADDR=table_at, IFM_ADDR=at, IFM_H=1, IFM_W=n, IFM_C=1, OFM_ADDR=at, OFM_H=1, OFM_W=n, OFM_C=1)
    s.op(Op.TABLE)


def _product_stream(spec: LayerSpec, config: HardwareConfig, constants: Constants, binding_count: int) -> StreamPlan:
    """The stream of an int8 product (product_factors: each factor its
    value less a zero point, after an OP_TABLE lookup or not)."""
    (x_table, x_zp), (y_table, y_zp) = product_factors(spec)
    c, _, rows = spec.ofm_chw
    broadcast = {("W", "C"): E_MUL_SAME, ("C",): E_MUL_CHANNELS, (None,): E_MUL_ONE}[spec.operand.roles]
    s = CommandStream()
    at = 0
    tables: dict[str, int] = {}
    for name, table in (("x", x_table), ("y", y_table)):
        if table is not None:
            _dma(s, CONSTANTS_BINDING, [(constants.add(table.tobytes()), at, TABLE_BYTES, 1, 0, 0)], False)
            tables[name], at = at, at + _aligned(TABLE_BYTES)
    y_at = None
    if broadcast != E_MUL_SAME:  # one vector or value for every tile, looked up once
        n = c if broadcast == E_MUL_CHANNELS else 1
        y_at, at = at, at + _aligned(n)
        _dma(s, spec.operand.tensor.binding, _region_dmas(spec.operand, {}, y_at), False)
        if "y" in tables:
            _lookup_in_place(s, tables["y"], y_at, n)
    # Rows per tile: x (the result written over it) and, for a whole y, y's rows; OP_TABLE takes at most
    # 65,535 elements and OP_E_MUL 65,535 rows.
    operands = 2 if broadcast == E_MUL_SAME else 1
    free = config.sram_bytes - at
    limit = 65535 // c if tables else 65535

    def rows_within(budget: int) -> int | None:
        """The most rows a tile within ``budget`` bytes holds."""
        fitting = max((r for r in _candidates(rows) if operands * _aligned(r * c) <= budget), default=0)
        return min(limit, rows, fitting) or None

    tile, double = _tile_in_halves(rows_within, rows, free)
    if tile is None:
        raise NotSupported(f"the product cannot be tiled into {config.sram_bytes // 1024} KiB of SRAM (one row of "
                           f"{c} channels needs {operands * _aligned(c)} bytes beside its tables)")
    size = operands * _aligned(tile * c)
    buffers = [at, at + size] if double else [at]
    (multiplier, shift), = spec.multipliers
    s.set(IFM_ZP=x_zp, IFM2_ZP=y_zp, OUT_MULT=multiplier, OUT_SHIFT=shift, OFM_ZP=spec.ofm_zp, ACT_MIN=spec.act_min,
          ACT_MAX=spec.act_max)
    for index, y0 in enumerate(range(0, rows, tile)):
        r = min(tile, rows - y0)
        x_at = buffers[index % len(buffers)]
        s.layer(double)
        _dma(s, spec.ifm.tensor.binding, _region_dmas(spec.ifm, {"W": (y0, r)}, x_at), False)
        if "x" in tables:
            _lookup_in_place(s, tables["x"], x_at, r * c)
        operand = y_at
        if broadcast == E_MUL_SAME:
            operand = x_at + _aligned(r * c)
            _dma(s, spec.operand.tensor.binding, _region_dmas(spec.operand, {"W": (y0, r)}, operand), False)
            if "y" in tables:
                _lookup_in_place(s, tables["y"], operand, r * c)
        s.set(IFM_ADDR=x_at, IFM_H=1, IFM_W=r, IFM_C=c, IFM2_ADDR=operand, OFM_ADDR=x_at, OFM_H=1, OFM_W=r, OFM_C=c)
        s.op(Op.E_MUL, broadcast)
        _dma(s, spec.ofm.tensor.binding, _region_dmas(spec.ofm, {"W": (y0, r)}, x_at), True)
    s.end()
    return StreamPlan(s.encode(), _binding_sizes([spec.ifm, spec.operand, spec.ofm], binding_count), c, tile, double,
                      "", buffers[-1] + size)


def generate(spec: LayerSpec, config: HardwareConfig, constants: Constants, binding_count: int,
             depthwise_mode: str = "instruction") -> StreamPlan:
    """The stream of one layer. ``depthwise_mode`` is 'instruction' (OP_DEPTH_CONV)
    or 'per-channel' (one OP_CONV per channel, for hardware without it)."""
    if spec.kind == "table":
        return _table_stream(spec, config, constants, binding_count)
    if spec.kind in POOL_KINDS:
        return _pool_stream(spec, config, binding_count)
    if spec.kind == "mul":
        return _product_stream(spec, config, constants, binding_count)
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
        return len(_plane_dmas(spec.ifm, band, [0], 0, 0))

    # Weights, biases and the requantization table take three of a layer's DMA reads.
    cap = (lambda r: (MAX_LAYER_DMA_READS - 3) // plane_reads(r)) if planes or multiplier > 1 else None
    channels, rows, double = tiling.choose(cap)
    s = CommandStream()
    sizes = _binding_sizes([spec.ifm, spec.ofm] + ([spec.add.residual] if spec.add else []), binding_count)

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
            _dma(s, spec.ifm.tensor.binding, _region_dmas(spec.ifm, {"H": (iy0, band_in)}, ifm_at), False)
        for o0 in range(0, oc, channels):
            t = min(channels, oc - o0)
            buffers = buffer_sets[tile_index % len(buffer_sets)]
            tile_index += 1
            s.layer(double)
            ifm = ifm_at
            if planes or multiplier > 1:
                ifm = buffers.ifm
                _dma(s, spec.ifm.tensor.binding,
                     _plane_dmas(spec.ifm, (iy0, band_in), sources(o0, t), band_in * iw, ifm), False)
            elif not shared_ifm:
                ifm = buffers.ifm
                _dma(s, spec.ifm.tensor.binding,
                     _region_dmas(spec.ifm, {"H": (iy0, band_in), "C": (o0, t)}, ifm), False)
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
            _dma(s, CONSTANTS_BINDING, [(constants.add(bytes(blob)), buffers.weights, len(blob), 1, 0, 0)], False)
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
                _dma(s, a.residual.tensor.binding,
                     _region_dmas(a.residual, {"H": (y0, r), "C": (o0, t)}, buffers.residual), False)
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
                _dma(s, spec.ofm.tensor.binding, _plane_dmas(spec.ofm, (y0, r), range(o0, o0 + t), r * ow, result),
                     True)
            else:
                _dma(s, spec.ofm.tensor.binding,
                     _region_dmas(spec.ofm, {"H": (y0, r), "C": (o0, t)}, result), True)
    s.end()
    mode = depthwise_mode if spec.kind == "depthwise" else ""
    return StreamPlan(s.encode(), sizes, channels, rows, double, mode, peak)
