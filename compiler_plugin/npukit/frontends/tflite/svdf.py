"""SVDF: a fully connected layer factored into a feature and a time filter,
with a memory of the last ``M`` feature outputs per filter.

Inputs: 0 the input [B, I]; 1 the feature weights [F, I]; 2 the time
weights [F, M]; 3 the bias [U] (optional); 4 the state [B, F * M] (a
variable tensor, each filter's M values oldest first). ``rank`` filters
make one unit (F = U * rank). Per call::

    state = state shifted left by one in each filter's memory
    state[b, f, M - 1] = feature(b, f)        (W_feature . x)
    y[b, u] = sum over the unit's filters r and memory m of W_time * state, + bias

Integer forms (int8 input and feature weights, int32 bias, int8 output):

- int16 time weights and state: TFLite's kernel (EvalIntegerSVDF). The new
  state value is ``sat16(MBQM(W_feature . (x - zp_in), M1))``; the state's
  zero point is not used (the kernel takes it as 0). Multipliers in double
  precision. The kernel requires a fused RELU but does not apply it.
- int8 time weights and state: TFLite's kernel reads these as int16 and
  fails, so the form follows TFLite Micro (EvalInt8SvdfReference, as the
  ``tflite-micro`` package builds it): the new value is ``sat8(MBQM(...))``
  plus the state's zero point, wrapped to int8 (clamped first, then offset),
  and the time product uses ``state - zp_state``. Multipliers in single
  precision. No activation is applied.

Both end with ``y = sat8(MBQM(acc, M2) + zp_out)``. The float form applies
the fused activation.
"""

from __future__ import annotations

import math

import numpy as np

from npukit.frontends.tflite import epilogues
from npukit.frontends.tflite.contractions import accumulate
from npukit.frontends.tflite.flatbuffer_reader import Tensor
from npukit.frontends.tflite.lowering import LoweringContext
from npukit.frontends.tflite.mlir_builder import PARALLEL, REDUCTION, Value
from npukit.frontends.tflite.variable_state import load_state, state_tensor, store_state
from npukit.quantization.fixed_point import FixedPoint, split_shift
from npukit.quantization.lstm_parameters import folded_bias
from npukit.quantization.tflite_prepare import ACTIVATION_NAMES, ACTIVATION_RELU, float_activation_range, \
    svdf_multipliers

# TFLite Micro's check that the bias is quantized as state times time weights.
BIAS_SCALE_TOLERANCE = 1e-5


def lower_svdf(ctx: LoweringContext, op) -> Value:
    x_t, wf_t, wt_t, bias_t, y_t = ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.output()
    if x_t is None or wf_t is None or wt_t is None:
        raise ctx.fail("the input, feature weights and time weights are required")
    rank = int(op.option("rank", 0))
    if len(x_t.shape) != 2 or len(wf_t.shape) != 2 or len(wt_t.shape) != 2:
        raise ctx.fail("the input, feature weights and time weights must be of rank 2")
    batch, n_input = x_t.shape
    filters, memory = wt_t.shape
    if wf_t.shape != (filters, n_input):
        raise ctx.fail(f"feature weights of shape {list(wf_t.shape)} for {filters} filters of {n_input} inputs")
    if rank <= 0 or filters % rank:
        raise ctx.fail(f"{filters} filters do not make units of rank {rank}")
    units = filters // rank
    if bias_t is not None and bias_t.shape != (units,):
        raise ctx.fail(f"a bias of shape {list(bias_t.shape)} for {units} units")
    if y_t.shape != (batch, units):
        raise ctx.fail(f"an output of shape {list(y_t.shape)}, not [{batch}, {units}]")
    state_t = state_tensor(ctx, 4, "activation state")
    if state_t.shape != (batch, filters * memory):
        raise ctx.fail(f"an activation state of shape {list(state_t.shape)}, not [{batch}, {filters * memory}]")
    for t, what in ((wf_t, "feature weights"), (wt_t, "time weights")):
        if t.data is None:
            raise ctx.unsupported(f"{what} that are not constants")
    if bias_t is not None and bias_t.data is None:
        raise ctx.unsupported("a bias that is not a constant")
    activation = int(op.option("fused_activation_function", 0))
    if x_t.dtype == "float32":
        if {wf_t.dtype, wt_t.dtype, state_t.dtype, y_t.dtype} != {"float32"} or \
                (bias_t is not None and bias_t.dtype != "float32"):
            raise ctx.unsupported(f"an SVDF of float32 input with {wf_t.dtype} feature weights (float32 throughout, "
                                  "or int8 input, are)")
        return _float_svdf(ctx, x_t, wf_t, wt_t, bias_t, state_t, rank, activation)
    if x_t.dtype != "int8" or wf_t.dtype != "int8" or y_t.dtype != "int8" or \
            (bias_t is not None and bias_t.dtype != "int32"):
        raise ctx.unsupported(f"an SVDF of {x_t.dtype} input, {wf_t.dtype} feature weights and {y_t.dtype} output "
                              "(int8, int8, int8 with an int32 bias, or float32, are)")
    if (wt_t.dtype, state_t.dtype) not in (("int16", "int16"), ("int8", "int8")):
        raise ctx.unsupported(f"an integer SVDF with {wt_t.dtype} time weights and a {state_t.dtype} state (int16 "
                              "and int16, or int8 and int8, are)")
    micro = wt_t.dtype == "int8"
    if not micro and activation != ACTIVATION_RELU:
        raise ctx.unsupported(f"an integer SVDF with the fused activation "
                              f"{ACTIVATION_NAMES.get(activation, activation)} (TFLite's kernel requires RELU)")
    return _integer_svdf(ctx, x_t, wf_t, wt_t, bias_t, state_t, y_t, rank, micro)


