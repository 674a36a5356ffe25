"""Element-by-element operators: ADD, SUB, MUL (numpy broadcasting),
MAXIMUM, MINIMUM, QUANTIZE, DEQUANTIZE, the activations (RELU, RELU6,
RELU_N1_TO_1, LEAKY_RELU, PRELU, HARD_SWISH, LOGISTIC, TANH) and ABS.

Quantized forms are TFLite's reference integer arithmetic (docs/
tflite-arithmetic.md). An int8 operator of one input whose reference kernel
is a 256-entry table (LOGISTIC, TANH) becomes that table, read with the
input as index.
"""

from __future__ import annotations

import math

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith
from iree.compiler.dialects import math as mlir_math
from iree.compiler.dialects import tensor

from npukit.frontends.tflite.flatbuffer_reader import Tensor
from npukit.frontends.tflite.lowering import INT_RANGES, LoweringContext, lowers
from npukit.frontends.tflite.mlir_builder import Value, f32_constant, float_clamp, float_max, float_min, \
    round_half_away_f32
from npukit.quantization.fixed_point import FixedPoint, split_shift
from npukit.quantization.tflite_prepare import activation_range, addition_parameters, float_activation_range, \
    hard_swish_parameters, int8_lookup_table, multiplication_multiplier, quantize_value, \
    requantization_multiplier, single_precision_ratio_multiplier

WIDTHS = {"int8": 8, "uint8": 8, "int16": 16, "int32": 32}




def _broadcast_shape(ctx: LoweringContext, a: Tensor, b: Tensor, out: Tensor) -> tuple[int, ...]:
    try:
        shape = tuple(np.broadcast_shapes(a.shape, b.shape))
    except ValueError:
        raise ctx.fail(f"{a.describe()} and {b.describe()} do not broadcast") from None
    if shape != out.shape:
        raise ctx.fail(f"inputs broadcast to {list(shape)}, the output is {list(out.shape)}")
    return shape


def _quantized_types(ctx: LoweringContext, tensors: list[Tensor], allowed=("int8", "int16")) -> str:
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) != 1 or next(iter(dtypes)) not in allowed:
        int32 = ", int32" if ctx.operator.opcode in ("ADD", "SUB") else ""
        raise ctx.unsupported(f"a {ctx.operator.opcode} of {', '.join(t.dtype for t in tensors)} tensors",
                              supported=f"float32{int32}, or {' or '.join(allowed)} throughout,")
    return next(iter(dtypes))


def _int_activation(ctx: LoweringContext, y: Tensor, activation: int) -> tuple[int, int]:
    q = ctx.per_tensor(y, "output")
    try:
        return activation_range(activation, q.scale, q.zero_point, *INT_RANGES[y.dtype])
    except ValueError as e:
        raise ctx.unsupported(str(e)) from None


