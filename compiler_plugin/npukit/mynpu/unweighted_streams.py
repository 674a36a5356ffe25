"""The mynpu streams of the layers without weights.

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

import numpy as np

from npukit.layer_recognition.layer_spec import LayerSpec, NotSupported
from npukit.mynpu.isa import (
    CONSTANTS_BINDING, E_MUL_CHANNELS, E_MUL_ONE, E_MUL_SAME, LAYOUT_HWC, POOL_AVERAGE, POOL_MAX, POOL_MEAN,
    TABLE_BYTES, CommandStream, HardwareConfig, Op)
from npukit.mynpu.stream_plan import (
    ALIGN, Constants, StreamPlan, aligned, binding_sizes, candidates, dma, region_dmas, tile_in_halves)
from npukit.mynpu.supported_operators import mean_registers, pool_window, product_factors


#: The most elements one OP_TABLE looks up (IFM_W's range; IFM_H = IFM_C = 1).
MAX_TABLE_TILE = 65535


def _table_tile(elements: int, sram_bytes: int) -> tuple[int, bool]:
    """(elements per tile, double-buffered) of a table layer: all of them in
    one tile when they fit beside the table, else as many as two buffers of
    the SRAM left after it hold."""
    free = sram_bytes - aligned(TABLE_BYTES)
    if elements <= min(free, MAX_TABLE_TILE):
        return elements, False
    tile = min(free // 2 // ALIGN * ALIGN, MAX_TABLE_TILE)
    if tile < 1:
        raise NotSupported(f"the table and one element do not fit into {sram_bytes // 1024} KiB of SRAM")
    return tile, True


def table_stream(spec: LayerSpec, config: HardwareConfig, constants: Constants, binding_count: int) -> StreamPlan:
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
    buffers = [aligned(TABLE_BYTES)]
    if double:
        buffers.append(buffers[0] + aligned(tile))
    # The table, in a layer of its own (layer 0: not double-buffered) before any lookup.
    dma(s, CONSTANTS_BINDING, [(constants.add(table.tobytes()), table_at, TABLE_BYTES, 1, 0, 0)], False)
    s.set(TABLE_ADDR=table_at, IFM_H=1, IFM_C=1, OFM_H=1, OFM_C=1)
    for index, x0 in enumerate(range(0, n, tile)):
        count = min(tile, n - x0)
        at = buffers[index % len(buffers)]
        s.layer(double)
        dma(s, spec.ifm.tensor.binding, region_dmas(spec.ifm, {"W": (x0, count)}, at), False)
        s.set(IFM_ADDR=at, IFM_W=count, OFM_ADDR=at, OFM_W=count)
        s.op(Op.TABLE)
        dma(s, spec.ofm.tensor.binding, region_dmas(spec.ofm, {"W": (x0, count)}, at), True)
    s.end()
    return StreamPlan(s.encode(), binding_sizes([spec.ifm, spec.ofm], binding_count), 1, tile, double, "",
                      buffers[-1] + aligned(tile))


def pool_stream(spec: LayerSpec, config: HardwareConfig, binding_count: int) -> StreamPlan:
    """The stream of an int8 pool: per tile of channels and output rows, the
    input rows its windows read by DMA, OP_POOL, the output by DMA."""
    (ih, iw), (kh, kw) = pool_window(spec)
    whole_plane = (ih, iw) != spec.ifm_chw[1:]  # a global pool on a rectangle of its flattened plane
    c, oh, ow = spec.ofm_chw
    sh, sw = spec.stride

    def input_rows(rows: int) -> int:
        return ih if whole_plane else (rows - 1) * sh + kh

    def tile_bytes(channels: int, rows: int) -> int:
        return aligned(input_rows(rows) * iw * channels) + aligned(rows * ow * channels)

    def tile_within(budget: int) -> tuple[int, int] | None:
        """The largest tile (channels, rows; whole rows first) within ``budget`` bytes."""
        fits = ((channels, rows) for rows in candidates(oh) for channels in candidates(c)
                if tile_bytes(channels, rows) <= budget)
        return next(fits, None)

    tile, double = tile_in_halves(tile_within, (c, oh), config.sram_bytes)
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
            ofm = ifm + aligned(input_rows(r) * iw * t)
            index += 1
            s.layer(double)
            dma(s, spec.ifm.tensor.binding, region_dmas(spec.ifm, band | {"C": (c0, t)}, ifm), False)
            s.set(IFM_ADDR=ifm, IFM_H=input_rows(r), IFM_W=iw, IFM_C=t, OFM_ADDR=ofm, OFM_H=r, OFM_W=ow, OFM_C=t)
            s.op(Op.POOL, variant)
            dma(s, spec.ofm.tensor.binding, region_dmas(spec.ofm, {"H": (y0, r), "C": (c0, t)}, ofm), True)
    s.end()
    return StreamPlan(s.encode(), binding_sizes([spec.ifm, spec.ofm], binding_count), channels, rows, double, "",
                      buffers[-1] + size)


def _lookup_in_place(s: CommandStream, table_at: int, at: int, n: int) -> None:
    """OP_TABLE on the ``n`` elements at ``at``, in place, with the table at ``table_at``."""
    s.set(TABLE_ADDR=table_at, IFM_ADDR=at, IFM_H=1, IFM_W=n, IFM_C=1, OFM_ADDR=at, OFM_H=1, OFM_W=n, OFM_C=1)
    s.op(Op.TABLE)


def product_stream(spec: LayerSpec, config: HardwareConfig, constants: Constants, binding_count: int) -> StreamPlan:
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
            dma(s, CONSTANTS_BINDING, [(constants.add(table.tobytes()), at, TABLE_BYTES, 1, 0, 0)], False)
            tables[name], at = at, at + aligned(TABLE_BYTES)
    y_at = None
    if broadcast != E_MUL_SAME:  # one vector or value for every tile, looked up once
        n = c if broadcast == E_MUL_CHANNELS else 1
        y_at, at = at, at + aligned(n)
        dma(s, spec.operand.tensor.binding, region_dmas(spec.operand, {}, y_at), False)
        if "y" in tables:
            _lookup_in_place(s, tables["y"], y_at, n)
    # Rows per tile: x (the result written over it) and, for a whole y, y's rows; OP_TABLE takes at most
    # 65,535 elements and OP_E_MUL 65,535 rows.
    operands = 2 if broadcast == E_MUL_SAME else 1
    free = config.sram_bytes - at
    limit = 65535 // c if tables else 65535

    def rows_within(budget: int) -> int | None:
        """The most rows a tile within ``budget`` bytes holds."""
        fitting = max((r for r in candidates(rows) if operands * aligned(r * c) <= budget), default=0)
        return min(limit, rows, fitting) or None

    tile, double = tile_in_halves(rows_within, rows, free)
    if tile is None:
        raise NotSupported(f"the product cannot be tiled into {config.sram_bytes // 1024} KiB of SRAM (one row of "
                           f"{c} channels needs {operands * aligned(c)} bytes beside its tables)")
    size = operands * aligned(tile * c)
    buffers = [at, at + size] if double else [at]
    (multiplier, shift), = spec.multipliers
    s.set(IFM_ZP=x_zp, IFM2_ZP=y_zp, OUT_MULT=multiplier, OUT_SHIFT=shift, OFM_ZP=spec.ofm_zp, ACT_MIN=spec.act_min,
          ACT_MAX=spec.act_max)
    for index, y0 in enumerate(range(0, rows, tile)):
        r = min(tile, rows - y0)
        x_at = buffers[index % len(buffers)]
        s.layer(double)
        dma(s, spec.ifm.tensor.binding, region_dmas(spec.ifm, {"W": (y0, r)}, x_at), False)
        if "x" in tables:
            _lookup_in_place(s, tables["x"], x_at, r * c)
        operand = y_at
        if broadcast == E_MUL_SAME:
            operand = x_at + aligned(r * c)
            dma(s, spec.operand.tensor.binding, region_dmas(spec.operand, {"W": (y0, r)}, operand), False)
            if "y" in tables:
                _lookup_in_place(s, tables["y"], operand, r * c)
        s.set(IFM_ADDR=x_at, IFM_H=1, IFM_W=r, IFM_C=c, IFM2_ADDR=operand, OFM_ADDR=x_at, OFM_H=1, OFM_W=r, OFM_C=c)
        s.op(Op.E_MUL, broadcast)
        dma(s, spec.ofm.tensor.binding, region_dmas(spec.ofm, {"W": (y0, r)}, x_at), True)
    s.end()
    return StreamPlan(s.encode(), binding_sizes([spec.ifm, spec.operand, spec.ofm], binding_count), c, tile, double,
                      "", buffers[-1] + size)
