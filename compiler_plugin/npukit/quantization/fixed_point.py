"""TFLite's fixed-point requantization as ``arith`` operations.

The same arithmetic as the mynpu device (hal_driver/src/mynpu/requantize.h,
docs/mynpu-isa.md "Arithmetic"): MultiplyByQuantizedMultiplier with a
saturating left shift, a saturating rounding doubling high multiply and a
rounding divide by a power of two with ties away from zero; its int64
variant for 16-bit activations; and for fully connected layers TFLite's
kernel's double scale, rounded once (OP_MAT_MUL does the same). Emitted at
the current insertion point (and location) as scalar operations, so it can
stand in a ``linalg.generic`` body. Multipliers and shifts are Python
ints (constants, folded by the compiler) or i32 values (per-channel tables).
"""

from __future__ import annotations

from typing import Union

from iree.compiler import ir
from iree.compiler.dialects import arith, math

from npukit.quantization.fixed_point_reference import EXP_BARREL, EXP_CONSTANT_TERM, EXP_ONE_THIRD

Int = Union[int, ir.Value]

_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1


class FixedPoint:
    """Builds integer arithmetic; create it inside an insertion point and location."""

    def __init__(self) -> None:
        self.i32 = ir.IntegerType.get_signless(32)
        self.i64 = ir.IntegerType.get_signless(64)

    def constant(self, value: int, type_: ir.Type | None = None) -> ir.Value:
        type_ = type_ or self.i32
        return arith.ConstantOp(type_, ir.IntegerAttr.get(type_, value)).result

    def value(self, x: Int, type_: ir.Type | None = None) -> ir.Value:
        return self.constant(x, type_) if isinstance(x, int) else x

    def value_i64(self, x: Int) -> ir.Value:
        """A constant or a narrower integer value (sign-extended) as i64."""
        if isinstance(x, int):
            return self.constant(x, self.i64)
        return x if ir.IntegerType(x.type).width == 64 else arith.ExtSIOp(self.i64, x).result

    def saturate32(self, x: ir.Value) -> ir.Value:
        """An i64 value clamped to the int32 range, as i32."""
        low, high = self.constant(_I32_MIN, self.i64), self.constant(_I32_MAX, self.i64)
        return self.truncate(arith.MinSIOp(arith.MaxSIOp(x, low).result, high).result, 32)

    def add(self, a: Int, b: Int) -> ir.Value:
        return arith.AddIOp(self.value(a), self.value(b)).result

    def sub(self, a: Int, b: Int) -> ir.Value:
        return arith.SubIOp(self.value(a), self.value(b)).result

    def clamp(self, x: Int, low: int, high: int) -> ir.Value:
        return arith.MinSIOp(arith.MaxSIOp(self.value(x), self.constant(low)).result, self.constant(high)).result

    def extend(self, x: ir.Value) -> ir.Value:
        """A narrower signed integer as i32."""
        width = ir.IntegerType(x.type).width
        return x if width == 32 else arith.ExtSIOp(self.i32, x).result

    def truncate(self, x: ir.Value, width: int) -> ir.Value:
        return arith.TruncIOp(ir.IntegerType.get_signless(width), x).result

    def select_positive(self, x: ir.Value, if_positive: Int, otherwise: Int, type_: ir.Type) -> ir.Value:
        zero = self.constant(0, type_)
        positive = arith.CmpIOp(arith.CmpIPredicate.sge, x, zero).result
        return arith.SelectOp(positive, self.value(if_positive, type_), self.value(otherwise, type_)).result

    def saturating_left_shift(self, x: ir.Value, shift: Int) -> ir.Value:
        """x * 2^shift saturated to int32 (shift in 0..30)."""
        if isinstance(shift, int) and shift == 0:
            return x
        return self.saturate32(arith.ShLIOp(self.value_i64(x), self.value_i64(shift)).result)

    def doubling_high_multiply(self, a: ir.Value, multiplier: Int) -> ir.Value:
        """SaturatingRoundingDoublingHighMul(a, multiplier). The saturating
        case (both INT32_MIN) cannot occur: multipliers are in [2^30, 2^31)."""
        product = arith.MulIOp(self.value_i64(a), self.value_i64(multiplier)).result
        nudge = self.select_positive(product, 1 << 30, 1 - (1 << 30), self.i64)
        rounded = arith.DivSIOp(arith.AddIOp(product, nudge).result, self.constant(1 << 31, self.i64)).result
        return self.truncate(rounded, 32)

    def rounding_divide_by_power_of_two(self, x: ir.Value, exponent: Int) -> ir.Value:
        """x / 2^exponent rounded to nearest, ties away from zero (exponent 0..31)."""
        if isinstance(exponent, int) and exponent == 0:
            return x
        exponent = self.value(exponent)
        all_ones = self.constant(-1)
        mask = arith.XOrIOp(arith.ShLIOp(all_ones, exponent).result, all_ones).result
        remainder = arith.AndIOp(x, mask).result
        negative = arith.CmpIOp(arith.CmpIPredicate.slt, x, self.constant(0)).result
        threshold = arith.AddIOp(arith.ShRSIOp(mask, self.constant(1)).result,
                                 arith.ExtUIOp(self.i32, negative).result).result
        round_up = arith.CmpIOp(arith.CmpIPredicate.sgt, remainder, threshold).result
        return arith.AddIOp(arith.ShRSIOp(x, exponent).result, arith.ExtUIOp(self.i32, round_up).result).result

    def multiply_by_quantized_multiplier(self, x: ir.Value, multiplier: Int, left_shift: Int,
                                         right_shift: Int) -> ir.Value:
        """TFLite's MultiplyByQuantizedMultiplier with the shift split into
        its left (positive) and right (negative) parts."""
        shifted = self.saturating_left_shift(x, left_shift)
        return self.rounding_divide_by_power_of_two(self.doubling_high_multiply(shifted, multiplier), right_shift)

    def saturating_doubling_high_multiply(self, a: ir.Value, b: Int) -> ir.Value:
        """SaturatingRoundingDoublingHighMul for any operands (both INT32_MIN
        gives INT32_MAX)."""
        product = self.doubling_high_multiply(a, b)
        if isinstance(b, int) and b != _I32_MIN:
            return product
        both_min = arith.AndIOp(arith.CmpIOp(arith.CmpIPredicate.eq, a, self.constant(_I32_MIN)).result,
                                arith.CmpIOp(arith.CmpIPredicate.eq, self.value(b), self.constant(_I32_MIN)).result)
        return arith.SelectOp(both_min.result, self.constant(_I32_MAX), product).result

    def multiply_by_quantized_multiplier_64(self, x: ir.Value, reduced_multiplier: Int, total_shift: Int) -> ir.Value:
        """TFLite's MultiplyByQuantizedMultiplier of an int64 accumulator:
        ``(x * reduced + 2^(total_shift - 1)) >> total_shift`` with the
        multiplier reduced to 16 bits and total_shift = 15 - shift, both
        prepared at compile time (reduced_multiplier_64); truncated to int32."""
        product = arith.MulIOp(x, self.value_i64(reduced_multiplier)).result
        shift = self.value_i64(total_shift)
        half = arith.ShLIOp(self.constant(1, self.i64), arith.SubIOp(shift, self.constant(1, self.i64)).result).result
        return self.truncate(arith.ShRSIOp(arith.AddIOp(product, half).result, shift).result, 32)

    def scale_rounded_once(self, x: ir.Value, high: Int, low: Int, shift: Int) -> ir.Value:
        """``round(fl64(x * scale))`` with ties away from zero, saturated to
        int32, for a double ``scale = (high * 2^32 + low) * 2^-shift``
        (fixed_point_reference.double_scale_parts): TFLite's fully connected
        kernel scales its accumulators this way. Emitted in 64-bit integers,
        not doubles (no floating-point library on any core): the exact
        product |x| * significand as hi * 2^32 + lo, rounded to 53
        significant bits with ties to even as the double multiply rounds it,
        then shifted right by the exponent with ties away from zero.
        fixed_point_reference.scale_rounded_once_integer is the same steps."""
        i64 = self.i64
        c = lambda v: self.constant(v, i64)  # noqa: E731
        wide = arith.ExtSIOp(i64, x).result
        negative = arith.CmpIOp(arith.CmpIPredicate.slt, wide, c(0)).result
        magnitude = arith.SelectOp(negative, arith.SubIOp(c(0), wide).result, wide).result
        product_high = arith.MulIOp(magnitude, self.value_i64(high)).result
        product_low = arith.MulIOp(magnitude, self.value_i64(low)).result
        hi = arith.AddIOp(product_high, arith.ShRUIOp(product_low, c(32)).result).result
        lo = arith.AndIOp(product_low, c(0xFFFFFFFF)).result
        big = arith.CmpIOp(arith.CmpIPredicate.sge, hi, c(1 << 21)).result
        # More than 53 significant bits: round away the lowest d with ties to even.
        bits = arith.SubIOp(c(64), math.CountLeadingZerosOp(hi).result).result
        d = arith.SelectOp(big, arith.SubIOp(bits, c(21)).result, c(1)).result
        q = arith.AddIOp(arith.ShLIOp(hi, arith.SubIOp(c(32), d).result).result, arith.ShRUIOp(lo, d).result).result
        remainder = arith.AndIOp(lo, arith.SubIOp(arith.ShLIOp(c(1), d).result, c(1)).result).result
        half = arith.ShLIOp(c(1), arith.SubIOp(d, c(1)).result).result
        odd = arith.CmpIOp(arith.CmpIPredicate.ne, arith.AndIOp(q, c(1)).result, c(0)).result
        tie_up = arith.AndIOp(arith.CmpIOp(arith.CmpIPredicate.eq, remainder, half).result, odd).result
        up = arith.OrIOp(arith.CmpIOp(arith.CmpIPredicate.ugt, remainder, half).result, tie_up).result
        rounded53 = arith.AddIOp(q, arith.ExtUIOp(i64, up).result).result
        exact = arith.AddIOp(arith.ShLIOp(hi, c(32)).result, lo).result
        significand = arith.SelectOp(big, rounded53, exact).result
        shift64 = self.value_i64(shift)
        k = arith.SelectOp(big, arith.SubIOp(shift64, d).result, shift64).result
        # Then the exponent: a rounding right shift, or (k <= 0) a saturating left shift.
        right = arith.CmpIOp(arith.CmpIPredicate.sge, k, c(1)).result
        k_right = arith.SelectOp(right, arith.MinSIOp(k, c(63)).result, c(1)).result
        half_k = arith.ShLIOp(c(1), arith.SubIOp(k_right, c(1)).result).result
        shifted_right = arith.ShRUIOp(arith.AddIOp(significand, half_k).result, k_right).result
        k_left = arith.SelectOp(right, c(0), arith.MinSIOp(arith.SubIOp(c(0), k).result, c(31)).result).result
        fits = arith.CmpIOp(arith.CmpIPredicate.sle, significand, arith.ShRSIOp(c(1 << 31), k_left).result).result
        shifted_left = arith.SelectOp(fits, arith.ShLIOp(significand, k_left).result, c(1 << 31)).result
        result = arith.SelectOp(right, shifted_right, shifted_left).result
        signed = arith.SelectOp(negative, arith.SubIOp(c(0), result).result, result).result
        return self.saturate32(signed)

    def saturating_multiply_by_power_of_two(self, x: ir.Value, exponent: int) -> ir.Value:
        """gemmlowp's SaturatingRoundingMultiplyByPOT on int32: a rounding
        right shift for a negative exponent, a left shift saturated to int32
        for a positive one."""
        if exponent <= 0:
            return self.rounding_divide_by_power_of_two(x, -exponent)
        threshold = (1 << (31 - exponent)) - 1
        shifted = arith.ShLIOp(x, self.constant(exponent)).result
        high = self.select(arith.CmpIOp(arith.CmpIPredicate.sgt, x, self.constant(threshold)).result, _I32_MAX, shifted)
        return self.select(arith.CmpIOp(arith.CmpIPredicate.slt, x, self.constant(-threshold)).result, _I32_MIN, high)

    def inverse_sqrt_multiplier(self, x: ir.Value) -> tuple[ir.Value, ir.Value]:
        """TFLite's GetInvSqrtQuantizedMultiplierExp of a positive int32
        ``x``, as the integer layer norm calls it (reverse shift -1): the
        multiplier and right shift an MBQM divides by ``sqrt(x)`` with, from
        five Newton-Raphson steps in Q3.28 on ``x`` normalised to [2^27, 2^29)
        by pairs of bits; (INT32_MAX, 0) for x <= 1."""
        c = self.constant
        large = arith.CmpIOp(arith.CmpIPredicate.sge, x, c(1 << 29)).result
        reduced = self.select(large, arith.ShRSIOp(x, c(2)).result, x)  # x < 2^31: at most one division by 4
        shift = self.select(large, 12, 11)
        # Pairs of bits x can be shifted left by and stay below 2^29.
        pairs = self.sub(arith.ShRUIOp(self.sub(self.count_leading_zeros(reduced), 1), c(1)).result, 1)
        shift = self.sub(shift, pairs)
        normalised = arith.ShLIOp(reduced, arith.ShLIOp(pairs, c(1)).result).result
        half_input = self.rounding_divide_by_power_of_two(arith.ShRSIOp(normalised, c(1)).result, 1)
        half_three = (1 << 28) + (1 << 27)  # 1.5 in Q3.28
        y = c(1 << 28)  # 1.0 in Q3.28
        for _ in range(5):
            cube = self.saturating_multiply_by_power_of_two(
                self.saturating_doubling_high_multiply(self.saturating_doubling_high_multiply(y, y), y), 6)
            difference = self.sub(self.saturating_doubling_high_multiply(c(half_three), y),
                                  self.saturating_doubling_high_multiply(half_input, cube))
            y = self.saturating_multiply_by_power_of_two(difference, 3)
        y = self.saturating_doubling_high_multiply(y, 1518500250)  # times sqrt(2) / 2
        negative = arith.CmpIOp(arith.CmpIPredicate.slt, shift, c(0)).result
        y = self.select(negative, arith.ShLIOp(y, self.sub(0, shift)).result, y)
        shift = self.select(negative, 0, shift)
        small = arith.CmpIOp(arith.CmpIPredicate.sle, x, c(1)).result
        return self.select(small, _I32_MAX, y), self.select(small, 0, shift)

    def exp_on_negative_values(self, a: ir.Value) -> ir.Value:
        """gemmlowp's exp_on_negative_values of ``a`` <= 0 in Q5.26 (the
        softmax's scaled input difference), in Q0.31: the Taylor series on
        [-1/4, 0) for ``a`` modulo 1/4, then one factor exp(-2^k) for each
        bit k = -2 .. 4 of the rest; exp(0) is INT32_MAX. The steps of
        fixed_point_reference.exp_on_negative_values, which tabulates it."""
        fractional_bits, quarter = 26, 1 << 24
        offset = self.sub(arith.AndIOp(a, self.constant(quarter - 1)).result, quarter)  # in [-1/4, 0)
        x = self.add(self.saturating_left_shift(offset, 5), 1 << 28)  # Q0.31, shifted by 1/8
        x2 = self.saturating_doubling_high_multiply(x, x)
        x3 = self.saturating_doubling_high_multiply(x2, x)
        x4_over_4 = self.rounding_divide_by_power_of_two(self.saturating_doubling_high_multiply(x2, x2), 2)
        polynomial = self.rounding_divide_by_power_of_two(
            self.add(self.doubling_high_multiply(self.add(x4_over_4, x3), EXP_ONE_THIRD), x2), 1)
        result = self.add(EXP_CONSTANT_TERM, self.doubling_high_multiply(self.add(x, polynomial), EXP_CONSTANT_TERM))
        rest = self.sub(offset, a)
        for k, factor in EXP_BARREL:
            bit = arith.AndIOp(rest, self.constant(1 << (fractional_bits + k))).result
            set_ = arith.CmpIOp(arith.CmpIPredicate.ne, bit, self.constant(0)).result
            result = self.select(set_, self.doubling_high_multiply(result, factor), result)
        return self.select(arith.CmpIOp(arith.CmpIPredicate.eq, a, self.constant(0)).result, _I32_MAX, result)

    def count_leading_zeros(self, x: ir.Value) -> ir.Value:
        return math.CountLeadingZerosOp(x).result

    def select(self, condition: ir.Value, if_true: Int, if_false: Int, type_: ir.Type | None = None) -> ir.Value:
        return arith.SelectOp(condition, self.value(if_true, type_), self.value(if_false, type_)).result

    def rounding_divide(self, x: ir.Value, divisor: int) -> ir.Value:
        """x / divisor rounded to nearest with ties away from zero, as TFLite's
        average pool divides its sum."""
        half = divisor // 2
        adjusted = arith.AddIOp(x, self.select_positive(x, half, -half, self.i32)).result
        return arith.DivSIOp(adjusted, self.constant(divisor)).result


def reduced_multiplier_64(multiplier: int, shift: int) -> tuple[int, int]:
    """The (16-bit multiplier, total shift) of TFLite's int64 MBQM."""
    reduced = (multiplier + (1 << 15)) >> 16 if multiplier < 0x7FFF0000 else 0x7FFF
    return reduced, 15 - shift


def split_shift(shift: int) -> tuple[int, int]:
    """A requantization shift (-31..30) as (left, right) shift amounts."""
    shift = max(-31, min(30, shift))
    return max(shift, 0), max(-shift, 0)
