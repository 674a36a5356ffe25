"""TFLite's integer requantization arithmetic in Python integers (no
overflow), written from its definition: the reference the NPU's and the CPU
code's fixed-point arithmetic are checked against."""

from __future__ import annotations


def srdhm(a: int, b: int) -> int:
    if a == b == -(2**31):
        return 2**31 - 1
    ab = a * b
    nudge = 2**30 if ab >= 0 else 1 - 2**30
    q = abs(ab + nudge) // 2**31
    return q if ab + nudge >= 0 else -q  # C division truncates toward zero


def rdbpot(x: int, e: int) -> int:
    mask = (1 << e) - 1
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if (x & mask) > threshold else 0)


def requantize(acc: int, mult: int, shift: int) -> int:
    """MultiplyByQuantizedMultiplier (convolutions, additions): a saturating
    left shift, a rounding doubling high multiply and a rounding right shift."""
    x = max(-(2**31), min(2**31 - 1, acc * (1 << max(shift, 0))))
    return rdbpot(srdhm(x, mult), max(-shift, 0))


def rounding_divide(x: int, divisor: int) -> int:
    """An average pool's sum divided by its count, ties away from zero."""
    half = divisor // 2
    n = x + half if x >= 0 else x - half
    q = abs(n) // divisor
    return q if n >= 0 else -q