@lowers("ADD", "SUB")
def add_sub(ctx: LoweringContext, op) -> None:
    a_t, b_t, y_t = ctx.input(0), ctx.input(1), ctx.output()
    shape = _broadcast_shape(ctx, a_t, b_t, y_t)
    activation = op.option("fused_activation_function", 0)
    builder = ctx.builder
    subtract = op.opcode == "SUB"
    if y_t.dtype in ("float32", "int32"):
        if {a_t.dtype, b_t.dtype} != {y_t.dtype}:
            raise ctx.unsupported(f"an {op.opcode} of {a_t.dtype} and {b_t.dtype} to {y_t.dtype}",
                                  supported="float32, int32, int8 or int16 throughout")
        if y_t.dtype == "float32":
            low, high = float_activation_range(activation)
            body = lambda a, b: float_clamp((arith.SubFOp if subtract else arith.AddFOp)(a, b).result, low, high)
        else:
            body = lambda a, b: (arith.SubIOp if subtract else arith.AddIOp)(a, b).result  # noqa: E731
        ctx.define(0, builder.elementwise([ctx.value(a_t.index), ctx.value(b_t.index)], y_t.dtype, body, shape))
        return
    dtype = _quantized_types(ctx, [a_t, b_t, y_t])
    qa, qb, qy = (ctx.per_tensor(t, name) for t, name in ((a_t, "input"), (b_t, "input"), (y_t, "output")))
    low, high = _int_activation(ctx, y_t, activation)
    width = WIDTHS[dtype]
    if dtype == "int16" and op.option("pot_scale_int16", True) and _all_powers_of_two(qa.scale, qb.scale,
                                                                                           qy.scale):
        _power_of_two_add(ctx, a_t, b_t, y_t, shape, subtract, low, high)
        return
    if dtype == "int16" and not subtract and (qa.zero_point or qb.zero_point or qy.zero_point):
        raise ctx.unsupported("an int16 ADD with a nonzero zero point")
    p = addition_parameters(qa.scale, qb.scale, qy.scale, int16=dtype == "int16")

    def body(a, b):
        fixed = FixedPoint()
        terms = []
        for value, zp, (m, s) in ((a, qa.zero_point, p.first), (b, qb.zero_point, p.second)):
            centred = fixed.sub(fixed.extend(value), zp) if zp else fixed.extend(value)
            shifted = arith.ShLIOp(centred, fixed.constant(p.left_shift)).result
            terms.append(fixed.multiply_by_quantized_multiplier(shifted, m, *split_shift(s)))
        total = fixed.sub(*terms) if subtract else fixed.add(*terms)
        m, s = p.output
        scaled = fixed.multiply_by_quantized_multiplier(total, m, *split_shift(s))
        return fixed.truncate(fixed.clamp(fixed.add(scaled, qy.zero_point), low, high), width)

    ctx.define(0, builder.elementwise([ctx.value(a_t.index), ctx.value(b_t.index)], dtype, body, shape))


def _all_powers_of_two(*scales) -> bool:
    """TFLite's CheckedLog2, in single precision: |log2 s - round(log2 s)| < 1e-3."""
    for s in scales:
        log = float(np.log2(np.float32(s)))
        if abs(log - round(log)) >= 1e-3:
            return False
    return True


def _power_of_two_add(ctx: LoweringContext, a_t, b_t, y_t, shape, subtract: bool, low: int, high: int) -> None:
    """int16 ADD / SUB of power-of-two scales (TFLite's pot_scale_int16 path)."""
    qa, qb, qy = a_t.quantization, b_t.quantization, y_t.quantization
    shifts = [round(float(np.log2(np.float32(q.scale)))) - round(float(np.log2(np.float32(qy.scale))))
              for q in (qa, qb)]
    if any(s > 0 for s in shifts) or all(s != 0 for s in shifts):
        raise ctx.unsupported("an int16 power-of-two ADD whose output scale is not that of an input")

    def body(a, b):
        fixed = FixedPoint()
        x = [fixed.rounding_divide_by_power_of_two(fixed.extend(v), -s) for v, s in ((a, shifts[0]), (b, shifts[1]))]
        total = fixed.sub(*x) if subtract else fixed.clamp(fixed.add(*x), -32768, 32767)
        return fixed.truncate(fixed.clamp(total, low, high), 16)

    ctx.define(0, ctx.builder.elementwise([ctx.value(a_t.index), ctx.value(b_t.index)], "int16", body, shape))


@lowers("MUL")
def mul(ctx: LoweringContext, op) -> None:
    a_t, b_t, y_t = ctx.input(0), ctx.input(1), ctx.output()
    shape = _broadcast_shape(ctx, a_t, b_t, y_t)
    activation = op.option("fused_activation_function", 0)
    builder = ctx.builder
    if y_t.dtype == "float32":
        low, high = float_activation_range(activation)
        ctx.define(0, builder.elementwise([ctx.value(a_t.index), ctx.value(b_t.index)], "float32",
                                          lambda a, b: float_clamp(arith.MulFOp(a, b).result, low, high), shape))
        return
    dtype = _quantized_types(ctx, [a_t, b_t, y_t])
    qa, qb, qy = (ctx.per_tensor(t, name) for t, name in ((a_t, "input"), (b_t, "input"), (y_t, "output")))
    if dtype == "int16" and (qa.zero_point or qb.zero_point or qy.zero_point):
        raise ctx.unsupported("an int16 MUL with a nonzero zero point")
    low, high = _int_activation(ctx, y_t, activation)
    multiplier, shift = multiplication_multiplier(qa.scale, qb.scale, qy.scale)

    def body(a, b):
        fixed = FixedPoint()
        x = fixed.sub(fixed.extend(a), qa.zero_point) if qa.zero_point else fixed.extend(a)
        z = fixed.sub(fixed.extend(b), qb.zero_point) if qb.zero_point else fixed.extend(b)
        scaled = fixed.multiply_by_quantized_multiplier(arith.MulIOp(x, z).result, multiplier, *split_shift(shift))
        return fixed.truncate(fixed.clamp(fixed.add(scaled, qy.zero_point), low, high), WIDTHS[dtype])

    ctx.define(0, builder.elementwise([ctx.value(a_t.index), ctx.value(b_t.index)], dtype, body, shape))


