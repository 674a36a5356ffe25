"""What every mynpu command stream is planned from: the executable's
constant segment, a layer's stream plan, DMA descriptors for regions of a
tensor and for channel planes (2-D transfers, folded into DMA_PLANES where
they repeat at a fixed distance), and the choice of a tile: the whole layer,
else halves of the SRAM double-buffered, else the whole SRAM.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Callable, TypeVar

from npukit.layer_recognition.layer_spec import NotSupported, TensorLayout
from npukit.mynpu.isa import CommandStream

ALIGN = 16
MAX_DMA_LENGTH = 1 << 24


def aligned(n: int) -> int:
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


def region_dmas(t: TensorLayout, region: dict[str, tuple[int, int]], sram_at: int):
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


def merged(dmas):
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


def in_planes(dmas):
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


def plane_dmas(t: TensorLayout, rows: tuple[int, int], channels: "range | list[int]", plane_bytes: int,
                sram_at: int):
    """DMAs moving each channel of ``channels`` (rows ``rows``) of a system
    tensor to or from a channel plane in SRAM (the i-th at ``sram_at + i *
    plane_bytes``): per channel, one transfer (strided in an HWC tensor)
    when the tensor's rows are whole. A channel may repeat (a depthwise
    layer's channel multiplier reads each input channel M times)."""
    one = merged(region_dmas(t, {"H": rows, "C": (0, 1)}, sram_at))
    c_dim = t.roles.index("C")
    step = math.prod(t.tensor.shape[c_dim + 1:]) * t.tensor.element_bytes
    return [(sys_at + c * step, sram + i * plane_bytes, *rest)
            for i, c in enumerate(channels) for sys_at, sram, *rest in one]


def dma(s: CommandStream, binding: int, dmas, write: bool) -> None:
    for transfer in in_planes(dmas):
        if transfer[2] > MAX_DMA_LENGTH:
            raise NotSupported("a transfer longer than the DMA engine's 16 MiB")
        s.dma(write, binding, *transfer)


def candidates(n: int) -> list[int]:
    return sorted({math.ceil(n / k) for k in range(1, n + 1)}, reverse=True)


def binding_sizes(tensors: list[TensorLayout], binding_count: int) -> tuple[int, ...]:
    """Each binding's size: the end of the furthest of ``tensors`` in it."""
    sizes = [0] * binding_count
    for t in tensors:
        sizes[t.tensor.binding] = max(sizes[t.tensor.binding], t.tensor.extent)
    return tuple(sizes)


_Tile = TypeVar("_Tile")


def tile_in_halves(tile_within: Callable[[int], _Tile | None], whole: _Tile,
                    sram_bytes: int) -> tuple[_Tile | None, bool]:
    """(tile, double-buffered): ``whole`` (the layer in one tile) where
    ``tile_within(sram_bytes)`` gives it; otherwise a tile of half the SRAM
    where one fits, two buffer sets alternating (the next tile's DMA
    overlaps this one's compute); otherwise a tile of the whole SRAM (None:
    none fits)."""
    tile = tile_within(sram_bytes)
    half = tile_within(sram_bytes // 2) if tile != whole else None
    return (half, True) if half is not None else (tile, False)
