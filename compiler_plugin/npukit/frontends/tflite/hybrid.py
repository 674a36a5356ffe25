"""Dynamic-range ("hybrid") layers: float activations, int8 weights.

TFLite's kernels quantize the float input on the fly, one scale per batch
row (per image for a convolution, per row for a fully connected layer),
multiply in int8 and scale the int32 sums back to float. The symmetric
form, as the reference build computes it: ``range = max |x|`` over the row,
``s_in = range / 127`` and ``inv = 127 / range`` as two single-precision
divisions, ``q = clamp(round(x * inv), -127, 127)`` where the first
``n & ~7`` values of a row of ``n`` round by adding +-0.5 and truncating
(vector lanes) and the rest with ``roundf``; an all-zero row gives
``s_in = 1``, ``q = 0``. The output is ``f(f(float(acc) * f(s_in * s_w)) +
bias)``, then the activation clamp, each step rounded to single precision.
"""

from __future__ import annotations

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, linalg
from iree.compiler.dialects import math as mlir_math

from npukit.frontends.tflite.lowering import LoweringContext
from npukit.frontends.tflite.mlir_builder import PARALLEL, REDUCTION, Value, affine_map, f32_constant, float_clamp, \
    float_max, round_half_away_f32



def symmetric_quantize_rows(ctx: LoweringContext, x: Value) -> tuple[Value, Value]:
    """(int8 values of ``x`` [rows, n], each row's scale as float32 [rows])."""
    builder = ctx.builder
    rows, n = x.shape
    init = builder.filled([rows], "float32", 0.0)
    # max |x| of each row (the larger of |min| and |max|).
    ranges = builder.generic([(x, affine_map(2, [0, 1]))], [(init, affine_map(2, [0]))], [PARALLEL, REDUCTION],
                             lambda v, m: float_max(m, mlir_math.AbsFOp(v).result))[0]
    out_scale, out_inverse = builder.empty([rows], "float32"), builder.empty([rows], "float32")

    def scales(r, _s, _i):
        zero = arith.CmpFOp(arith.CmpFPredicate.OEQ, r, f32_constant(0.0)).result
        scale = arith.SelectOp(zero, f32_constant(1.0), arith.DivFOp(r, f32_constant(127.0)).result).result
        inverse = arith.SelectOp(zero, f32_constant(0.0), arith.DivFOp(f32_constant(127.0), r).result).result
        return scale, inverse

    identity = affine_map(1, [0])
    scale, inverse = builder.generic([(ranges, identity)], [(out_scale, identity), (out_inverse, identity)],
                                     [PARALLEL], scales)
    vector_end = n & ~7
    i32 = ir.IntegerType.get_signless(32)
    out = builder.empty([rows, n], "int8")

    def quantize(v, inv, _o):
        y = arith.MulFOp(v, inv).result
        half = arith.SelectOp(arith.CmpFOp(arith.CmpFPredicate.OLT, y, f32_constant(0.0)).result, f32_constant(-0.5),
                              f32_constant(0.5)).result
        lanes = arith.FPToSIOp(i32, arith.AddFOp(y, half).result).result  # add +-0.5, truncate
        tail = round_half_away_f32(y)  # roundf
        position = arith.IndexCastOp(i32, linalg.IndexOp(1).result).result
        in_lanes = arith.CmpIOp(arith.CmpIPredicate.slt, position, arith.ConstantOp(
            i32, ir.IntegerAttr.get(i32, vector_end)).result).result
        q = arith.SelectOp(in_lanes, lanes, tail).result
        bounded = arith.MinSIOp(arith.MaxSIOp(q, arith.ConstantOp(i32, ir.IntegerAttr.get(i32, -127)).result).result,
                                arith.ConstantOp(i32, ir.IntegerAttr.get(i32, 127)).result).result
        return arith.TruncIOp(ir.IntegerType.get_signless(8), bounded).result

    q = builder.generic([(x, affine_map(2, [0, 1])), (inverse, affine_map(2, [0]))], [(out, affine_map(2, [0, 1]))],
                        [PARALLEL, PARALLEL], quantize)[0]
    return q, scale


def rescale(ctx: LoweringContext, acc: Value, row_dim: int, channel_dim: int, row_scale: Value,
            weight_scales: np.ndarray, bias: np.ndarray | None, low: float, high: float) -> Value:
    """``f(f(float(acc) * f(s_in[row] * s_w[c])) + bias[c])`` clamped to [low, high]."""
    builder = ctx.builder
    rank = acc.rank
    inputs = [(acc, affine_map(rank, list(range(rank)))), (row_scale, affine_map(rank, [row_dim]))]
    weight_scales = np.asarray(weight_scales, np.float32).reshape(-1)
    per_channel = weight_scales.size > 1
    if per_channel:
        inputs.append((builder.constant(weight_scales), affine_map(rank, [channel_dim])))
    if bias is not None:
        inputs.append((builder.constant(np.asarray(bias, np.float32)), affine_map(rank, [channel_dim])))
    out = builder.empty(acc.shape, "float32")
    f32 = ir.F32Type.get()

    def body(a, s, *rest):
        rest = list(rest[:-1])
        weight = rest.pop(0) if per_channel else f32_constant(float(weight_scales[0]))
        factor = arith.MulFOp(s, weight).result
        value = arith.MulFOp(arith.SIToFPOp(f32, a).result, factor).result
        if bias is not None:
            value = arith.AddFOp(value, rest[0]).result
        return float_clamp(value, low, high)

    return builder.generic(inputs, [(out, affine_map(rank, list(range(rank))))], [PARALLEL] * rank, body)[0]
