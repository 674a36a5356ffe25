"""gemmlowp's 16-bit fixed-point logistic and tanh as ``arith`` operations.

TFLite's integer LSTM (8x8_16) activates its gates with gemmlowp's
``logistic`` and ``tanh`` on ``FixedPoint<int16_t, N>``: an int16 raw value
``v`` stands for ``v / 2^(15 - N)``, and the result is in Q0.15. The
functions are spelled out here as integer code, step for step as gemmlowp
computes them (a 65536-entry table per function and format would be the
other way, too large for a microcontroller):

- ``exp`` of a value in [-1/4, 0) by a Taylor series around -1/8, and of
  any non-positive value by multiplying in ``exp(-2^k)`` for each bit of
  the value's whole quarters (the "barrel shifter");
- ``1 / (1 + x)`` and ``(1 - x) / (1 + x)`` for x in [0, 1) by three
  Newton-Raphson steps in Q2.13;
- ``logistic(a) = 1 / (1 + exp(-|a|))``, mirrored for negative ``a``;
  ``tanh(a) = (1 - exp(-2|a|)) / (1 + exp(-2|a|))``, odd.

Every int16 operation wraps as the C++ narrowing does, products use the
saturating rounding doubling high multiply, and constants are gemmlowp's
Q0.31 constants rounded to 16 bits. Values are i16 ``ir.Value``s; emit
inside an insertion point and location (a ``linalg.generic`` body).
"""

from __future__ import annotations

from typing import Union

from iree.compiler import ir
from iree.compiler.dialects import arith

from npukit.quantization.fixed_point_reference import EXP_BARREL, EXP_CONSTANT_TERM, EXP_ONE_THIRD

Int16 = Union[int, ir.Value]

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1



def rescale_constant(q31: int) -> int:
    """A Q0.31-style int32 constant as its 16-bit raw value: divided by 2^16,
    rounded half away from zero (gemmlowp's RescaleConstantInitializer)."""
    mask = (1 << 16) - 1
    threshold = (mask >> 1) + (1 if q31 < 0 else 0)
    return (q31 >> 16) + (1 if (q31 & mask) > threshold else 0)


