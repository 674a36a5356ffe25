"""The integer parameters TFLite's reference kernels derive from a model's
scales before they run (each kernel's Prepare), computed the same way:
which products are formed in single and which in double precision, how
multipliers are rounded, and the tables some operators use. With these, the
arithmetic emitted for a layer is exactly the reference kernel's
(docs/tflite-arithmetic.md has the formulas).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from npukit.quantization.fixed_point_reference import exp_on_negative_values, srdhm

F32 = np.float32


def f32(value) -> np.float32:
    return np.float32(value)


def tflite_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: ``real ~= m * 2^(shift - 31)`` with |m| in
    [2^30, 2^31) (the sign kept), or (0, 0) for 0 and for values too small
    to represent."""
    if real == 0 or not math.isfinite(real):
        return 0, 0
    fraction, shift = math.frexp(real)
    q = int(math.copysign(math.floor(abs(fraction) * (1 << 31) + 0.5), fraction))
    if abs(q) == 1 << 31:
        q //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q, shift


def split(shift: int) -> tuple[int, int]:
    """A multiplier's shift as the (left, right) shifts of TFLite's MBQM."""
    return max(shift, 0), max(-shift, 0)


def quantize_value(real: float, scale: np.float32, zero_point: int) -> int:
    """TFLite's Quantize of one real value for an activation range: the
    division in single precision, rounded half away from zero."""
    q = f32(f32(real) / f32(scale))
    return int(zero_point) + int(math.copysign(math.floor(abs(float(q)) + 0.5), float(q)))


# TFLite's fused activation function codes.
ACTIVATION_NONE, ACTIVATION_RELU, ACTIVATION_RELU_N1_TO_1, ACTIVATION_RELU6 = 0, 1, 2, 3
ACTIVATION_NAMES = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}


def activation_range(activation: int, scale: np.float32, zero_point: int, low: int, high: int) -> tuple[int, int]:
    """CalculateActivationRangeQuantized: the integer range a fused
    activation leaves, within the type's [low, high]. ValueError for an
    activation a quantized kernel does not take."""
    if activation == ACTIVATION_NONE:
        return low, high
    if activation == ACTIVATION_RELU:
        return max(low, quantize_value(0.0, scale, zero_point)), high
    if activation == ACTIVATION_RELU6:
        return max(low, quantize_value(0.0, scale, zero_point)), min(high, quantize_value(6.0, scale, zero_point))
    if activation == ACTIVATION_RELU_N1_TO_1:
        return max(low, quantize_value(-1.0, scale, zero_point)), min(high, quantize_value(1.0, scale, zero_point))
    raise ValueError(f"the fused activation {ACTIVATION_NAMES.get(activation, activation)}")


def float_activation_range(activation: int) -> tuple[float, float]:
    if activation == ACTIVATION_NONE:
        return -math.inf, math.inf
    if activation == ACTIVATION_RELU:
        return 0.0, math.inf
    if activation == ACTIVATION_RELU6:
        return 0.0, 6.0
    if activation == ACTIVATION_RELU_N1_TO_1:
        return -1.0, 1.0
    raise ValueError(f"the fused activation {ACTIVATION_NAMES.get(activation, activation)}")


def convolution_multipliers(input_scale, weight_scales: np.ndarray, output_scale) -> list[tuple[int, int]]:
    """CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV: per output channel, from
    double(s_in) * double(s_w) / double(s_out)."""
    return [tflite_multiplier(float(input_scale) * float(w) / float(output_scale)) for w in weight_scales]


def fully_connected_scales(input_scale, weight_scales: np.ndarray, output_scale) -> np.ndarray:
    """FULLY_CONNECTED's reference kernel scales each accumulator by this
    double (s_in * s_w / s_out, in that order) and rounds the product once."""
    return np.array([float(input_scale) * float(w) / float(output_scale) for w in weight_scales], np.float64)


@dataclass(frozen=True)
class AdditionParameters:
    """ADD / SUB: both operands shifted left by ``left_shift`` and scaled,
    their sum (difference) scaled again."""

    left_shift: int
    first: tuple[int, int]
    second: tuple[int, int]
    output: tuple[int, int]


def addition_parameters(s1, s2, s_out, int16: bool) -> AdditionParameters:
    left_shift = 15 if int16 else 20
    twice = 2 * max(float(s1), float(s2))
    first = tflite_multiplier(float(s1) / twice)
    second = tflite_multiplier(float(s2) / twice)
    output = tflite_multiplier(twice / ((1 << left_shift) * float(s_out)))
    return AdditionParameters(left_shift, first, second, output)


