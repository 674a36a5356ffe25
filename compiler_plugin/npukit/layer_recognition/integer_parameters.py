"""A matched integer output stage as a layer's parameters, checked.

The matchers of integer_epilogue say which block arguments and constants
play which role; this module reads their values per channel and then
evaluates the epilogue's own expression on probe values (accumulators over
their whole range and next to each rounding step, every int8 residual) and
compares it with TFLite's arithmetic on the parameters found. A mismatch is
NotSupported: a layer is only handed on when its parameters compute what
the dispatch computes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from npukit.layer_recognition import integer_epilogue as ie
from npukit.layer_recognition.epilogue_parameters import EpilogueInputs, role_sizes
from npukit.layer_recognition.layer_spec import ElementwiseAdd, NotSupported, ResidualAccumulators, TensorLayout, \
    merged_channels
from npukit.layer_recognition.scalar_expression import Node, NotEvaluable, evaluate
from npukit.quantization.fixed_point_reference import multiply_by_quantized_multiplier_array, \
    scale_rounded_once_array

PROBES = 192
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


@dataclass
class OutputStage:
    """Per channel: int32 bias, (multiplier, shift) or the double scale of a
    fully connected layer; the zero point and clamp."""

    bias: np.ndarray
    multipliers: list[tuple[int, int]] | None
    scales: np.ndarray | None
    zero_point: int
    low: int
    high: int


def _values(node: Node | None, inputs: EpilogueInputs, channels: int, dtype, default: int = 0) -> np.ndarray:
    if node is None:
        return np.full(channels, default, dtype)
    if node.op == "const":
        return np.full(channels, node.value, dtype)
    if node.op == "arg" and node.value in inputs.per_channel:
        values = np.asarray(inputs.per_channel[node.value]).reshape(-1)
        if values.size not in (1, channels):
            raise NotSupported("a per-channel parameter of another length than the channels")
        return np.broadcast_to(values, (channels,)).astype(dtype)
    raise NotSupported("a requantization parameter that is not a per-channel constant")


def output_stage(match: ie.Requantization, inputs: EpilogueInputs, channels: int) -> OutputStage:
    bias = _values(match.bias, inputs, channels, np.int64)
    if np.any(bias < -(1 << 31)) or np.any(bias >= 1 << 31):
        raise NotSupported("a bias outside int32")
    if match.scale_parts is not None:
        high, low, shift = (_values(n, inputs, channels, np.int64) for n in match.scale_parts)
        significand = high * (1 << 32) + (low & 0xFFFFFFFF)
        scales = np.array([math.ldexp(float(m), -int(e)) for m, e in zip(significand, shift)], np.float64)
        return OutputStage(bias.astype(np.int32), None, scales, match.zero_point, match.low, match.high)
    m = match.multiplier
    multiplier = _values(m.multiplier, inputs, channels, np.int64)
    shift = _values(m.left, inputs, channels, np.int64) - _values(m.right, inputs, channels, np.int64)
    pairs = [(int(a), int(b)) for a, b in zip(multiplier, shift)]
    return OutputStage(bias.astype(np.int32), pairs, None, match.zero_point, match.low, match.high)


def reference_output(stage: OutputStage, acc: np.ndarray) -> np.ndarray:
    """TFLite's arithmetic of ``stage`` on accumulators ``acc`` [channels, n]."""
    total = acc + stage.bias.astype(np.int64)[:, None]
    total = (total + (1 << 31)) % (1 << 32) - (1 << 31)  # int32 arithmetic wraps
    if stage.scales is not None:
        scaled = scale_rounded_once_array(total, stage.scales[:, None])
    else:
        multipliers = np.array([m for m, _ in stage.multipliers], np.int64)[:, None]
        shifts = np.array([s for _, s in stage.multipliers], np.int64)[:, None]
        scaled = multiply_by_quantized_multiplier_array(total, multipliers, shifts)
    return np.clip(scaled + stage.zero_point, stage.low, stage.high)


