"""SOFTMAX along the last axis.

int16 input and output: TFLite's int16 kernel: each difference to the row's
maximum rescaled onto an interpolated exp table, the sum normalised onto an
interpolated 1 / (1 + x) table (both 513 entries, built at compile time as
the kernel's Prepare builds them).

int8 input (int8 or int16 output): TFLite's reference kernel in gemmlowp's
fixed point. Each exponential depends only on the difference to the row's
maximum (-255..0). A softmax of at most INLINE_EXPONENTIAL_ELEMENTS
elements (a classifier's scores) computes each one in line, with the
kernel's own integer steps (FixedPoint.exp_on_negative_values); a larger
one reads them from a table the compiler computes (one int32 table, cut
after the first zero of its zero tail, the index clamped to it). At run
time each row sums the exponentials' Q12.19 shares (each rounded and
shifted right by 12, as the kernel rescales it), takes the reciprocal of the
sum with the kernel's three Newton-Raphson steps, and scales each
exponential by it. Float: exp((x - max) * beta) / sum.
"""

from __future__ import annotations

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith
from iree.compiler.dialects import math as mlir_math
from iree.compiler.dialects import tensor

from npukit.frontends.tflite.lowering import LoweringContext, lowers
from npukit.frontends.tflite.mlir_builder import PARALLEL, REDUCTION, Value, affine_map, float_max
from npukit.quantization.fixed_point import FixedPoint
from npukit.quantization.fixed_point import split_shift
from npukit.quantization.tflite_prepare import ACCUMULATION_INTEGER_BITS, SoftmaxParameters, \
    int16_softmax_parameters, softmax_exponentials, softmax_parameters

# An int8 softmax of at most this many elements computes its exponentials
# in line: twice per element (for the row sums, then the outputs), a few
# dozen integer operations each, instead of a table of up to 1 KiB of
# constants (flash on a microcontroller) that a large softmax repays.
INLINE_EXPONENTIAL_ELEMENTS = 1024


def _row_reduce(ctx: LoweringContext, x: Value, dtype: str, init, combine) -> Value:
    """A reduction of each row (the last axis) of ``x``."""
    builder = ctx.builder
    rank = x.rank
    out = builder.filled(x.shape[:-1], dtype, init)
    return builder.generic([(x, affine_map(rank, list(range(rank))))], [(out, affine_map(rank, list(range(rank - 1))))],
                           [PARALLEL] * (rank - 1) + [REDUCTION], combine)[0]


def _with_row(ctx: LoweringContext, x: Value, row: list[Value], dtype: str, body) -> Value:
    """``body(element, *row_values)`` for each element of ``x``."""
    builder = ctx.builder
    rank = x.rank
    inputs = [(x, affine_map(rank, list(range(rank))))] + [(r, affine_map(rank, list(range(rank - 1)))) for r in row]
    out = builder.empty(x.shape, dtype)
    return builder.generic(inputs, [(out, affine_map(rank, list(range(rank))))], [PARALLEL] * rank,
                           lambda *args: body(*args[:-1]))[0]


def _table_entry(table: Value, index: ir.Value) -> ir.Value:
    return tensor.ExtractOp(table.value, [arith.IndexCastOp(ir.IndexType.get(), index).result]).result


def without_zero_tail(table: np.ndarray) -> tuple[np.ndarray, int | None]:
    """A table whose entries are all zero from some index on, cut after the
    first of those zeros, and the last index it keeps (None: nothing cut).
    An index clamped to that last index reads what the whole table holds."""
    nonzero = np.flatnonzero(table)
    last = int(nonzero[-1]) + 1 if nonzero.size else 0
    if last + 1 >= len(table):
        return table, None
    return table[:last + 1], last


