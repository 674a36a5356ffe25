"""RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR on NHWC tensors.

Both read the stored values (no requantization: input and output share
their quantization). Where each output row and column reads from is fixed by
the shapes, so the compiler tabulates it exactly as the reference kernel
computes it (nearest: single-precision coordinates, floored or rounded;
bilinear on integers: Q10 coordinates and weights, the four-tap sum rounded
half away from zero from Q20) and the generated code gathers with the
tables.
"""

from __future__ import annotations

import math

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, tensor

from npukit.frontends.tflite.lowering import LoweringContext, lowers
from npukit.frontends.tflite.mlir_builder import PARALLEL, Value, affine_map


def _output_size(ctx: LoweringContext) -> tuple[int, int]:
    x, y = ctx.input(0), ctx.output()
    if len(x.shape) != 4 or len(y.shape) != 4:
        raise ctx.fail("a resize of a tensor that is not [N, H, W, C]")
    size = ctx.input(1)
    if size is not None and size.data is not None:
        declared = tuple(int(v) for v in np.asarray(size.data).reshape(-1))
        if declared != y.shape[1:3]:
            raise ctx.fail(f"a size of {list(declared)} for an output of shape {list(y.shape)}")
    return y.shape[1], y.shape[2]


def _float_scale(size_in: int, size_out: int, align_corners: bool) -> np.float32:
    f32 = np.float32
    if align_corners and size_out > 1:
        return f32(f32(size_in - 1) / f32(size_out - 1))
    return f32(f32(size_in) / f32(size_out))