def multiplication_multiplier(s1, s2, s_out) -> tuple[int, int]:
    """MUL: the real multiplier formed in single precision."""
    return tflite_multiplier(float(f32(f32(f32(s1) * f32(s2)) / f32(s_out))))


def requantization_multiplier(s_in, s_out) -> tuple[int, int]:
    """QUANTIZE between integer types, MEAN and SUM: double(s_in) / double(s_out)."""
    return tflite_multiplier(float(s_in) / float(s_out))


def svdf_multipliers(input_scale, feature_weights_scale, time_weights_scale, state_scale, output_scale,
                     single_precision: bool) -> tuple[tuple[int, int], tuple[int, int]]:
    """SVDF's two multipliers: input times feature weights to the state's
    scale, and state times time weights to the output's. TFLite's kernel
    forms them in double precision; TFLite Micro's in single precision."""
    if single_precision:
        first = f32(f32(f32(input_scale) * f32(feature_weights_scale)) / f32(state_scale))
        second = f32(f32(f32(state_scale) * f32(time_weights_scale)) / f32(output_scale))
        return tflite_multiplier(float(first)), tflite_multiplier(float(second))
    first = float(input_scale) * float(feature_weights_scale) / float(state_scale)
    second = float(state_scale) * float(time_weights_scale) / float(output_scale)
    return tflite_multiplier(first), tflite_multiplier(second)


def single_precision_ratio_multiplier(numerator, s_out) -> tuple[int, int]:
    """RELU family, LEAKY_RELU, PRELU: a ratio formed in single precision."""
    return tflite_multiplier(float(f32(f32(numerator) / f32(s_out))))


