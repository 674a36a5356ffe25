"""A layer's output stage as one elementwise ``linalg.generic`` over its
accumulators, with per-channel parameters as table operands: the form the
layer recogniser (npukit.layer_recognition.integer_epilogue) reads back.

Integer layers: ``clamp(zp_out + MBQM(acc + bias, M, shift), lo, hi)`` with
TFLite's double rounding (int32 accumulators), its int64 variant (16-bit
activations), or the fully connected kernel's one rounding of a double
product. Float layers: ``clamp(acc + bias, lo, hi)``.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith

from npukit.frontends.tflite.lowering import LoweringContext, per_channel_or_scalar
from npukit.frontends.tflite.mlir_builder import PARALLEL, Value, affine_map, float_max, float_min
from npukit.quantization.fixed_point import FixedPoint, reduced_multiplier_64, split_shift
from npukit.quantization.fixed_point_reference import double_scale_parts

Parameter = "int | float | ir.Value"


def per_channel_generic(ctx: LoweringContext, acc: Value, channel_dim: int, tables: dict[str, object],
                        out_dtype: str, body: Callable[[ir.Value, dict[str, Parameter]], ir.Value]) -> Value:
    """``body(acc_element, parameters)`` for each element of ``acc``; each
    table is a per-channel array (read along ``channel_dim``) or one value."""
    builder = ctx.builder
    rank = acc.rank
    inputs = [(acc, affine_map(rank, list(range(rank))))]
    names: list[str] = []
    scalars: dict[str, object] = {}
    for name, values in tables.items():
        uniform = per_channel_or_scalar(values, np.asarray(values).dtype if isinstance(values, np.ndarray) else
                                        np.int32)
        if isinstance(uniform, np.ndarray):
            inputs.append((builder.constant(uniform), affine_map(rank, [channel_dim])))
            names.append(name)
        else:
            scalars[name] = uniform
    out = builder.empty(acc.shape, out_dtype)

    def emit(*args):
        parameters: dict[str, Parameter] = dict(scalars)
        parameters.update(zip(names, args[1:1 + len(names)]))
        return body(args[0], parameters)

    return builder.generic(inputs, [(out, affine_map(rank, list(range(rank))))], [PARALLEL] * rank, emit)[0]


def requantize_int32(ctx: LoweringContext, acc: Value, channel_dim: int, bias: np.ndarray,
                     multipliers: list[tuple[int, int]], zp_out: int, low: int, high: int, out_dtype: str) -> Value:
    """TFLite's int32 output stage: zp_out + MBQM(acc + bias) clamped to [low, high]."""
    shifts = [split_shift(s) for _, s in multipliers]
    tables = {"bias": np.asarray(bias, np.int32), "multiplier": np.array([m for m, _ in multipliers], np.int32),
              "left": np.array([l for l, _ in shifts], np.int32), "right": np.array([r for _, r in shifts], np.int32)}
    width = 8 if out_dtype in ("int8", "uint8") else 16 if out_dtype == "int16" else 32

    def body(x, p):
        fixed = FixedPoint()
        if not (isinstance(p["bias"], int) and p["bias"] == 0):
            x = fixed.add(x, p["bias"])
        scaled = fixed.multiply_by_quantized_multiplier(x, p["multiplier"], p["left"], p["right"])
        value = fixed.clamp(fixed.add(scaled, zp_out), low, high)
        return value if width == 32 else fixed.truncate(value, width)

    return per_channel_generic(ctx, acc, channel_dim, tables, out_dtype, body)


def requantize_int64(ctx: LoweringContext, acc: Value, channel_dim: int, bias: np.ndarray,
                     multipliers: list[tuple[int, int]], zp_out: int, low: int, high: int, out_dtype: str) -> Value:
    """The 16-bit activations' output stage: int64 accumulators plus an int64
    bias, TFLite's int64 MBQM (a 16-bit multiplier, one rounding)."""
    reduced = [reduced_multiplier_64(m, s) for m, s in multipliers]
    tables = {"bias": np.asarray(bias, np.int64), "multiplier": np.array([m for m, _ in reduced], np.int32),
              "shift": np.array([s for _, s in reduced], np.int32)}
    width = 8 if out_dtype == "int8" else 16

    def body(x, p):
        fixed = FixedPoint()
        bias_value = p["bias"]
        if not (isinstance(bias_value, int) and bias_value == 0):
            x = arith.AddIOp(x, fixed.value(bias_value, fixed.i64)).result
        scaled = fixed.multiply_by_quantized_multiplier_64(x, p["multiplier"], p["shift"])
        return fixed.truncate(fixed.clamp(fixed.add(scaled, zp_out), low, high), width)

    return per_channel_generic(ctx, acc, channel_dim, tables, out_dtype, body)


def scale_once(ctx: LoweringContext, acc: Value, channel_dim: int, bias: np.ndarray, scales: np.ndarray,
               zp_out: int, low: int, high: int, out_dtype: str) -> Value:
    """FULLY_CONNECTED's output stage: zp_out + round(double(acc + bias) * scale)."""
    parts = np.array([double_scale_parts(float(s)) for s in scales], np.int64).reshape(-1, 3)
    tables = {"bias": np.asarray(bias, np.int32 if acc.dtype == "int32" else np.int64),
              "high": parts[:, 0].astype(np.int32), "low": parts[:, 1].astype(np.uint32).view(np.int32),
              "shift": parts[:, 2].astype(np.int32)}
    width = 8 if out_dtype == "int8" else 16

    def body(x, p):
        fixed = FixedPoint()
        bias_value = p["bias"]
        if not (isinstance(bias_value, int) and bias_value == 0):
            x = arith.AddIOp(x, fixed.value(bias_value, x.type)).result
        if ir.IntegerType(x.type).width == 64:
            x = fixed.truncate(x, 32)  # 16x8 accumulators the caller bounded to int32 (contractions.acc_bound)
        low_bits = p["low"] & 0xFFFFFFFF if isinstance(p["low"], int) else p["low"]
        scaled = fixed.scale_rounded_once(x, p["high"], _unsigned_low(fixed, low_bits), p["shift"])
        return fixed.truncate(fixed.clamp(fixed.add(scaled, zp_out), low, high), width)

    return per_channel_generic(ctx, acc, channel_dim, tables, out_dtype, body)


def _unsigned_low(fixed: FixedPoint, low: "int | ir.Value") -> "int | ir.Value":
    """A significand's low 32 bits (stored as int32 tables) as the i64 value
    0..2^32-1 the product needs."""
    if isinstance(low, int):
        return low
    return arith.ExtUIOp(fixed.i64, low).result


def float_output(ctx: LoweringContext, acc: Value, channel_dim: int, bias: np.ndarray | None, low: float,
                 high: float) -> Value:
    """A float layer's bias and fused activation."""
    tables = {"bias": np.asarray(bias, np.float32)} if bias is not None else {}
    f32 = ir.F32Type.get()

    def body(x, p):
        if "bias" in p:
            b = p["bias"]
            b = arith.ConstantOp(f32, ir.FloatAttr.get(f32, b)).result if isinstance(b, float) else b
            x = arith.AddFOp(x, b).result
        if low != -math.inf:
            x = float_max(x, arith.ConstantOp(f32, ir.FloatAttr.get(f32, low)).result)
        if high != math.inf:
            x = float_min(x, arith.ConstantOp(f32, ir.FloatAttr.get(f32, high)).result)
        return x

    if bias is None and low == -math.inf and high == math.inf:
        return acc
    return per_channel_generic(ctx, acc, channel_dim, tables, "float32", body)