@lowers("MAXIMUM", "MINIMUM")
def maximum_minimum(ctx: LoweringContext, op) -> None:
    a_t, b_t, y_t = ctx.input(0), ctx.input(1), ctx.output()
    shape = _broadcast_shape(ctx, a_t, b_t, y_t)
    if not (a_t.dtype == b_t.dtype == y_t.dtype):
        raise ctx.unsupported(f"a {op.opcode} of {a_t.dtype} and {b_t.dtype}", supported="one type throughout")
    maximum = op.opcode == "MAXIMUM"
    if y_t.dtype == "float32":
        body = lambda a, b: (float_max if maximum else float_min)(a, b)  # noqa: E731
    else:
        body = lambda a, b: (arith.MaxSIOp if maximum else arith.MinSIOp)(a, b).result  # noqa: E731
    ctx.define(0, ctx.builder.elementwise([ctx.value(a_t.index), ctx.value(b_t.index)], y_t.dtype, body, shape))


@lowers("QUANTIZE")
def quantize(ctx: LoweringContext, op) -> None:
    x_t, y_t = ctx.input(0), ctx.output()
    builder = ctx.builder
    if y_t.dtype not in ("int8", "int16", "uint8", "int32"):
        raise ctx.unsupported(f"a QUANTIZE to {y_t.dtype}", supported="to int8, int16, uint8 or int32")
    if y_t.dtype == "int32" and x_t.dtype != "int16":
        raise ctx.unsupported(f"a QUANTIZE of {x_t.dtype} to int32 (TFLite requantizes int16 to int32)")
    qy = ctx.per_tensor(y_t, "output")
    low, high = INT_RANGES[y_t.dtype]
    width = WIDTHS[y_t.dtype]
    narrow = (lambda v: v) if width == 32 else (lambda v: FixedPoint().truncate(v, width))  # noqa: E731
    if x_t.dtype == "float32":
        scale = float(qy.scale)

        def body(x):
            fixed = FixedPoint()
            divided = arith.DivFOp(x, f32_constant(scale)).result
            q = fixed.add(round_half_away_f32(divided), qy.zero_point)
            return narrow(fixed.clamp(q, low, high))
    elif x_t.dtype in ("int8", "int16", "uint8", "int32"):
        if x_t.dtype == "int32" and y_t.dtype not in ("int8", "int16"):
            raise ctx.unsupported(f"a QUANTIZE of int32 to {y_t.dtype} (TFLite requantizes int32 to int8 or int16)")
        qx = ctx.per_tensor(x_t, "input")
        multiplier, shift = requantization_multiplier(qx.scale, qy.scale)
        unsigned = x_t.dtype == "uint8"

        def body(x):
            fixed = FixedPoint()
            wide = arith.ExtUIOp(fixed.i32, x).result if unsigned else fixed.extend(x)
            centred = fixed.sub(wide, qx.zero_point) if qx.zero_point else wide
            scaled = fixed.multiply_by_quantized_multiplier(centred, multiplier, *split_shift(shift))
            return narrow(fixed.clamp(fixed.add(scaled, qy.zero_point), low, high))
    else:
        raise ctx.unsupported(f"a QUANTIZE of {x_t.dtype}", supported="of float32, int8, int16 or uint8")
    ctx.define(0, builder.elementwise([ctx.value(x_t.index)], "int8" if y_t.dtype == "uint8" else y_t.dtype, body))


