"""gemmlowp's 16-bit fixed-point logistic and tanh on Python integers,
written from gemmlowp's definitions (fixedpoint.h): the reference the
emitted integer code (npukit.quantization.fixed_point_int16) is checked
against over every int16 input."""

from __future__ import annotations

import numpy as np

_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
           (4, 242))


def wrap16(x: int) -> int:
    return (x + (1 << 15)) % (1 << 16) - (1 << 15)


def _truncating_divide(x: int, divisor: int) -> int:
    q = abs(x) // divisor
    return q if x >= 0 else -q


def srdhm16(a: int, b: int) -> int:
    if a == b == -(1 << 15):
        return (1 << 15) - 1
    product = a * b
    nudge = (1 << 14) if product >= 0 else 1 - (1 << 14)
    return wrap16(_truncating_divide(product + nudge, 1 << 15))


def rdbpot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if (x & mask) > threshold else 0)


def multiply_by_pot(x: int, exponent: int) -> int:
    if exponent <= 0:
        return rdbpot(x, -exponent)
    threshold = (1 << (15 - exponent)) - 1
    if x > threshold:
        return (1 << 15) - 1
    if x < -threshold:
        return -(1 << 15)
    return wrap16(x << exponent)


def rescale(q31: int) -> int:
    return rdbpot(q31, 16)


def _exp_quarter(a: int) -> int:
    constant_term, one_third = rescale(1895147668), rescale(715827883)
    x = wrap16(a + (1 << 12))
    x2 = srdhm16(x, x)
    x3 = srdhm16(x2, x)
    x4 = srdhm16(x2, x2)
    inner = wrap16(srdhm16(wrap16(multiply_by_pot(x4, -2) + x3), one_third) + x2)
    polynomial = multiply_by_pot(inner, -1)
    return max(-(1 << 15), min((1 << 15) - 1, constant_term + srdhm16(constant_term, wrap16(x + polynomial))))


def exp_on_negative_values(a: int, integer_bits: int) -> int:
    fractional_bits = 15 - integer_bits
    quarter = 1 << (fractional_bits - 2)
    mod = wrap16((a & (quarter - 1)) - quarter)
    result = _exp_quarter(multiply_by_pot(mod, integer_bits))
    remainder = wrap16(mod - a)
    for exponent, multiplier in _BARREL:
        if integer_bits > exponent and remainder & (1 << (fractional_bits + exponent)):
            result = srdhm16(result, rescale(multiplier))
    if integer_bits > 5 and a < rescale(-(1 << (36 - integer_bits))):
        result = 0
    return (1 << 15) - 1 if a == 0 else result


def _newton_raphson(a: int) -> int:
    total = a + (1 << 15) - 1
    half = wrap16(_truncating_divide(total + (1 if total >= 0 else -1), 2))
    x = wrap16(rescale(1515870810) + srdhm16(half, rescale(-1010580540)))
    for _ in range(3):
        error = wrap16((1 << 13) - srdhm16(half, x))
        x = wrap16(x + multiply_by_pot(srdhm16(x, error), 2))
    return x


def logistic(a: int, integer_bits: int) -> int:
    if a == 0:
        return rescale(1 << 30)
    magnitude = a if a > 0 else wrap16(-a)
    positive = multiply_by_pot(_newton_raphson(exp_on_negative_values(wrap16(-magnitude), integer_bits)), 1)
    return positive if a > 0 else wrap16((1 << 15) - 1 - positive)


def tanh(a: int, integer_bits: int) -> int:
    if a == 0:
        return 0
    n = a if a < 0 else wrap16(-a)
    t = multiply_by_pot(wrap16(_newton_raphson(exp_on_negative_values(n, integer_bits + 1)) - (1 << 13)), 2)
    return wrap16(-t) if a < 0 else t


def table(function: str, integer_bits: int) -> np.ndarray:
    """The function of every int16 input, in input order -32768 .. 32767."""
    fn = logistic if function == "logistic" else tanh
    return np.array([fn(v, integer_bits) for v in range(-(1 << 15), 1 << 15)], np.int16)