class FixedPoint16:
    """Builds gemmlowp's int16 fixed-point arithmetic."""

    def __init__(self) -> None:
        self.i16 = ir.IntegerType.get_signless(16)
        self.i32 = ir.IntegerType.get_signless(32)

    # Raw int16 operations ---------------------------------------------------------

    def constant(self, value: int) -> ir.Value:
        return arith.ConstantOp(self.i16, ir.IntegerAttr.get(self.i16, value)).result

    def value(self, x: Int16) -> ir.Value:
        return self.constant(x) if isinstance(x, int) else x

    def add(self, a: Int16, b: Int16) -> ir.Value:
        """a + b, wrapping."""
        return arith.AddIOp(self.value(a), self.value(b)).result

    def sub(self, a: Int16, b: Int16) -> ir.Value:
        """a - b, wrapping."""
        return arith.SubIOp(self.value(a), self.value(b)).result

    def negate(self, a: ir.Value) -> ir.Value:
        """-a, wrapping (-(-32768) stays -32768)."""
        return self.sub(0, a)

    def select(self, condition: ir.Value, if_true: Int16, if_false: Int16) -> ir.Value:
        return arith.SelectOp(condition, self.value(if_true), self.value(if_false)).result

    def compare(self, predicate: arith.CmpIPredicate, a: Int16, b: Int16) -> ir.Value:
        return arith.CmpIOp(predicate, self.value(a), self.value(b)).result

    def widen(self, a: Int16) -> ir.Value:
        return arith.ExtSIOp(self.i32, self.value(a)).result

    def narrow(self, a: ir.Value) -> ir.Value:
        return arith.TruncIOp(self.i16, a).result

    def multiply(self, a: Int16, b: Int16, saturate: bool = True) -> ir.Value:
        """SaturatingRoundingDoublingHighMul on int16: round(a * b / 2^15),
        ties away from zero (a truncating division of the nudged product),
        and 32767 for -32768 * -32768. ``saturate=False`` leaves that case
        out where an operand's range excludes -32768."""
        product = arith.MulIOp(self.widen(a), self.widen(b)).result
        zero = arith.ConstantOp(self.i32, ir.IntegerAttr.get(self.i32, 0)).result
        positive = arith.CmpIOp(arith.CmpIPredicate.sge, product, zero).result
        nudge = arith.SelectOp(positive, arith.ConstantOp(self.i32, ir.IntegerAttr.get(self.i32, 1 << 14)).result,
                               arith.ConstantOp(self.i32, ir.IntegerAttr.get(self.i32, 1 - (1 << 14))).result).result
        quotient = arith.DivSIOp(arith.AddIOp(product, nudge).result,
                                 arith.ConstantOp(self.i32, ir.IntegerAttr.get(self.i32, 1 << 15)).result).result
        result = self.narrow(quotient)
        if not saturate or any(isinstance(x, int) and x != INT16_MIN for x in (a, b)):
            return result
        both_min = arith.AndIOp(self.compare(arith.CmpIPredicate.eq, a, INT16_MIN),
                                self.compare(arith.CmpIPredicate.eq, b, INT16_MIN)).result
        return self.select(both_min, INT16_MAX, result)

    def rounding_divide_by_power_of_two(self, x: ir.Value, exponent: int) -> ir.Value:
        """x / 2^exponent rounded to nearest, ties away from zero."""
        if exponent == 0:
            return x
        mask = (1 << exponent) - 1
        remainder = arith.AndIOp(x, self.constant(mask)).result
        negative = self.compare(arith.CmpIPredicate.slt, x, 0)
        threshold = self.select(negative, (mask >> 1) + 1, mask >> 1)
        round_up = self.compare(arith.CmpIPredicate.sgt, remainder, threshold)
        shifted = arith.ShRSIOp(x, self.constant(exponent)).result
        return self.add(shifted, arith.ExtUIOp(self.i16, round_up).result)

    def multiply_by_power_of_two(self, x: ir.Value, exponent: int) -> ir.Value:
        """SaturatingRoundingMultiplyByPOT: a rounding right shift for a
        negative exponent, a left shift saturated to int16 for a positive one."""
        if exponent <= 0:
            return self.rounding_divide_by_power_of_two(x, -exponent)
        threshold = (1 << (15 - exponent)) - 1
        shifted = arith.ShLIOp(x, self.constant(exponent)).result
        high = self.select(self.compare(arith.CmpIPredicate.sgt, x, threshold), INT16_MAX, shifted)
        return self.select(self.compare(arith.CmpIPredicate.slt, x, -threshold), INT16_MIN, high)

    def saturating_add(self, a: Int16, b: Int16) -> ir.Value:
        """a + b clamped to int16."""
        total = arith.AddIOp(self.widen(a), self.widen(b)).result
        low = arith.ConstantOp(self.i32, ir.IntegerAttr.get(self.i32, INT16_MIN)).result
        high = arith.ConstantOp(self.i32, ir.IntegerAttr.get(self.i32, INT16_MAX)).result
        return self.narrow(arith.MinSIOp(arith.MaxSIOp(total, low).result, high).result)

    def rounding_half_sum(self, a: Int16, b: Int16) -> ir.Value:
        """(a + b) / 2 rounded away from zero: (s + sign(s)) / 2, truncating."""
        total = arith.AddIOp(self.widen(a), self.widen(b)).result
        c = lambda v: arith.ConstantOp(self.i32, ir.IntegerAttr.get(self.i32, v)).result  # noqa: E731
        sign = arith.SelectOp(arith.CmpIOp(arith.CmpIPredicate.sge, total, c(0)).result, c(1), c(-1)).result
        return self.narrow(arith.DivSIOp(arith.AddIOp(total, sign).result, c(2)).result)

    # gemmlowp's functions ---------------------------------------------------------------

    def _exp_on_quarter_interval(self, a: ir.Value) -> ir.Value:
        """exp(a) for a in [-1/4, 0), Q0.15 in and out."""
        constant_term = rescale_constant(EXP_CONSTANT_TERM)  # exp(-1/8)
        one_third = rescale_constant(EXP_ONE_THIRD)
        # x in [-1/8, 1/8) and its powers: no product of -1 by -1 to saturate.
        x = self.add(a, 1 << 12)  # a + 1/8
        x2 = self.multiply(x, x, saturate=False)
        x3 = self.multiply(x2, x, saturate=False)
        x4 = self.multiply(x2, x2, saturate=False)
        x4_over_4 = self.multiply_by_power_of_two(x4, -2)
        polynomial = self.multiply_by_power_of_two(
            self.add(self.multiply(self.add(x4_over_4, x3), one_third), x2), -1)
        return self.saturating_add(constant_term, self.multiply(constant_term, self.add(x, polynomial)))

    def exp_on_negative_values(self, a: ir.Value, integer_bits: int) -> ir.Value:
        """exp(a) for a <= 0 in Q(integer_bits).(15 - integer_bits), in Q0.15."""
        fractional_bits = 15 - integer_bits
        if fractional_bits < 2:
            raise ValueError(f"exp of a 16-bit value with {integer_bits} integer bits")
        quarter = 1 << (fractional_bits - 2)
        mod_quarter_minus_quarter = self.sub(arith.AndIOp(a, self.constant(quarter - 1)).result, quarter)
        result = self._exp_on_quarter_interval(self.multiply_by_power_of_two(mod_quarter_minus_quarter,
                                                                             integer_bits))
        remainder = self.sub(mod_quarter_minus_quarter, a)
        for exponent, multiplier in EXP_BARREL:
            if integer_bits <= exponent:
                continue
            bit = arith.AndIOp(remainder, self.constant(1 << (fractional_bits + exponent))).result
            scaled = self.multiply(result, rescale_constant(multiplier))
            result = self.select(self.compare(arith.CmpIPredicate.ne, bit, 0), scaled, result)
        if integer_bits > 5:
            below = self.compare(arith.CmpIPredicate.slt, a, rescale_constant(-(1 << (36 - integer_bits))))
            result = self.select(below, 0, result)
        return self.select(self.compare(arith.CmpIPredicate.eq, a, 0), INT16_MAX, result)

    def _reciprocal_newton_raphson(self, a: ir.Value) -> ir.Value:
        """1 / (1 + a) in Q2.13 for a in [0, 1) (Q0.15): three Newton-Raphson
        steps on the half denominator from 48/17 - 32/17 * d."""
        # The half denominator is in [1/2, 1) and the estimate x in about [1, 2]
        # (Q2.13): both positive, so no product saturates.
        half_denominator = self.rounding_half_sum(a, INT16_MAX)
        x = self.add(rescale_constant(1515870810), self.multiply(half_denominator, rescale_constant(-1010580540)))
        one = 1 << 13
        for _ in range(3):
            error = self.sub(one, self.multiply(half_denominator, x, saturate=False))
            x = self.add(x, self.multiply_by_power_of_two(self.multiply(x, error, saturate=False), 2))
        return x

    def one_over_one_plus_x(self, a: ir.Value) -> ir.Value:
        """1 / (1 + a) for a in [0, 1), Q0.15 in and out."""
        return self.multiply_by_power_of_two(self._reciprocal_newton_raphson(a), 1)

    def one_minus_x_over_one_plus_x(self, a: ir.Value) -> ir.Value:
        """(1 - a) / (1 + a) for a in [0, 1), Q0.15 in and out."""
        return self.multiply_by_power_of_two(self.sub(self._reciprocal_newton_raphson(a), 1 << 13), 2)

    def logistic(self, a: ir.Value, integer_bits: int) -> ir.Value:
        """gemmlowp's logistic of a Q(integer_bits) value, in Q0.15."""
        positive = self.compare(arith.CmpIPredicate.sgt, a, 0)
        magnitude = self.select(positive, a, self.negate(a))
        if_positive = self.one_over_one_plus_x(self.exp_on_negative_values(self.negate(magnitude), integer_bits))
        chosen = self.select(positive, if_positive, self.sub(INT16_MAX, if_positive))
        return self.select(self.compare(arith.CmpIPredicate.eq, a, 0), rescale_constant(1 << 30), chosen)

    def tanh(self, a: ir.Value, integer_bits: int) -> ir.Value:
        """gemmlowp's tanh of a Q(integer_bits) value, in Q0.15."""
        negative = self.compare(arith.CmpIPredicate.slt, a, 0)
        non_positive = self.select(negative, a, self.negate(a))
        # exp(2 n): the same raw value read with one more integer bit.
        t = self.one_minus_x_over_one_plus_x(self.exp_on_negative_values(non_positive, integer_bits + 1))
        chosen = self.select(negative, self.negate(t), t)
        return self.select(self.compare(arith.CmpIPredicate.eq, a, 0), 0, chosen)
