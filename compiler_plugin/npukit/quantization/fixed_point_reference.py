"""gemmlowp's fixed-point primitives on Python integers, for the tables the
compiler computes ahead of time (a softmax's exponentials of the 256
possible input differences). The same arithmetic, emitted as MLIR for run
time, is in fixed_point.py."""

from __future__ import annotations

import numpy as np

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def wrap32(x: int) -> int:
    return (x + (1 << 31)) % (1 << 32) - (1 << 31)


def srdhm(a: int, b: int) -> int:
    """SaturatingRoundingDoublingHighMul on int32: round(a * b / 2^31), ties
    away from zero, saturating the one product that overflows."""
    if a == INT32_MIN and b == INT32_MIN:
        return INT32_MAX
    product = a * b
    nudge = (1 << 30) if product >= 0 else 1 - (1 << 30)
    total = product + nudge
    quotient = abs(total) >> 31  # C's division truncates toward zero
    return quotient if total >= 0 else -quotient


def rdbpot(x: int, exponent: int) -> int:
    """RoundingDivideByPOT: x / 2^exponent rounded to nearest, ties away from zero."""
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def saturating_shift_left(x: int, shift: int) -> int:
    return max(INT32_MIN, min(INT32_MAX, x * (1 << shift)))


def multiply_by_quantized_multiplier(x: int, multiplier: int, shift: int) -> int:
    """TFLite's MBQM (double rounding): a saturating left shift, the doubling
    high multiply, then a rounding right shift."""
    left, right = max(shift, 0), max(-shift, 0)
    return rdbpot(srdhm(saturating_shift_left(x, left), multiplier), right)


# exp(-1/8) and 1/3 in Q0.31: the Taylor series' constants.
EXP_CONSTANT_TERM, EXP_ONE_THIRD = 1895147668, 715827883


def _exp_on_interval_between_negative_one_quarter_and_0_excl(a: int) -> int:
    """exp(a) for a in [-1/4, 0) in Q0.31: a Taylor series around -1/8."""
    constant_term, one_third = EXP_CONSTANT_TERM, EXP_ONE_THIRD
    x = wrap32(a + (1 << 28))
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rdbpot(x4, 2)
    polynomial = rdbpot(wrap32(srdhm(wrap32(x4_over_4 + x3), one_third) + x2), 1)
    return wrap32(constant_term + srdhm(constant_term, wrap32(x + polynomial)))


# exp(-2^k) in Q0.31 for k = -2 .. 4: the barrel shifter's factors.
EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
           (4, 242))


def exp_on_negative_values(a: int, integer_bits: int) -> int:
    """gemmlowp's exp_on_negative_values for a <= 0 in Q(integer_bits).(31 -
    integer_bits), result in Q0.31 (integer_bits 5, as softmax uses it)."""
    if integer_bits != 5:
        raise ValueError("only the softmax's 5 integer bits are implemented")
    fractional_bits = 31 - integer_bits
    quarter = 1 << (fractional_bits - 2)
    mod_quarter_minus_quarter = wrap32((a & (quarter - 1)) - quarter)
    result = _exp_on_interval_between_negative_one_quarter_and_0_excl(
        saturating_shift_left(mod_quarter_minus_quarter, integer_bits))
    remainder = wrap32(mod_quarter_minus_quarter - a)
    for k, multiplier in EXP_BARREL:
        bit = fractional_bits + k
        if bit <= 30 and remainder & (1 << bit):
            result = srdhm(result, multiplier)
    return INT32_MAX if a == 0 else result


# Vectorised forms (numpy int64 arrays holding int32 values) ---------------------------

def srdhm_array(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    product = a * b
    total = product + np.where(product >= 0, 1 << 30, 1 - (1 << 30))
    quotient = np.abs(total) >> 31
    result = np.where(total >= 0, quotient, -quotient)
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, result)


def rdbpot_array(x: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    x, exponent = np.asarray(x, np.int64), np.asarray(exponent, np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def multiply_by_quantized_multiplier_array(x: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    shift = np.asarray(shift, np.int64)
    left, right = np.maximum(shift, 0), np.maximum(-shift, 0)
    shifted = np.clip(np.asarray(x, np.int64) << left, INT32_MIN, INT32_MAX)
    return rdbpot_array(srdhm_array(shifted, multiplier), right)


def scale_rounded_once_array(x: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """round(double(x) * scale), ties away from zero, saturated to int32."""
    product = np.clip(np.asarray(x, np.float64) * np.asarray(scale, np.float64), -2.0 ** 40, 2.0 ** 40)
    whole = np.trunc(product)
    fraction = product - whole
    rounded = whole + (fraction >= 0.5) - (fraction <= -0.5)
    return np.clip(rounded, INT32_MIN, INT32_MAX).astype(np.int64)


def double_scale_parts(scale: float) -> tuple[int, int, int]:
    """A positive double ``scale`` as (high, low, shift): its 53-bit
    significand m = high * 2^32 + low and scale = m * 2^-shift."""
    import math

    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"a scale that is not a positive finite double: {scale}")
    fraction, exponent = math.frexp(scale)  # scale = fraction * 2^exponent, 0.5 <= fraction < 1
    significand = int(fraction * (1 << 53))  # exact: a double has 53 significant bits
    shift = 53 - exponent
    return significand >> 32, significand & 0xFFFFFFFF, shift


def scale_rounded_once_integer(x: int, high: int, low: int, shift: int) -> int:
    """round(fl64(x * scale)) with ties away from zero, saturated to int32,
    in 64-bit integer steps (the form fixed_point.scale_rounded_once emits):
    the exact product |x| * m as hi * 2^32 + lo, rounded to 53 significant
    bits with ties to even as the double multiply rounds it, then shifted
    right by the scale's exponent with ties away from zero."""
    a = abs(x)
    big_a, big_b = a * high, a * low
    hi, lo = big_a + (big_b >> 32), big_b & 0xFFFFFFFF
    if hi >= 1 << 21:  # more than 53 significant bits: the double rounds them
        d = hi.bit_length() - 21
        q = (hi << (32 - d)) + (lo >> d)
        r, half = lo & ((1 << d) - 1), 1 << (d - 1)
        q += (r > half) or (r == half and q & 1)
        k = shift - d
    else:
        q, k = (hi << 32) + lo, shift
    if k >= 1:
        y = (q + (1 << (min(k, 63) - 1))) >> min(k, 63)
    else:
        y = q << -k
    y = -y if x < 0 else y
    return max(INT32_MIN, min(INT32_MAX, y))
