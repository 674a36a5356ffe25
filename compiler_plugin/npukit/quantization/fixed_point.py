"""TFLite's fixed-point requantization as ``arith`` operations.

The same arithmetic as the mynpu device (hal_driver/src/mynpu/requantize.h,
docs/mynpu-isa.md "Arithmetic"): MultiplyByQuantizedMultiplier with a
saturating left shift, a saturating rounding doubling high multiply and a
rounding divide by a power of two with ties away from zero; and for fully
connected layers the product rounded once, as TFLite's fully connected
kernel computes it (OP_MAT_MUL does the same). Emitted at the
current insertion point (and location) as scalar i32/i64 operations, so it
can stand in a ``linalg.generic`` body. Multipliers and shifts are Python
ints (constants, folded by the compiler) or i32 values (per-channel tables).
"""

from __future__ import annotations

from typing import Union

from iree.compiler import ir
from iree.compiler.dialects import arith

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
        """A constant or an i32 value as i64."""
        return self.constant(x, self.i64) if isinstance(x, int) else arith.ExtSIOp(self.i64, x).result

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

    def multiply_by_quantized_multiplier_once(self, x: ir.Value, multiplier: Int, shift: Int) -> ir.Value:
        """The same product rounded once: (x * multiplier + 2^(30 - shift)) >>
        (31 - shift) in 64 bits, saturated to int32 (TFLite's fully connected
        kernel; shift in -31..30)."""
        product = arith.MulIOp(self.value_i64(x), self.value_i64(multiplier)).result
        if isinstance(shift, int):
            total, half = self.constant(31 - shift, self.i64), self.constant(1 << (30 - shift), self.i64)
        else:
            total = arith.SubIOp(self.constant(31, self.i64), self.value_i64(shift)).result
            half = arith.ShLIOp(self.constant(1, self.i64), arith.SubIOp(total, self.constant(1, self.i64)).result).result
        return self.saturate32(arith.ShRSIOp(arith.AddIOp(product, half).result, total).result)

    def rounding_divide(self, x: ir.Value, divisor: int) -> ir.Value:
        """x / divisor rounded to nearest with ties away from zero, as TFLite's
        average pool divides its sum."""
        half = divisor // 2
        adjusted = arith.AddIOp(x, self.select_positive(x, half, -half, self.i32)).result
        return arith.DivSIOp(adjusted, self.constant(divisor)).result


def split_shift(shift: int) -> tuple[int, int]:
    """A requantization shift (-31..30) as (left, right) shift amounts."""
    shift = max(-31, min(30, shift))
    return max(shift, 0), max(-shift, 0)