class _Exponentials:
    """exp(beta * s_in * d) in Q0.31 of a difference d = x - max (given as
    its index -d, 0..255), 0 below the kernel's diff_min: from a table cut
    by ``without_zero_tail``, or (``inline``) computed where it is used."""

    def __init__(self, ctx: LoweringContext, params: SoftmaxParameters, inline: bool) -> None:
        self.params = params
        self.table, self.last = None, None
        if not inline:
            exponentials, self.last = without_zero_tail(softmax_exponentials(params))
            self.table = ctx.builder.constant(exponentials)

    def __call__(self, fixed: FixedPoint, index: ir.Value) -> ir.Value:
        if self.table is not None:
            if self.last is not None:
                index = arith.MinSIOp(index, fixed.constant(self.last)).result
            return _table_entry(self.table, index)
        p = self.params
        difference = fixed.sub(0, index)
        scaled = fixed.doubling_high_multiply(fixed.saturating_left_shift(difference, p.beta_left_shift),
                                              p.beta_multiplier)
        contributes = arith.CmpIOp(arith.CmpIPredicate.sge, difference, fixed.constant(p.diff_min)).result
        return fixed.select(contributes, fixed.exp_on_negative_values(scaled), 0)


def _reciprocal(fixed: FixedPoint, total: ir.Value) -> tuple[ir.Value, ir.Value]:
    """gemmlowp's GetReciprocal of a positive Q12.19 sum: 1 / (1 + y) in
    Q0.31 for the sum's normalised mantissa 1 + y, and the number of bits
    of the sum over one unit."""
    headroom = fixed.count_leading_zeros(total)
    bits_over_unit = fixed.sub(ACCUMULATION_INTEGER_BITS, headroom)
    shifted = arith.ShLIOp(total, headroom).result
    y = fixed.add(shifted, -(1 << 31))  # wraps: (uint32(sum) << headroom) - 2^31
    # half_denominator = (y + 1) / 2 in Q0.31, rounded: (y + 2^31) / 2 with y >= 0.
    wide = arith.AddIOp(arith.ExtSIOp(fixed.i64, y).result, fixed.constant(1 << 31, fixed.i64)).result
    half = fixed.truncate(arith.DivSIOp(wide, fixed.constant(2, fixed.i64)).result, 32)
    x = fixed.add(1515870810, fixed.saturating_doubling_high_multiply(half, -1010580540))  # 48/17 - 32/17 * d
    for _ in range(3):
        error = fixed.sub(1 << 29, fixed.saturating_doubling_high_multiply(half, x))
        x = fixed.add(x, fixed.saturating_left_shift(fixed.saturating_doubling_high_multiply(x, error), 2))
    return fixed.saturating_left_shift(x, 1), bits_over_unit