def nearest_sources(size_in: int, size_out: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    """The input index each output index reads (TFLite's nearest neighbour, in single precision)."""
    f32 = np.float32
    scale = _float_scale(size_in, size_out, align_corners)
    offset = f32(0.5) if half_pixel else f32(0.0)
    sources = np.zeros(size_out, np.int32)
    for i in range(size_out):
        position = f32(f32(f32(i) + offset) * scale)
        value = math.copysign(math.floor(abs(float(position)) + 0.5), float(position)) if align_corners \
            else math.floor(float(position))
        value = min(int(value), size_in - 1)
        sources[i] = max(value, 0) if half_pixel else value
    return sources


def bilinear_taps(size_in: int, size_out: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    """Per output index: (low index, high index, Q10 weight of the high one)
    as TFLite's integer bilinear resize computes them."""

    def div(a: int, b: int) -> int:  # C's truncating division
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q

    if align_corners and size_out > 1:
        scale = div((1 << 10) * (size_in - 1) + (size_out - 1) // 2, size_out - 1)
    else:
        scale = div((1 << 10) * size_in + size_out // 2, size_out)
    taps = np.zeros((size_out, 3), np.int32)
    for i in range(size_out):
        position = i * scale + div(scale, 2) - 512 if half_pixel else i * scale
        low = max(div(position, 1024), 0)
        high = min(div(position + 1023, 1024), size_in - 1)
        taps[i] = (low, high, position - 1024 * low)
    return taps


def float_bilinear_taps(size_in: int, size_out: int, align_corners: bool, half_pixel: bool):
    """Per output index: (low index, high index) and the single-precision
    weight of the high one (the source position less the low index), as
    TFLite's float bilinear resize computes them."""
    f32 = np.float32
    scale = _float_scale(size_in, size_out, align_corners)
    indices = np.zeros((size_out, 2), np.int32)
    weights = np.zeros(size_out, np.float32)
    for i in range(size_out):
        position = f32(f32(f32(f32(i) + f32(0.5)) * scale) - f32(0.5)) if half_pixel else f32(f32(i) * scale)
        low = max(math.floor(position), 0)
        indices[i] = (low, min(math.ceil(position), size_in - 1))
        weights[i] = f32(position - f32(low))
    return indices, weights


def _gather(ctx: LoweringContext, x: Value, out_shape, dtype: str, tables: list[tuple[np.ndarray, int]], body):
    """A generic over the output whose body gathers from ``x``: each table is
    read along its output dimension (1: rows, 2: columns) and passed to
    ``body(read, *entries)``, where ``read(row, column)`` is the input value
    there for the output's image and channel."""
    builder = ctx.builder
    inputs = [(builder.constant(t), affine_map(4, [dim])) for t, dim in tables]
    out = builder.empty(out_shape, dtype)
    index = ir.IndexType.get()

    def emit(*args):
        image, channel = linalg.IndexOp(0).result, linalg.IndexOp(3).result

        def read(row: ir.Value, column: ir.Value) -> ir.Value:
            at = [arith.IndexCastOp(index, v).result for v in (row, column)]
            return tensor.ExtractOp(x.value, [image, *at, channel]).result

        return body(read, *args[:-1])

    return builder.generic(inputs, [(out, affine_map(4, [0, 1, 2, 3]))], [PARALLEL] * 4, emit)[0]


@lowers("RESIZE_NEAREST_NEIGHBOR")
def resize_nearest(ctx: LoweringContext, op) -> None:
    x_t, y_t = ctx.input(0), ctx.output()
    oh, ow = _output_size(ctx)
    align, half = bool(op.option("align_corners", False)), bool(op.option("half_pixel_centers", False))
    rows = nearest_sources(x_t.shape[1], oh, align, half)
    cols = nearest_sources(x_t.shape[2], ow, align, half)
    x = ctx.value(x_t.index)
    ctx.define(0, _gather(ctx, x, y_t.shape, x.dtype, [(rows, 1), (cols, 2)], lambda read, r, c: read(r, c)))


@lowers("RESIZE_BILINEAR")
def resize_bilinear(ctx: LoweringContext, op) -> None:
    x_t, y_t = ctx.input(0), ctx.output()
    oh, ow = _output_size(ctx)
    align, half = bool(op.option("align_corners", False)), bool(op.option("half_pixel_centers", False))
    if align and half:
        raise ctx.fail("a RESIZE_BILINEAR with both align_corners and half_pixel_centers")
    x = ctx.value(x_t.index)
    if x_t.dtype == "float32":
        ctx.define(0, _float_bilinear(ctx, x, y_t.shape, align, half))
        return
    if x_t.dtype not in ("int8", "int16"):
        raise ctx.unsupported(f"a {x_t.dtype} RESIZE_BILINEAR")
    rows = bilinear_taps(x_t.shape[1], oh, align, half)
    cols = bilinear_taps(x_t.shape[2], ow, align, half)
    i64 = ir.IntegerType.get_signless(64)
    width = 8 if x_t.dtype == "int8" else 16

    def c64(v: int) -> ir.Value:
        return arith.ConstantOp(i64, ir.IntegerAttr.get(i64, v)).result

    def body(read, y0, y1, dy, x0, x1, dx):
        wide = lambda v: arith.ExtSIOp(i64, v).result  # noqa: E731
        dy64, dx64 = wide(dy), wide(dx)
        not_dy, not_dx = arith.SubIOp(c64(1024), dy64).result, arith.SubIOp(c64(1024), dx64).result
        total = None
        for (yy, wy), (xx, wx) in (((y0, not_dy), (x0, not_dx)), ((y1, dy64), (x0, not_dx)),
                                   ((y0, not_dy), (x1, dx64)), ((y1, dy64), (x1, dx64))):
            term = arith.MulIOp(arith.MulIOp(wide(read(yy, xx)), wy).result, wx).result
            total = term if total is None else arith.AddIOp(total, term).result
        positive = arith.CmpIOp(arith.CmpIPredicate.sgt, total, c64(0)).result
        nudged = arith.AddIOp(total, arith.SelectOp(positive, c64(1 << 19), c64(-(1 << 19))).result).result
        return arith.TruncIOp(ir.IntegerType.get_signless(width), arith.DivSIOp(nudged, c64(1 << 20)).result).result

    tables = [(rows[:, 0].copy(), 1), (rows[:, 1].copy(), 1), (rows[:, 2].copy(), 1),
              (cols[:, 0].copy(), 2), (cols[:, 1].copy(), 2), (cols[:, 2].copy(), 2)]
    ctx.define(0, _gather(ctx, x, y_t.shape, x.dtype, tables, body))


def _float_bilinear(ctx: LoweringContext, x: Value, out_shape, align: bool, half: bool) -> Value:
    rows, row_weights = float_bilinear_taps(x.shape[1], out_shape[1], align, half)
    cols, col_weights = float_bilinear_taps(x.shape[2], out_shape[2], align, half)
    f32 = ir.F32Type.get()
    one = lambda: arith.ConstantOp(f32, ir.FloatAttr.get(f32, 1.0)).result  # noqa: E731

    def body(read, y0, y1, dy, x0, x1, dx):
        not_dy, not_dx = arith.SubFOp(one(), dy).result, arith.SubFOp(one(), dx).result
        total = None
        for (yy, wy), (xx, wx) in (((y0, not_dy), (x0, not_dx)), ((y1, dy), (x0, not_dx)),
                                   ((y0, not_dy), (x1, dx)), ((y1, dy), (x1, dx))):
            term = arith.MulFOp(arith.MulFOp(read(yy, xx), wy).result, wx).result
            total = term if total is None else arith.AddFOp(total, term).result
        return total

    tables = [(rows[:, 0].copy(), 1), (rows[:, 1].copy(), 1), (row_weights, 1),
              (cols[:, 0].copy(), 2), (cols[:, 1].copy(), 2), (col_weights, 2)]
    return _gather(ctx, x, out_shape, "float32", tables, body)
