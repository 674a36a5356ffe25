"""The float arithmetic of an ONNX QDQ layer, as the layer kernels' float
output stage reproduces it.

An ONNX QDQ graph means DequantizeLinear -> Conv/MatMul in float ->
QuantizeLinear, and onnxruntime (the oracle for ONNX models) rounds where
that float arithmetic rounds. IREE keeps the contraction in integers and
computes the rest as the f32 epilogue float_epilogue.py matches:

    q = clamp(roundeven(act(float(acc - corr) * s0 [* s1] + b) / s_out) + zp)

TFLite's fixed-point requantization of the same layer rounds differently
wherever a value lands within about 2^-20 of a half step, and a softmax after
the classifier turns one such step into many. So for ONNX layers the kernels
take the epilogue's own constants (``FloatStage``, ``FloatAdd``) and repeat
its binary32 operations in its order. The parameters are checked here by
evaluating the dispatch's epilogue (scalar_expression.evaluate) against
``float_output``/``float_add_output``, the kernels' arithmetic in numpy
binary32, on probe accumulators that include the points where rounding
decides.
"""

from __future__ import annotations

import numpy as np

from npukit.layer_recognition import float_epilogue as ep
from npukit.layer_recognition.epilogue_parameters import EpilogueInputs
from npukit.layer_recognition.integer_parameters import check
from npukit.layer_recognition.layer_spec import FloatAdd, FloatQuantize, FloatStage, NotSupported
from npukit.layer_recognition.scalar_expression import Node

PROBES = 192
_F32 = np.float32


def _f32(value: float) -> float:
    return float(np.float32(value))


def _is_f32_constant(node: Node) -> bool:
    return node.op != "const" or node.type == "f32"


def float_quantize(activation: ep.Activation, output: ep.Quantize) -> FloatQuantize:
    if activation.kind not in ("none", "relu"):
        raise NotSupported(f"a float activation '{activation.kind}'")
    if not -(1 << 20) < output.zero_point < 1 << 20:
        raise NotSupported("an output zero point beyond 2^20")
    upper = None if activation.upper is None else _f32(activation.upper)
    return FloatQuantize(_f32(output.scale), output.zero_point, activation.kind == "relu", upper,
                         max(-128, output.low), min(127, output.high))


def _channel_values(node: Node | None, inputs: EpilogueInputs, channels: int, default: float) -> np.ndarray:
    if node is None:
        return np.full(channels, default, _F32)
    if not _is_f32_constant(node) or (node.op == "arg" and node.type != "f32"):
        raise NotSupported("a float requantization not in binary32")
    values = ep.per_channel(node, inputs.per_channel)
    if values is None:
        raise NotSupported("a float requantization factor that is not a constant")
    values = np.asarray(values)
    if values.dtype != _F32 and not np.array_equal(values.astype(_F32).astype(np.float64), values):
        raise NotSupported("a float requantization factor that is not a binary32 value")
    return np.broadcast_to(values.astype(_F32), (channels,)).copy()


def float_stage(match: ep.RequantizedContraction, inputs: EpilogueInputs, channels: int) -> FloatStage:
    """The float output stage of a matched requantization (unchecked)."""
    acc = match.accumulator
    if len(acc.scales) not in (1, 2):
        raise NotSupported(f"a float requantization with {len(acc.scales)} scale factors")
    scales0 = _channel_values(acc.scales[0], inputs, channels, 1.0)
    scales1 = _channel_values(acc.scales[1] if len(acc.scales) > 1 else None, inputs, channels, 1.0)
    bias = _channel_values(acc.bias, inputs, channels, 0.0)
    return FloatStage(scales0, scales1, bias, float_quantize(match.activation, match.output))


def quantize_output(q: FloatQuantize, v: np.ndarray) -> np.ndarray:
    """The kernels' activation and QuantizeLinear in binary32 (int64 out)."""
    v = np.asarray(v, _F32)
    if q.relu:
        v = np.where(v > 0, v, _F32(0))
    if q.upper is not None:
        v = np.where(v > _F32(q.upper), _F32(q.upper), v).astype(_F32)
    with np.errstate(all="ignore"):
        x = (v / _F32(q.scale)).astype(_F32)
    x = np.clip(x, _F32(-4194304.0), _F32(4194304.0))
    x = (np.round(x).astype(_F32) + _F32(q.zero_point)).astype(_F32)
    return np.clip(x, q.low, q.high).astype(np.int64)