def probe_accumulators(stage: OutputStage, channels: int, rng: np.random.Generator) -> np.ndarray:
    """Accumulators [channels, n]: spread over int32, and next to the points
    where the output steps (where rounding decides)."""
    wide = rng.integers(-(1 << 31), 1 << 31, size=(channels, PROBES // 3), dtype=np.int64)
    small = rng.integers(-(1 << 16), 1 << 16, size=(channels, PROBES // 3), dtype=np.int64)
    if stage.scales is not None:
        real = stage.scales.astype(np.float64)
    else:
        real = np.array([m * 2.0 ** (s - 31) for m, s in stage.multipliers], np.float64)
    real = np.where(real == 0, 1.0, real)
    steps = rng.integers(stage.low - stage.zero_point - 2, stage.high - stage.zero_point + 3,
                         size=(channels, PROBES - 2 * (PROBES // 3))).astype(np.float64)
    edges = np.floor((steps + 0.5) / real[:, None]) - stage.bias.astype(np.int64)[:, None]
    edges = edges + rng.integers(-1, 2, size=edges.shape)
    edges = np.clip(edges, -(1 << 31), (1 << 31) - 1).astype(np.int64)
    return np.concatenate([wide, small, edges], axis=1)


def check(expression: Node, args: dict[int, np.ndarray], want: np.ndarray, what: str) -> None:
    """NotSupported unless the expression gives ``want`` on ``args``; ``what``
    names the checked part with its article ("an addition")."""
    try:
        got = evaluate(expression, args)
    except NotEvaluable as e:
        raise NotSupported(f"{what} with an operation the recogniser cannot check ({e})") from None
    if not np.array_equal(np.broadcast_to(got, want.shape), want):
        raise NotSupported(f"{what} whose arithmetic differs from the parameters read from it")


def checked_output_stage(expression: Node, match: ie.Requantization, inputs: EpilogueInputs,
                         channels: int) -> OutputStage:
    """The output stage of ``match``, verified on the whole epilogue ``expression``."""
    stage = output_stage(match, inputs, channels)
    rng = np.random.default_rng(0)
    acc = probe_accumulators(stage, channels, rng)
    args = {i: np.asarray(v).reshape(-1)[:, None] if np.asarray(v).size == channels else np.asarray(v)
            for i, v in inputs.per_channel.items()}
    args[match.accumulator.value] = acc
    check(expression, args, reference_output(stage, acc), "an output stage")
    return stage


def _pair(multiplier: ie.Multiplier) -> tuple[int, int]:
    if multiplier.multiplier.op != "const" or (multiplier.right is not None and multiplier.right.op != "const"):
        raise NotSupported("an addition whose multipliers are not constants")
    right = int(multiplier.right.value) if multiplier.right is not None else 0
    return int(multiplier.multiplier.value), -right


def addition(expression: Node, match: ie.Addition, inputs: EpilogueInputs, contraction_arg: int, like: TensorLayout,
             channels: int) -> tuple[OutputStage, ElementwiseAdd]:
    """The layer's own output stage and TFLite's ADD with the residual, checked."""
    operands = [match.first, match.second]
    own = [o for o in operands if o.requantized is not None and o.requantized.accumulator.op == "arg"
           and o.requantized.accumulator.value == contraction_arg]
    if len(own) != 1 or match.left_shift != 20:
        raise NotSupported("an int8 addition that does not add this layer's output to another tensor")
    layer = own[0]
    other = operands[1] if operands[0] is layer else operands[0]
    stage = output_stage(layer.requantized, inputs, channels)
    if stage.zero_point != layer.zero_point:
        raise NotSupported("the addition dequantizes the layer's output with another zero point")
    accumulators = None
    if other.tensor is not None:
        residual_arg, dtype = other.tensor.value, "i8"
    else:
        fused = other.requantized
        residual_arg, dtype = fused.accumulator.value, "i32"
        fused_stage = output_stage(fused, inputs, channels)
        if fused_stage.multipliers is None or fused_stage.zero_point != other.zero_point:
            raise NotSupported("the residual layer's output stage is not a requantization of its accumulators")
        accumulators = ResidualAccumulators(fused_stage.bias, fused_stage.multipliers, fused_stage.low,
                                            fused_stage.high)
    if residual_arg not in inputs.tensors:
        raise NotSupported("the residual operand is not a tensor in memory")
    residual = merged_channels(TensorLayout(inputs.tensors[residual_arg], inputs.tensor_roles[residual_arg]))
    if residual.tensor.dtype != dtype or not residual.tensor.is_whole or role_sizes(residual) != role_sizes(like):
        raise NotSupported(f"the residual operand is not a whole {dtype} tensor of the output's shape")
    add = ElementwiseAdd(residual, other.zero_point, layer.zero_point, _pair(layer.multiplier),
                         _pair(other.multiplier), _pair(match.output), match.zero_point, match.low, match.high,
                         accumulators)
    if match.nonnegative:
        _check_sum_not_negative(add, stage)
    _check_addition(expression, inputs, contraction_arg, residual_arg, stage, add, channels)
    return stage, add


def _check_sum_not_negative(add: ElementwiseAdd, stage: OutputStage) -> None:
    """NotSupported unless the ADD's value before its clamp, zp + MBQM(a' +
    b'), is never negative (where IREE wrote the clamp's minimum unsigned
    with a negative lower bound, it is that clamp only then). With
    multipliers that are not negative every step is monotonic in both
    operands, so the smallest value is that of the smallest layer output
    and the smallest residual."""
    pairs = (add.input_multiplier, add.residual_multiplier, add.output_multiplier)
    if any(m < 0 for m, _ in pairs):
        raise NotSupported("an addition with a negative multiplier under an unsigned clamp")
    residual_low = -128 if add.accumulators is None else add.accumulators.act_min
    low = np.array([[stage.low]], np.int64)
    unclamped = replace(add, act_min=INT64_MIN, act_max=INT64_MAX)
    smallest = int(_tflite_add(low, np.array([[residual_low]], np.int64), unclamped)[0, 0])
    if smallest < 0:
        raise NotSupported("an addition clamped with an unsigned minimum whose sum may be negative")


def _check_addition(expression: Node, inputs: EpilogueInputs, contraction_arg: int, residual_arg: int,
                    stage: OutputStage, add: ElementwiseAdd, channels: int) -> None:
    rng = np.random.default_rng(1)
    acc = probe_accumulators(stage, channels, rng)
    conv = reference_output(stage, acc)
    if add.accumulators is None:
        residual = rng.integers(-128, 128, size=acc.shape, dtype=np.int64)
        residual_int8 = residual
    else:
        fused = add.accumulators
        fused_stage = OutputStage(fused.bias, fused.multipliers, None, add.residual_zp, fused.act_min, fused.act_max)
        residual = probe_accumulators(fused_stage, channels, rng)
        residual_int8 = reference_output(fused_stage, residual)
    want = _tflite_add(conv, residual_int8, add)
    args = {i: np.asarray(v).reshape(-1)[:, None] if np.asarray(v).size == channels else np.asarray(v)
            for i, v in inputs.per_channel.items()}
    args[contraction_arg] = acc
    args[residual_arg] = residual
    check(expression, args, want, "an addition")


def _tflite_add(a: np.ndarray, b: np.ndarray, add: ElementwiseAdd) -> np.ndarray:
    terms = []
    for value, zp, (m, s) in ((a, add.conv_zp, add.input_multiplier), (b, add.residual_zp, add.residual_multiplier)):
        terms.append(multiply_by_quantized_multiplier_array((value - zp) << 20, m, s))
    m, s = add.output_multiplier
    total = multiply_by_quantized_multiplier_array(terms[0] + terms[1], m, s)
    return np.clip(total + add.output_zp, add.act_min, add.act_max)