def mean_multiplier(s_in, s_out, count: int) -> tuple[int, int]:
    """MEAN: the requantization multiplier with 1/count folded in, as TFLite
    folds it ((M << k) / count, shift - k)."""
    multiplier, shift = requantization_multiplier(s_in, s_out)
    if count <= 0 or multiplier == 0:
        return multiplier, shift
    k = min(count.bit_length() - 1, 32, 31 + shift)
    return int((multiplier << k) // count), shift - k


@dataclass(frozen=True)
class SoftmaxParameters:
    """int8 SOFTMAX (gemmlowp fixed point): the input difference multiplier
    and left shift, and the smallest difference that contributes."""

    beta_multiplier: int
    beta_left_shift: int
    diff_min: int


SCALED_DIFF_INTEGER_BITS = 5
ACCUMULATION_INTEGER_BITS = 12


def softmax_parameters(beta: float, s_in) -> SoftmaxParameters:
    real = min(float(beta) * float(s_in) * float(1 << (31 - SCALED_DIFF_INTEGER_BITS)), float((1 << 31) - 1))
    multiplier, shift = tflite_multiplier(real)
    if shift < 0:  # QuantizeMultiplierGreaterThanOne requires a real multiplier above 1
        raise ValueError("a softmax whose beta times input scale is below 2^-26")
    radius = math.floor(((1 << SCALED_DIFF_INTEGER_BITS) - 1) * (1 << (31 - SCALED_DIFF_INTEGER_BITS))
                        / (1 << shift))
    return SoftmaxParameters(multiplier, shift, -radius)


def softmax_exponentials(params: SoftmaxParameters) -> np.ndarray:
    """exp(beta * s_in * d) in Q0.31 for each input difference d = x - max in
    -255..0 (index -d): the value the reference kernel computes, 0 where d is
    below diff_min."""
    table = np.zeros(256, np.int64)
    for d in range(0, -256, -1):
        if d < params.diff_min:
            continue
        scaled = srdhm(_saturating_shift_left(d, params.beta_left_shift), params.beta_multiplier)
        table[-d] = exp_on_negative_values(scaled, SCALED_DIFF_INTEGER_BITS)
    return table.astype(np.int32)


def _round_half_away(x: float) -> float:
    return math.copysign(math.floor(abs(x) + 0.5), x)


def int16_interpolation_table(s_in: float, zp_in: int, s_out: float, zp_out: int, function) -> np.ndarray:
    """TFLite's 513-entry int16 table of ``function`` (LUTPopulateInt16 in
    double precision): entry i samples the input range at i/512, biased by
    half the error that linear interpolation makes at the segment's middle."""
    in_min, in_max = s_in * (-32768 - zp_in), s_in * (32767 - zp_in)
    out_min, out_max = s_out * (-32768 - zp_out), s_out * (32767 - zp_out)
    step = (in_max - in_min) / 512
    half = step / 2
    inverse = 65536.0 / (out_max - out_min)
    table = np.zeros(513, np.int64)
    for i in range(512):
        value = function(in_min + i * step)
        middle = function(in_min + i * step + half)
        following = function(in_min + (i + 1) * step)
        sample = _round_half_away(value * inverse)
        interpolated = _round_half_away((following * inverse + sample) / 2)
        bias = _round_half_away((interpolated - _round_half_away(middle * inverse)) / 2)
        table[i] = min(max(sample - bias, -32768), 32767)
    table[512] = min(max(_round_half_away(function(in_max) * inverse), -32768), 32767)
    return table.astype(np.int16)


@dataclass(frozen=True)
class Int16SoftmaxParameters:
    multiplier: int
    shift: int
    exponentials: np.ndarray  # exp on [-10, 0]: input scale 10/65535, zero point 32767; output 2/65535
    reciprocals: np.ndarray  # 1 / (1 + x) on [0, 1]: input scale 1/65535, zero point -32768; output 2/65535


def int16_softmax_parameters(beta: float, s_in) -> Int16SoftmaxParameters:
    """The int16 SOFTMAX kernel's Prepare: the input differences rescaled to
    the exponential table's input scale 10/65535 (the real multiplier formed
    from the single-precision product beta * s_in, divided in double), and
    the two interpolation tables."""
    multiplier, shift = tflite_multiplier(float(f32(f32(s_in) * f32(beta))) / (10.0 / 65535.0))
    return Int16SoftmaxParameters(
        multiplier, shift,
        int16_interpolation_table(10.0 / 65535.0, 32767, 2.0 / 65535.0, 0, math.exp),
        int16_interpolation_table(1.0 / 65535.0, -32768, 2.0 / 65535.0, 0, lambda x: 1.0 / (1.0 + x)))


def _saturating_shift_left(x: int, shift: int) -> int:
    value = x * (1 << shift)
    return max(-(1 << 31), min((1 << 31) - 1, value))


@cache
def _libm():
    name = ctypes.util.find_library("m")
    if name is None:
        return None
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None
    for fn in ("expf", "tanhf"):
        getattr(lib, fn).restype = ctypes.c_float
        getattr(lib, fn).argtypes = [ctypes.c_float]
    return lib


def _expf(x: np.float32) -> np.float32:
    lib = _libm()
    return f32(lib.expf(float(x))) if lib is not None else f32(np.exp(f32(x)))


def _tanhf(x: np.float32) -> np.float32:
    lib = _libm()
    return f32(lib.tanhf(float(x))) if lib is not None else f32(np.tanh(f32(x)))


def int8_lookup_table(function: str, s_in, zp_in: int, s_out, zp_out: int) -> np.ndarray:
    """LOGISTIC / TANH on int8: TFLite's 256-entry table (index q + 128),
    built in single precision with the C library's expf/tanhf."""
    inverse = f32(f32(1.0) / f32(s_out))
    table = np.zeros(256, np.int8)
    for q in range(-128, 128):
        x = f32(f32(s_in) * f32(q - zp_in))
        if function == "logistic":
            y = f32(f32(1.0) / f32(f32(1.0) + _expf(f32(-x))))
        elif function == "tanh":
            y = _tanhf(x)
        else:
            raise ValueError(function)
        scaled = f32(y * inverse)
        rounded = f32(math.copysign(math.floor(abs(float(scaled)) + 0.5), float(scaled)))
        value = int(f32(rounded + f32(zp_out)))
        table[q + 128] = max(-128, min(127, value))
    return table


@dataclass(frozen=True)
class HardSwishParameters:
    output_multiplier: int  # 16-bit
    output_shift: int
    reluish_multiplier: int  # 16-bit
    reluish_shift: int


def _down_to_16(m: int) -> int:
    return 32767 if m >= (1 << 31) - 1 - (1 << 15) else (m + (1 << 15)) >> 16


def hard_swish_parameters(s_in, s_out) -> HardSwishParameters:
    hires = f32(f32(1.0 / 128.0) * f32(s_in))
    relu_scale = f32(f32(3.0) / f32(32768.0))
    m, output_shift = tflite_multiplier(float(f32(hires / f32(s_out))))
    r, reluish_shift = tflite_multiplier(float(f32(hires / relu_scale)))
    if output_shift > 0:
        raise ValueError("a HARD_SWISH whose output scale is below its input scale / 128")
    return HardSwishParameters(_down_to_16(m), output_shift, _down_to_16(r), reluish_shift)