def _scale(ctx: LoweringContext, t: Tensor, what: str):
    return ctx.per_tensor(t, what).scale


def _shifted_state(ctx: LoweringContext, state: Value, newest: Value, filters: int, memory: int) -> Value:
    """Each filter's memory moved one place towards the oldest, ``newest`` [B, F] last."""
    builder = ctx.builder
    batch = state.shape[0]
    column = builder.reshape(newest, (batch, filters, 1))
    if memory == 1:
        return builder.reshape(column, (batch, filters))
    kept = builder.slice(builder.reshape(state, (batch, filters, memory)), [0, 0, 1], [batch, filters, memory - 1])
    return builder.reshape(builder.concatenate([kept, column], 2), (batch, filters * memory))


def _time_product(ctx: LoweringContext, state: Value, time_weights: np.ndarray, rank: int, kind: str) -> Value:
    """sum over each unit's filters r and memory m of W_time[u * rank + r, m] * state[b, u * rank + r, m]."""
    builder = ctx.builder
    batch = state.shape[0]
    filters, memory = time_weights.shape
    units = filters // rank
    s = builder.reshape(state, (batch, units, rank, memory))
    w = builder.constant(time_weights.reshape(units, rank, memory))
    return accumulate(ctx, s, w, (batch, units), [PARALLEL, PARALLEL, REDUCTION, REDUCTION], [0, 1, 2, 3], [1, 2, 3],
                      [0, 1], kind)


def _integer_svdf(ctx: LoweringContext, x_t: Tensor, wf_t: Tensor, wt_t: Tensor, bias_t: Tensor | None,
                  state_t: Tensor, y_t: Tensor, rank: int, micro: bool) -> Value:
    builder = ctx.builder
    qx, qs, qy = ctx.per_tensor(x_t, "input"), ctx.per_tensor(state_t, "activation state"), \
        ctx.per_tensor(y_t, "output")
    wt_scale = _scale(ctx, wt_t, "time weights")
    if micro and bias_t is not None:
        bias_scale = _scale(ctx, bias_t, "bias")
        if abs(float(bias_scale) - float(np.float32(qs.scale) * np.float32(wt_scale))) >= BIAS_SCALE_TOLERANCE:
            raise ctx.unsupported("an int8 SVDF whose bias scale is not the state's times the time weights' "
                                  "(TFLite Micro requires it)")
    first, second = svdf_multipliers(qx.scale, _scale(ctx, wf_t, "feature weights"), wt_scale, qs.scale, qy.scale,
                                     single_precision=micro)
    filters, memory = wt_t.shape
    batch = x_t.shape[0]
    state_zp = qs.zero_point if micro else 0
    feature = accumulate(ctx, ctx.value(x_t.index), builder.constant(wf_t.data), (batch, filters),
                         [PARALLEL, PARALLEL, REDUCTION], [0, 2], [1, 2], [0, 1], "int8")
    feature_bias = folded_bias(None, -qx.zero_point, wf_t.data)
    m1, shift1 = first
    left, right = split_shift(shift1)
    width = 8 if micro else 16
    low, high = -(1 << (width - 1)), (1 << (width - 1)) - 1

    def newest(acc, b):
        fixed = FixedPoint()
        value = fixed.clamp(fixed.multiply_by_quantized_multiplier(fixed.add(acc, b), m1, left, right), low, high)
        if state_zp:
            value = fixed.add(value, state_zp)  # after the clamp: wraps when narrowed, as TFLite Micro's build does
        return fixed.truncate(value, width)

    column = builder.elementwise([feature, builder.constant(feature_bias)], state_t.dtype, newest)
    state = _shifted_state(ctx, load_state(ctx, state_t), column, filters, memory)
    store_state(ctx, state_t, state)
    acc = _time_product(ctx, state, wt_t.data, rank, "int8")
    units = filters // rank
    # sum W_time * (state - zp) = sum W_time * state - zp * sum W_time, folded into the bias.
    time_sums = wt_t.data.astype(np.int64).reshape(units, -1)
    bias = folded_bias(bias_t.data if bias_t is not None else None, -state_zp, time_sums)
    return epilogues.requantize_int32(ctx, acc, 1, bias, [second] * units, qy.zero_point, -128, 127, "int8")


def _float_svdf(ctx: LoweringContext, x_t: Tensor, wf_t: Tensor, wt_t: Tensor, bias_t: Tensor | None,
                state_t: Tensor, rank: int, activation: int) -> Value:
    builder = ctx.builder
    try:
        low, high = float_activation_range(activation)
    except ValueError as e:
        raise ctx.unsupported(f"a float SVDF with {e}") from None
    filters, memory = wt_t.shape
    batch = x_t.shape[0]
    feature = accumulate(ctx, ctx.value(x_t.index), builder.constant(wf_t.data), (batch, filters),
                         [PARALLEL, PARALLEL, REDUCTION], [0, 2], [1, 2], [0, 1], "float32")
    state = _shifted_state(ctx, load_state(ctx, state_t), feature, filters, memory)
    store_state(ctx, state_t, state)
    acc = _time_product(ctx, state, wt_t.data, rank, "float32")
    bias = bias_t.data if bias_t is not None else None
    if bias is None and low == -math.inf and high == math.inf:
        return acc
    return epilogues.float_output(ctx, acc, 1, bias, low, high)
