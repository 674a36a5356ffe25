"""Real-valued scales as mynpu's fixed-point requantization parameters
(docs/mynpu-isa.md, "Arithmetic"): a Q31 multiplier and a power-of-two shift,
derived the way TFLite derives them, so that the NPU's integer results equal
TFLite's integer kernels."""

from __future__ import annotations

import math
import struct
from typing import Iterable

MIN_SHIFT, MAX_SHIFT = -31, 30


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
    as_f32 = lambda v: struct.unpack("<f", struct.pack("<f", v))[0]  # noqa: E731
    return [quantize_multiplier(as_f32(input_scale) * as_f32(w) / as_f32(output_scale)) for w in weight_scales]


def quant_table(multipliers: Iterable[tuple[int, int]]) -> bytes:
    """The ISA's requantization table: int32 multiplier, int32 shift per channel."""
    return b"".join(struct.pack("<ii", m, s) for m, s in multipliers)