@lowers("DEQUANTIZE")
def dequantize(ctx: LoweringContext, op) -> None:
    x_t, y_t = ctx.input(0), ctx.output()
    if y_t.dtype != "float32" or x_t.dtype not in ("int8", "int16", "uint8"):
        raise ctx.unsupported(f"a DEQUANTIZE of {x_t.dtype} to {y_t.dtype}",
                              supported="of int8, int16 or uint8 to float32")
    q = ctx.per_tensor(x_t, "input")
    unsigned = x_t.dtype == "uint8"

    def body(x):
        fixed = FixedPoint()
        wide = arith.ExtUIOp(fixed.i32, x).result if unsigned else fixed.extend(x)
        centred = fixed.sub(wide, q.zero_point) if q.zero_point else wide
        return arith.MulFOp(arith.SIToFPOp(ir.F32Type.get(), centred).result, f32_constant(float(q.scale))).result

    ctx.define(0, ctx.builder.elementwise([ctx.value(x_t.index)], "float32", body))


_RELU_BOUNDS = {"RELU": (0.0, math.inf), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0), "RELU_0_TO_1": (0.0, 1.0)}


@lowers(*_RELU_BOUNDS)
def relu(ctx: LoweringContext, op) -> None:
    x_t, y_t = ctx.input(0), ctx.output()
    bound_low, bound_high = _RELU_BOUNDS[op.opcode]
    if y_t.dtype == "float32":
        ctx.define(0, ctx.builder.elementwise([ctx.value(x_t.index)], "float32",
                                              lambda x: float_clamp(x, bound_low, bound_high)))
        return
    dtype = _quantized_types(ctx, [x_t, y_t])
    if dtype == "int16" and op.opcode in ("RELU_N1_TO_1", "RELU_0_TO_1"):
        raise ctx.unsupported(f"an int16 {op.opcode} (TFLite's kernels define it for int8 only)")
    qx, qy = ctx.per_tensor(x_t, "input"), ctx.per_tensor(y_t, "output")
    multiplier, shift = single_precision_ratio_multiplier(qx.scale, qy.scale)
    type_low, type_high = INT_RANGES[dtype]
    low = max(type_low, quantize_value(bound_low, qy.scale, qy.zero_point))
    high = type_high if bound_high == math.inf else min(type_high, quantize_value(bound_high, qy.scale,
                                                                                   qy.zero_point))

    def body(x):
        fixed = FixedPoint()
        centred = fixed.sub(fixed.extend(x), qx.zero_point) if qx.zero_point else fixed.extend(x)
        scaled = fixed.multiply_by_quantized_multiplier(centred, multiplier, *split_shift(shift))
        return fixed.truncate(fixed.clamp(fixed.add(scaled, qy.zero_point), low, high), WIDTHS[dtype])

    ctx.define(0, ctx.builder.elementwise([ctx.value(x_t.index)], dtype, body))


@lowers("LEAKY_RELU")
def leaky_relu(ctx: LoweringContext, op) -> None:
    x_t, y_t = ctx.input(0), ctx.output()
    alpha = float(np.float32(op.option("alpha", 0.2)))
    if y_t.dtype == "float32":
        def body(x):
            scaled = arith.MulFOp(x, f32_constant(alpha)).result
            positive = arith.CmpFOp(arith.CmpFPredicate.OGE, x, f32_constant(0.0)).result
            return arith.SelectOp(positive, x, scaled).result

        ctx.define(0, ctx.builder.elementwise([ctx.value(x_t.index)], "float32", body))
        return
    dtype = _quantized_types(ctx, [x_t, y_t])
    qx, qy = ctx.per_tensor(x_t, "input"), ctx.per_tensor(y_t, "output")
    if dtype == "int16" and (qx.zero_point or qy.zero_point):
        raise ctx.unsupported("an int16 LEAKY_RELU with a nonzero zero point")
    alpha_m, alpha_s = single_precision_ratio_multiplier(np.float32(qx.scale) * np.float32(alpha), qy.scale)
    identity_m, identity_s = single_precision_ratio_multiplier(qx.scale, qy.scale)
    low, high = INT_RANGES[dtype]

    def body(x):
        fixed = FixedPoint()
        centred = fixed.sub(fixed.extend(x), qx.zero_point) if qx.zero_point else fixed.extend(x)
        positive = fixed.multiply_by_quantized_multiplier(centred, identity_m, *split_shift(identity_s))
        negative = fixed.multiply_by_quantized_multiplier(centred, abs(alpha_m), *split_shift(alpha_s))
        if alpha_m < 0:
            negative = fixed.sub(0, negative)
        non_negative = arith.CmpIOp(arith.CmpIPredicate.sge, centred, fixed.constant(0)).result
        chosen = fixed.select(non_negative, positive, negative)
        return fixed.truncate(fixed.clamp(fixed.add(chosen, qy.zero_point), low, high), WIDTHS[dtype])

    ctx.define(0, ctx.builder.elementwise([ctx.value(x_t.index)], dtype, body))