def float_output(stage: FloatStage, acc: np.ndarray) -> np.ndarray:
    """The kernels' float output stage of accumulators ``acc`` [channels, n]
    (the zero-point correction already taken off, wrapping as int32)."""
    wrapped = ((np.asarray(acc, np.int64) + (1 << 31)) % (1 << 32)) - (1 << 31)
    with np.errstate(all="ignore"):
        v = (wrapped.astype(_F32) * stage.scales0[:, None]).astype(_F32)
        v = (v * stage.scales1[:, None]).astype(_F32)
        v = (v + stage.bias[:, None]).astype(_F32)
    return quantize_output(stage.quantize, v)


def float_add_output(add: FloatAdd, conv: np.ndarray, residual: np.ndarray) -> np.ndarray:
    """The kernels' float ADD of int8 values ``conv`` and ``residual``."""
    a = ((np.asarray(conv, np.int64) - add.conv_zp).astype(_F32) * _F32(add.conv_scale)).astype(_F32)
    b = ((np.asarray(residual, np.int64) - add.residual_zp).astype(_F32) * _F32(add.residual_scale)).astype(_F32)
    return quantize_output(add.quantize, (a + b).astype(_F32))


def _probes(stage: FloatStage, correction: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Raw accumulators [channels, PROBES]: spread over int32, small, and next
    to the points where the output steps."""
    channels = len(stage.bias)
    wide = rng.integers(-(1 << 31), 1 << 31, size=(channels, PROBES // 3), dtype=np.int64)
    small = rng.integers(-(1 << 16), 1 << 16, size=(channels, PROBES // 3), dtype=np.int64)
    q = stage.quantize
    real = stage.scales0.astype(np.float64) * stage.scales1.astype(np.float64)
    real = np.where(real == 0, 1.0, real)
    steps = rng.integers(q.low - q.zero_point - 2, q.high - q.zero_point + 3,
                         size=(channels, PROBES - 2 * (PROBES // 3))).astype(np.float64)
    edges = np.floor(((steps + 0.5) * q.scale - stage.bias.astype(np.float64)[:, None]) / real[:, None])
    edges = edges + rng.integers(-1, 2, size=edges.shape) + correction[:, None]
    edges = np.clip(edges, -(1 << 31), (1 << 31) - 1).astype(np.int64)
    return np.concatenate([wide, small, edges], axis=1)


def _correction(match: ep.RequantizedContraction, inputs: EpilogueInputs, channels: int) -> np.ndarray:
    node = match.accumulator.correction
    if node is None:
        return np.zeros(channels, np.int64)
    values = ep.per_channel(node, inputs.per_channel)
    if values is None:
        raise NotSupported("a zero-point correction that is not a constant")
    return np.broadcast_to(np.asarray(values, np.int64), (channels,)).copy()


def _args(inputs: EpilogueInputs, channels: int) -> dict[int, np.ndarray]:
    return {i: np.asarray(v).reshape(-1)[:, None] if np.asarray(v).size == channels else np.asarray(v)
            for i, v in inputs.per_channel.items()}


def checked_float_stage(expression: Node, match: ep.RequantizedContraction, inputs: EpilogueInputs,
                        channels: int) -> FloatStage:
    """The float output stage of ``match``, verified on the whole epilogue."""
    stage = float_stage(match, inputs, channels)
    correction = _correction(match, inputs, channels)
    acc = _probes(stage, correction, np.random.default_rng(0))
    args = _args(inputs, channels)
    args[inputs.contraction_arg] = acc
    check(expression, args, float_output(stage, acc - correction[:, None]), "a float requantization")
    return stage


def checked_float_add(expression: Node, match: ep.ResidualAdd, inputs: EpilogueInputs,
                      channels: int) -> tuple[FloatStage, FloatAdd]:
    """The float output stage and ADD of a residual addition whose residual
    is an int8 tensor, verified on the whole epilogue."""
    if match.residual_requantized is not None or match.residual.source.op != "arg":
        raise NotSupported("a float addition of another layer's int32 accumulators")
    stage = float_stage(match.contraction, inputs, channels)
    scales = (ep.scalar(match.contraction_scale), ep.scalar(match.residual.scales[0]))
    if None in scales or not all(_is_f32_constant(n) for n in (match.contraction_scale, match.residual.scales[0])):
        raise NotSupported("a float addition whose scales are not binary32 constants")
    add = FloatAdd(match.contraction_zero_point, _f32(scales[0]), match.residual.zero_point, _f32(scales[1]),
                   float_quantize(match.activation, match.output))
    correction = _correction(match.contraction, inputs, channels)
    rng = np.random.default_rng(1)
    acc = _probes(stage, correction, rng)
    residual = rng.integers(-128, 128, size=acc.shape, dtype=np.int64)
    args = _args(inputs, channels)
    args[inputs.contraction_arg] = acc
    args[match.residual.source.value] = residual
    conv = float_output(stage, acc - correction[:, None])
    check(expression, args, float_add_output(add, conv, residual), "a float addition")
    return stage, add
