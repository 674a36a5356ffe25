"""Real-valued scales as mynpu's fixed-point requantization parameters
(docs/mynpu-isa.md, "Arithmetic"): a Q31 multiplier and a power-of-two shift,
derived the way TFLite derives them, so that the NPU's integer results equal
TFLite's integer kernels."""

from __future__ import annotations

import math
import struct
from typing import Iterable

import numpy as np

MIN_SHIFT, MAX_SHIFT = -31, 30
ADD_LEFT_SHIFT = 20  # TFLite's int8 ADD shifts both operands left by this before scaling them


def as_f32(value: float) -> float:
    """``value`` rounded to single precision, as TFLite stores scales."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


def quantize_multiplier(scale: float) -> tuple[int, int]:
    """``(multiplier, shift)`` with ``scale ~= multiplier * 2^(shift - 31)``
    and ``multiplier`` in [2^30, 2^31) (0 for a zero scale)."""
    if scale < 0 or not math.isfinite(scale):
        raise ValueError(f"a requantization scale must be finite and non-negative, got {scale}")
    if scale == 0:
        return 0, 0
    fraction, shift = math.frexp(scale)
    q = math.floor(fraction * (1 << 31) + 0.5)  # round half away from zero (fraction > 0)
    if q == 1 << 31:
        q //= 2
        shift += 1
    if shift < MIN_SHIFT:  # too small to represent: the result is 0
        return 0, 0
    if shift > MAX_SHIFT:
        raise ValueError(f"requantization scale {scale} is too large for mynpu (shift {shift} > {MAX_SHIFT})")
    return q, shift


def convolution_multipliers(input_scale: float, weight_scales: Iterable[float],
                            output_scale: float) -> list[tuple[int, int]]:
    """Per output channel: input scale x weight scale / output scale, computed
    in double precision from the single-precision scales as TFLite does."""
    return [quantize_multiplier(as_f32(input_scale) * as_f32(w) / as_f32(output_scale)) for w in weight_scales]


def accumulator_scale(factors: Iterable[np.ndarray]) -> np.ndarray:
    """The real scale of int32 accumulators: the product of the single-precision
    input and weight scales (arrays broadcast per channel), formed in double
    precision as TFLite forms it."""
    scale = np.array(1.0)
    for factor in factors:
        scale = scale * np.vectorize(as_f32, otypes=[np.float64])(np.asarray(factor, np.float64))
    return scale


def quant_table(multipliers: Iterable[tuple[int, int]]) -> bytes:
    """The ISA's requantization table: int32 multiplier, int32 shift per channel."""
    return b"".join(struct.pack("<ii", m, s) for m, s in multipliers)


def scale_table(scales: Iterable[float]) -> bytes:
    """OP_MAT_MUL's requantization table: one binary64 scale per channel."""
    return b"".join(struct.pack("<d", float(s)) for s in scales)


def addition_multipliers(first_scale: float, second_scale: float,
                         output_scale: float) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    """TFLite's int8 ADD: the multipliers of the two operands (after the
    ``ADD_LEFT_SHIFT`` shift) and of the sum, from single-precision scales."""
    s1, s2, so = as_f32(first_scale), as_f32(second_scale), as_f32(output_scale)
    twice_max = 2 * max(s1, s2)
    return (quantize_multiplier(s1 / twice_max), quantize_multiplier(s2 / twice_max),
            quantize_multiplier(twice_max / ((1 << ADD_LEFT_SHIFT) * so)))


def integer_bias(bias: np.ndarray, accumulator_scale: np.ndarray) -> np.ndarray:
    """A float bias as int32 in units of the accumulator's scale; ValueError
    when it is not (close to) an integer multiple of it, as a quantized
    model's bias always is."""
    ratio = np.asarray(bias, np.float64) / np.asarray(accumulator_scale, np.float64)
    rounded = np.round(ratio)
    if np.any(np.abs(ratio - rounded) > 0.05) or np.any(np.abs(rounded) >= 2**31):
        raise ValueError("a bias that is not an integer multiple of the accumulator scale")
    return rounded.astype(np.int32)