@lowers("PRELU")
def prelu(ctx: LoweringContext, op) -> None:
    """float32 PRELU: x where x >= 0, else alpha * x (alpha broadcast as numpy does). TFLite's quantized
    PRELU is refused, not approximated."""
    x_t, alpha_t, y_t = ctx.input(0), ctx.input(1), ctx.output()
    if {x_t.dtype, alpha_t.dtype, y_t.dtype} != {"float32"}:
        raise ctx.unsupported(f"a PRELU of {x_t.dtype} with {alpha_t.dtype} slopes", supported="float32 throughout")
    shape = _broadcast_shape(ctx, x_t, alpha_t, y_t)

    def body(x, alpha):
        negative = arith.MulFOp(x, alpha).result
        non_negative = arith.CmpFOp(arith.CmpFPredicate.OGE, x, f32_constant(0.0)).result
        return arith.SelectOp(non_negative, x, negative).result

    ctx.define(0, ctx.builder.elementwise([ctx.value(x_t.index), ctx.value(alpha_t.index)], "float32", body, shape))


def lookup_int8(ctx: LoweringContext, x: Value, table: np.ndarray) -> Value:
    """``table[x + 128]`` for each int8 element of ``x``."""
    builder = ctx.builder
    table_value = builder.constant(np.asarray(table, np.int8))

    def body(v):
        index = arith.IndexCastOp(ir.IndexType.get(), arith.ExtSIOp(ir.IntegerType.get_signless(32), v).result).result
        offset = arith.AddIOp(index, arith.ConstantOp(ir.IndexType.get(), ir.IntegerAttr.get(
            ir.IndexType.get(), 128)).result).result
        return tensor.ExtractOp(table_value.value, [offset]).result

    return builder.elementwise([x], "int8", body)


@lowers("LOGISTIC", "TANH")
def logistic_tanh(ctx: LoweringContext, op) -> None:
    x_t, y_t = ctx.input(0), ctx.output()
    function = "logistic" if op.opcode == "LOGISTIC" else "tanh"
    if y_t.dtype == "float32":
        def body(x):
            if function == "tanh":
                return mlir_math.TanhOp(x).result
            clipped = float_clamp(x, -100.0, 100.0)
            e = mlir_math.ExpOp(arith.NegFOp(clipped).result).result
            return arith.DivFOp(f32_constant(1.0), arith.AddFOp(f32_constant(1.0), e).result).result

        ctx.define(0, ctx.builder.elementwise([ctx.value(x_t.index)], "float32", body))
        return
    if not (x_t.dtype == y_t.dtype == "int8"):
        raise ctx.unsupported(f"a {op.opcode} of {x_t.dtype} to {y_t.dtype}", supported="float32 or int8 throughout")
    qx, qy = ctx.per_tensor(x_t, "input"), ctx.per_tensor(y_t, "output")
    if function == "logistic" and float(qy.scale) != 1.0 / 256:
        raise ctx.fail("an int8 LOGISTIC whose output scale is not 1/256 (TFLite requires it)")
    table = int8_lookup_table(function, qx.scale, qx.zero_point, qy.scale, qy.zero_point)
    ctx.define(0, lookup_int8(ctx, ctx.value(x_t.index), table))


