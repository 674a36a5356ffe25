"""A matched epilogue's integer parameters: the operands of the epilogue
generic by role, and the biases, zero points and fixed-point multipliers of
TFLite's integer arithmetic derived from them."""

from __future__ import annotations

import numpy as np
from iree.compiler import ir

from npukit.layer_recognition import float_epilogue as ep
from npukit.layer_recognition.contraction_geometry import map_results
from npukit.layer_recognition.dispatch_ir import DispatchBody, SystemTensor
from npukit.layer_recognition.layer_spec import ElementwiseAdd, NotSupported, ResidualAccumulators, TensorLayout
from npukit.quantization.requantization import accumulator_scale, addition_multipliers, as_f32, integer_bias, \
    quantize_multiplier


class EpilogueInputs:
    """The epilogue generic's inputs, by block-argument index: the
    contraction's result (if it is one), per-channel constants and whole
    tensors loaded from memory."""

    def __init__(self, generic: ir.Operation, contraction: ir.Operation | None, body: DispatchBody, constant_of,
                 channel_position: int, rank: int) -> None:
        self.contraction_arg = None
        self.per_channel: dict[int, np.ndarray] = {}
        self.tensors: dict[int, SystemTensor] = {}
        maps = [map_results(m) for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
        inputs = list(generic.operands)[:-1]
        for i, (value, m) in enumerate(zip(inputs, maps)):
            if contraction is not None and value == contraction.results[0]:
                self.contraction_arg = i
                continue
            dims = [r[0][0] for r in m]
            if dims == [channel_position]:
                data = constant_of(value)
                if data is None:
                    raise NotSupported("a per-channel epilogue operand that is not a constant")
                self.per_channel[i] = np.asarray(data).reshape(-1)
            elif dims == list(range(rank)) and value in body.loads:
                self.tensors[i] = body.loads[value]
            else:
                raise NotSupported("an epilogue operand the NPU cannot place")


def _factor(node: ep.Node, inputs: EpilogueInputs, channels: int) -> np.ndarray:
    values = ep.per_channel(node, inputs.per_channel)
    if values is None:
        raise NotSupported("a requantization scale that is not a constant")
    values = np.asarray(values, np.float64)
    return np.broadcast_to(values, (channels,)).astype(np.float64)


def _scale_and_bias(acc: ep.Accumulator, inputs: EpilogueInputs, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """The accumulators' real scale per channel and the integer bias (int64)."""
    scale = np.ones(channels) * accumulator_scale(_factor(f, inputs, channels) for f in acc.scales)
    bias = np.zeros(channels, np.int64)
    if acc.bias is not None:
        values = ep.per_channel(acc.bias, inputs.per_channel)
        if values is None:
            raise NotSupported("a bias that is not a constant")
        try:
            bias = integer_bias(np.broadcast_to(np.asarray(values, np.float64), (channels,)), scale)
        except ValueError as e:
            raise NotSupported(str(e)) from None
    return scale, np.asarray(bias, np.int64)


def _correction(acc: ep.Accumulator, inputs: EpilogueInputs, channels: int) -> np.ndarray | None:
    """The constant subtracted from the accumulators (an input zero point
    times the weight sums), int64 per channel, or None."""
    if acc.correction is None:
        return None
    correction = ep.per_channel(acc.correction, inputs.per_channel)
    if correction is None:
        raise NotSupported("a zero-point correction that is not a constant")
    return np.broadcast_to(np.asarray(correction, np.int64), (channels,))


def _multipliers(scale: np.ndarray, output: ep.Quantize) -> list[tuple[int, int]]:
    out_scale = as_f32(output.scale)
    return [quantize_multiplier(s / out_scale) for s in scale]


def requantization(match: ep.RequantizedContraction, inputs: EpilogueInputs, weights: np.ndarray, kind: str,
                    channels: int) -> tuple[np.ndarray, list[tuple[int, int]], int]:
    """(int32 biases, multipliers, input zero point) of a matched epilogue."""
    acc = match.accumulator
    if not ep.accumulates(match, inputs.contraction_arg):
        raise NotSupported("the epilogue does not requantize the contraction's accumulator")
    scale, bias = _scale_and_bias(acc, inputs, channels)
    sums = weights.reshape(channels, -1).astype(np.int64).sum(axis=1) if kind != "depthwise" else \
        weights.reshape(-1, channels).astype(np.int64).sum(axis=0)
    ifm_zp = 0
    correction = _correction(acc, inputs, channels)
    if correction is not None:
        nonzero = np.flatnonzero(sums)
        if nonzero.size:
            ifm_zp = int(correction[nonzero[0]] // sums[nonzero[0]])
        if not np.array_equal(correction, ifm_zp * sums) or not -128 <= ifm_zp <= 127:
            raise NotSupported("the accumulator correction is not an input zero point times the weight sums")
    return bias.astype(np.int32), _multipliers(scale, match.output), ifm_zp


def residual_accumulators(match: ep.RequantizedContraction, inputs: EpilogueInputs,
                           channels: int) -> ResidualAccumulators:
    """Another layer's output stage, fused into this dispatch: its bias with
    its zero-point correction folded in (TFLite's accumulator is the
    corrected sum plus the bias), multipliers and activation range."""
    scale, bias = _scale_and_bias(match.accumulator, inputs, channels)
    correction = _correction(match.accumulator, inputs, channels)
    if correction is not None:
        bias = bias - correction
    if (np.abs(bias) >= 2**31).any():
        raise NotSupported("the residual layer's bias and zero-point correction exceed int32")
    low, high = ep.activation_range(match.activation, match.output)
    return ResidualAccumulators(bias.astype(np.int32), _multipliers(scale, match.output), low, high)


def add_parameters(match: ep.ResidualAdd, inputs: EpilogueInputs, like: TensorLayout,
                   channels: int) -> ElementwiseAdd:
    """TFLite's ADD of a matched residual addition; the residual must be a
    whole tensor laid out as ``like`` (the output, or the tensor it is
    added to)."""
    residual_arg = (match.residual_requantized.accumulator.accumulator.value if match.residual_requantized
                    else match.residual.source.value)
    if residual_arg not in inputs.tensors:
        raise NotSupported("the residual operand is not a tensor in memory")
    residual = inputs.tensors[residual_arg]
    dtype = "i32" if match.residual_requantized else "i8"
    if residual.dtype != dtype or not residual.is_whole or residual.shape != like.tensor.sizes:
        raise NotSupported(f"the residual operand is not a whole {dtype} tensor of the output's shape")
    s1 = ep.scalar(match.contraction_scale)
    s2 = ep.scalar(match.residual.scales[0])
    if s1 is None or s2 is None or as_f32(s1) != as_f32(match.contraction.output.scale):
        raise NotSupported("the addition's scales are not constants of the layers it adds")
    if match.contraction_zero_point != match.contraction.output.zero_point:
        raise NotSupported("the addition dequantizes with another zero point than the layer's")
    accumulators = None
    if match.residual_requantized is not None:
        fused = match.residual_requantized
        if as_f32(s2) != as_f32(fused.output.scale) or match.residual.zero_point != fused.output.zero_point:
            raise NotSupported("the addition dequantizes the residual layer's output with another scale or zero "
                               "point than it was quantized with")
        accumulators = residual_accumulators(fused, inputs, channels)
    low, high = ep.activation_range(match.activation, match.output)
    return ElementwiseAdd(
        TensorLayout(residual, like.roles), match.residual.zero_point, match.contraction_zero_point,
        *addition_multipliers(s1, s2, match.output.scale), match.output.zero_point, low, high, accumulators)