@lowers("SOFTMAX")
def softmax(ctx: LoweringContext, op) -> None:
    x_t, y_t = ctx.input(0), ctx.output()
    builder = ctx.builder
    beta = float(np.float32(op.option("beta", 1.0)))
    x = ctx.value(x_t.index)
    if x.rank == 0:
        raise ctx.fail("a softmax of a scalar")
    if x_t.dtype == "float32":
        f32 = ir.F32Type.get()
        row_max = _row_reduce(ctx, x, "float32", -float("inf"), lambda v, m: float_max(m, v))
        beta_value = lambda: arith.ConstantOp(f32, ir.FloatAttr.get(f32, beta)).result  # noqa: E731
        exps = _with_row(ctx, x, [row_max], "float32",
                         lambda v, m: mlir_math.ExpOp(arith.MulFOp(arith.SubFOp(v, m).result, beta_value()).result
                                                      ).result)
        total = _row_reduce(ctx, exps, "float32", 0.0, lambda v, s: arith.AddFOp(s, v).result)
        ctx.define(0, _with_row(ctx, exps, [total], "float32", lambda e, s: arith.DivFOp(e, s).result))
        return
    if x_t.dtype == "int16" and y_t.dtype == "int16":
        _int16_softmax(ctx, x, x_t, y_t, beta)
        return
    if x_t.dtype != "int8" or y_t.dtype not in ("int8", "int16"):
        raise ctx.unsupported(f"a SOFTMAX of {x_t.dtype} to {y_t.dtype}",
                              supported="float32 to float32, int8 to int8 or int16, or int16 to int16,")
    qx, qy = ctx.per_tensor(x_t, "input"), ctx.per_tensor(y_t, "output")
    if y_t.dtype == "int8" and (qy.zero_point != -128 or abs(float(qy.scale) - 1 / 256) > 0.001 / 256):
        raise ctx.fail("an int8 SOFTMAX whose output is not quantized with scale 1/256 and zero point -128")
    try:
        params = softmax_parameters(beta, qx.scale)
    except ValueError as e:
        raise ctx.unsupported(str(e)) from None
    # A table may end in zeros (exponentials of large differences
    # underflow): only the first of those zeros is kept, and the index is
    # clamped to it. Each exponential's part of the sum (Q0.31 rescaled to
    # Q12.19) is computed from the exponential, not kept as a second table.
    small = all(d > 0 for d in x.shape) and int(np.prod(x.shape)) <= INLINE_EXPONENTIAL_ELEMENTS
    exponential = _Exponentials(ctx, params, inline=small)
    out_bits = 8 if y_t.dtype == "int8" else 16
    type_min = -(1 << (out_bits - 1))
    i32 = ir.IntegerType.get_signless(32)

    def difference(fixed: FixedPoint, v, m):
        return fixed.sub(m, arith.ExtSIOp(i32, v).result)  # max - x: the table index, 0..255

    row_max = _row_reduce(ctx, x, "int8", -128, lambda v, m: arith.MaxSIOp(m, v).result)
    total = _row_reduce_with(ctx, x, row_max, exponential, difference)

    def row_scale(s, _r, _e):
        fixed = FixedPoint()
        reciprocal, bits_over_unit = _reciprocal(fixed, s)
        return reciprocal, fixed.add(bits_over_unit, 31 - out_bits)

    rows = total.rank
    identity = affine_map(rows, list(range(rows)))
    reciprocal_out, exponent_out = builder.empty(total.shape, "int32"), builder.empty(total.shape, "int32")
    reciprocals, exponents = builder.generic([(total, identity)], [(reciprocal_out, identity), (exponent_out, identity)],
                                             [PARALLEL] * rows, row_scale)

    def output(v, m, reciprocal, exponent):
        fixed = FixedPoint()
        e = exponential(fixed, difference(fixed, v, arith.ExtSIOp(i32, m).result))
        unsaturated = fixed.rounding_divide_by_power_of_two(fixed.saturating_doubling_high_multiply(reciprocal, e),
                                                            exponent)
        value = fixed.clamp(fixed.add(unsaturated, type_min), type_min, -type_min - 1)
        return fixed.truncate(value, out_bits)

    ctx.define(0, _with_row(ctx, x, [row_max, reciprocals, exponents], y_t.dtype, output))


def _row_reduce_with(ctx: LoweringContext, x: Value, row_max: Value, exponential: _Exponentials,
                     difference) -> Value:
    """Each row's sum of its elements' exponentials rescaled from Q0.31 to
    Q12.19 (the kernel's rounding divide by 2^12; a wrapping int32 sum)."""
    builder = ctx.builder
    rank = x.rank
    i32 = ir.IntegerType.get_signless(32)
    out = builder.filled(x.shape[:-1], "int32", 0)

    def body(v, m, acc):
        fixed = FixedPoint()
        e = exponential(fixed, difference(fixed, v, arith.ExtSIOp(i32, m).result))
        share = fixed.rounding_divide_by_power_of_two(e, ACCUMULATION_INTEGER_BITS)
        return arith.AddIOp(acc, share).result

    return builder.generic([(x, affine_map(rank, list(range(rank)))), (row_max, affine_map(rank, list(range(rank - 1))))],
                           [(out, affine_map(rank, list(range(rank - 1))))], [PARALLEL] * (rank - 1) + [REDUCTION],
                           body)[0]