@lowers("HARD_SWISH")
def hard_swish(ctx: LoweringContext, op) -> None:
    x_t, y_t = ctx.input(0), ctx.output()
    if y_t.dtype == "float32":
        def body(x):
            relu6 = float_clamp(arith.AddFOp(x, f32_constant(3.0)).result, 0.0, 6.0)
            return arith.DivFOp(arith.MulFOp(x, relu6).result, f32_constant(6.0)).result

        ctx.define(0, ctx.builder.elementwise([ctx.value(x_t.index)], "float32", body))
        return
    if not (x_t.dtype == y_t.dtype == "int8"):
        raise ctx.unsupported(f"a HARD_SWISH of {x_t.dtype} to {y_t.dtype}", supported="float32 or int8 throughout")
    qx, qy = ctx.per_tensor(x_t, "input"), ctx.per_tensor(y_t, "output")
    try:
        p = hard_swish_parameters(qx.scale, qy.scale)
    except ValueError as e:
        raise ctx.unsupported(str(e)) from None
    # One int8 input: the reference arithmetic tabulated for its 256 values.
    table = np.array([hard_swish_reference(q, qx.zero_point, qy.zero_point, p) for q in range(-128, 128)], np.int8)
    ctx.define(0, lookup_int8(ctx, ctx.value(x_t.index), table))


def hard_swish_reference(q: int, zp_in: int, zp_out: int, p) -> int:
    """TFLite's int8 HARD_SWISH of one value (16-bit fixed point throughout)."""
    from npukit.quantization.fixed_point_reference import rdbpot

    def srdhm16(a: int, b: int) -> int:
        if a == b == -32768:
            return 32767
        product = a * b
        total = product + ((1 << 14) if product >= 0 else 1 - (1 << 14))
        quotient = abs(total) >> 15
        return quotient if total >= 0 else -quotient

    def sat16(v: int) -> int:
        return max(-32768, min(32767, v))

    def sdhm16(a: int, b: int) -> int:  # no rounding: truncating division by 2^15
        if a == b == -32768:
            return 32767
        product = a * b
        quotient = abs(product) >> 15
        return quotient if product >= 0 else -quotient

    value = q - zp_in
    high_res = sat16(value * 128)
    pre = srdhm16(high_res, p.output_multiplier)
    reluish = high_res
    if p.reluish_shift > 0:
        reluish = sat16(reluish * (1 << (p.reluish_shift - 1)))
    reluish = srdhm16(reluish, p.reluish_multiplier)
    if p.reluish_shift > 0:
        reluish = sat16(reluish * 2)
    if p.reluish_shift < 0:
        reluish = rdbpot(reluish, -p.reluish_shift)
    reluish = (reluish + (1 << 15)) >> 1
    product = sdhm16(reluish, pre)
    out = rdbpot(product, -p.output_shift)
    return max(-128, min(127, sat16(out + zp_out)))


@lowers("ABS")
def absolute(ctx: LoweringContext, op) -> None:
    x_t, y_t = ctx.input(0), ctx.output()
    if x_t.dtype == y_t.dtype == "float32":
        ctx.define(0, ctx.builder.elementwise([ctx.value(x_t.index)], "float32",
                                              lambda x: mlir_math.AbsFOp(x).result))
        return
    if not (x_t.dtype == y_t.dtype and x_t.dtype in ("int8", "int16")):
        raise ctx.unsupported(f"an ABS of {x_t.dtype} to {y_t.dtype}",
                              supported="float32, int8 or int16 throughout")
    qx, qy = ctx.per_tensor(x_t, "input"), ctx.per_tensor(y_t, "output")
    if x_t.dtype == "int16" and (qx.zero_point or qy.zero_point):
        raise ctx.unsupported("an int16 ABS with a nonzero zero point (TFLite requires zero)")
    # TFLite rescales only when the two single-precision scales differ, by
    # their single-precision ratio.
    rescale = np.float32(qx.scale) != np.float32(qy.scale)
    multiplier, shift = single_precision_ratio_multiplier(qx.scale, qy.scale) if rescale else (0, 0)
    low, high = INT_RANGES[x_t.dtype]

    def body(x):
        fixed = FixedPoint()
        centred = fixed.sub(fixed.extend(x), qx.zero_point) if qx.zero_point else fixed.extend(x)
        magnitude = mlir_math.AbsIOp(centred).result
        if rescale:
            magnitude = fixed.multiply_by_quantized_multiplier(magnitude, multiplier, *split_shift(shift))
        return fixed.truncate(fixed.clamp(fixed.add(magnitude, qy.zero_point), low, high), WIDTHS[x_t.dtype])

    ctx.define(0, ctx.builder.elementwise([ctx.value(x_t.index)], x_t.dtype, body))