def _interpolated(fixed: FixedPoint, table: Value, v: ir.Value) -> ir.Value:
    """TFLite's int16 table lookup of ``v`` (int32 holding an int16): entry
    256 + (v >> 7) and the next, interpolated by the low 7 bits, rounded;
    the int16 result sign-extended to int32."""
    index = fixed.add(arith.ShRSIOp(v, fixed.constant(7)).result, 256)
    fraction = arith.AndIOp(v, fixed.constant(127)).result
    base = arith.ExtSIOp(fixed.i32, _table_entry(table, index)).result
    following = arith.ExtSIOp(fixed.i32, _table_entry(table, fixed.add(index, 1))).result
    slope = fixed.sub(following, base)
    delta = arith.ShRSIOp(fixed.add(arith.MulIOp(slope, fraction).result, 64), fixed.constant(7)).result
    return arith.ExtSIOp(fixed.i32, fixed.truncate(fixed.add(base, delta), 16)).result


def _int16_softmax(ctx: LoweringContext, x: Value, x_t, y_t, beta: float) -> None:
    qx, qy = ctx.per_tensor(x_t, "input"), ctx.per_tensor(y_t, "output")
    if qy.zero_point != 0 or abs(float(qy.scale) - 1 / 32768) > 0.001 / 32768:
        raise ctx.fail("an int16 SOFTMAX whose output is not quantized with scale 1/32768 and zero point 0")
    builder = ctx.builder
    params = int16_softmax_parameters(beta, qx.scale)
    left, right = split_shift(params.shift)
    exp_table, reciprocal_table = builder.constant(params.exponentials), builder.constant(params.reciprocals)
    i32 = ir.IntegerType.get_signless(32)
    row_max = _row_reduce(ctx, x, "int16", -32768, lambda v, m: arith.MaxSIOp(m, v).result)

    def exponential(v, m):
        fixed = FixedPoint()
        difference = fixed.sub(arith.ExtSIOp(i32, v).result, arith.ExtSIOp(i32, m).result)
        scaled = fixed.multiply_by_quantized_multiplier(difference, params.multiplier, left, right)
        return _interpolated(fixed, exp_table, fixed.clamp(fixed.add(scaled, 32767), -32768, 32767))

    exps = _with_row(ctx, x, [row_max], "int32", exponential)
    total = _row_reduce(ctx, exps, "int32", 0, lambda v, s: arith.AddIOp(s, v).result)

    def row_scale(s, _r, _e):
        fixed = FixedPoint()
        headroom = fixed.count_leading_zeros(s)  # the kernel's headroom plus one
        wide = arith.ShLIOp(arith.ExtSIOp(fixed.i64, s).result,
                            arith.ExtSIOp(fixed.i64, fixed.sub(headroom, 1)).result).result
        shifted = fixed.truncate(arith.ShRSIOp(arith.AddIOp(wide, fixed.constant(1 << 13, fixed.i64)).result,
                                               fixed.constant(14, fixed.i64)).result, 32)
        centred = fixed.clamp(fixed.sub(shifted, (1 << 15) + (1 << 16)), -32768, 32767)
        return _interpolated(fixed, reciprocal_table, centred), fixed.sub(31, headroom)

    rows = total.rank
    identity = affine_map(rows, list(range(rows)))
    reciprocals, exponents = builder.generic(
        [(total, identity)], [(builder.empty(total.shape, "int32"), identity),
                              (builder.empty(total.shape, "int32"), identity)], [PARALLEL] * rows, row_scale)

    def output(e, reciprocal, exponent):
        fixed = FixedPoint()
        product = arith.MulIOp(arith.ExtSIOp(fixed.i64, e).result, arith.ExtSIOp(fixed.i64, reciprocal).result).result
        shift = arith.ExtSIOp(fixed.i64, exponent).result
        half = arith.ShLIOp(fixed.constant(1, fixed.i64), arith.SubIOp(shift, fixed.constant(1, fixed.i64)).result)
        rounded = arith.ShRSIOp(arith.AddIOp(product, half.result).result, shift).result
        return fixed.truncate(fixed.clamp(fixed.truncate(rounded, 32), 0, 32767), 16)

    ctx.define(0, _with_row(ctx, exps, [reciprocals, exponents], "int16", output))
