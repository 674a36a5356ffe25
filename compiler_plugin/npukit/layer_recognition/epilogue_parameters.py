"""A matched epilogue's integer parameters: the operands of the epilogue
generic by role, and the biases, zero points and fixed-point multipliers of
TFLite's integer arithmetic derived from them."""

from __future__ import annotations

import numpy as np
from iree.compiler import ir

from npukit.layer_recognition import float_epilogue as ep
from npukit.layer_recognition.scalar_expression import Node
from npukit.layer_recognition.contraction_geometry import map_results
from npukit.layer_recognition.dispatch_ir import DispatchBody, SystemTensor
from npukit.layer_recognition.layer_spec import ElementwiseAdd, NotSupported, ResidualAccumulators, TensorLayout, \
    merged_channels
from npukit.quantization.requantization import accumulator_scale, addition_multipliers, as_f32, integer_bias, \
    quantize_multiplier


class EpilogueInputs:
    """The epilogue generic's inputs, by block-argument index: the
    contraction's result (if it is one), per-channel constants and whole
    tensors loaded from memory, with the role (C, H, W) of each dimension.

    The roles follow the indexing maps: ``roles`` names the dimensions of the
    contraction's result (or, without a contraction, the generic's loops);
    the contraction result's map carries them to the loops, and each other
    operand's map and the output's map carry them on, so an epilogue that
    also transposes (stores HWC what the contraction computed CHW) is read
    as it is."""

    def __init__(self, generic: ir.Operation, contraction: ir.Operation | None, body: DispatchBody, constant_of,
                 roles: tuple[str | None, ...]) -> None:
        self.contraction_arg = None
        self.per_channel: dict[int, np.ndarray] = {}
        self.tensors: dict[int, SystemTensor] = {}
        self.tensor_roles: dict[int, tuple[str | None, ...]] = {}
        maps = [map_results(m) for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
        loops = len(ir.ArrayAttr(generic.attributes["iterator_types"]))
        inputs = list(generic.operands)[:-1]
        dims_of = [_plain_dims(m) for m in maps]
        loop_roles: list[str | None] = list(roles) if contraction is None else [None] * loops
        if contraction is not None:
            for i, value in enumerate(inputs):
                if value == contraction.results[0]:
                    self.contraction_arg = i
            if self.contraction_arg is None:
                raise NotSupported("the epilogue does not read the contraction's result")
            dims = dims_of[self.contraction_arg]
            if dims is None or sorted(dims) != list(range(loops)) or len(dims) != len(roles):
                raise NotSupported("the epilogue reads the accumulators other than element by element")
            for dim, role in zip(dims, roles):
                loop_roles[dim] = role
        if len(loop_roles) != loops:
            raise NotSupported("an epilogue whose loops are not the layer's dimensions")
        self.loop_roles = tuple(loop_roles)
        channel = self.loop_roles.index("C") if "C" in self.loop_roles else None
        multiplier = self.loop_roles.index("M") if "M" in self.loop_roles else None
        for i, (value, dims) in enumerate(zip(inputs, dims_of)):
            if i == self.contraction_arg:
                continue
            per_channel = _per_channel_order(dims, channel, multiplier)
            if per_channel is not None:
                data = constant_of(value)
                if data is None:
                    raise NotSupported("a per-channel epilogue operand that is not a constant")
                self.per_channel[i] = per_channel(np.asarray(data), generic, multiplier)
            elif dims is not None and sorted(dims) == list(range(loops)) and value in body.loads:
                self.tensors[i] = body.loads[value]
                self.tensor_roles[i] = tuple(self.loop_roles[d] for d in dims)
            else:
                raise NotSupported("an epilogue operand that is neither a per-channel constant nor a tensor read "
                                   "element by element (a broadcast or computed operand)")
        out_dims = dims_of[len(inputs)] if len(dims_of) > len(inputs) else None
        # None: the generic writes other than element by element (a reduction).
        self.output_roles = tuple(self.loop_roles[d] for d in out_dims) \
            if out_dims is not None and sorted(out_dims) == list(range(loops)) else None


def _per_channel_order(dims: list[int] | None, channel: int | None, multiplier: int | None):
    """For an operand indexed by the channel loops only, the function giving
    its values per output channel (c, or c * M + m with a channel
    multiplier); None for any other operand."""
    if dims is None or channel is None:
        return None
    if dims == [channel]:
        if multiplier is None:
            return lambda data, _generic, _m: data.reshape(-1)
        return lambda data, generic, m: np.repeat(data.reshape(-1), _loop_size(generic, m))
    if multiplier is None:
        return None
    if dims == [channel, multiplier]:
        return lambda data, _generic, _m: data.reshape(-1)
    if dims == [multiplier, channel]:
        return lambda data, _generic, _m: np.ascontiguousarray(data.reshape(data.shape[0], -1).T).reshape(-1)
    if dims == [multiplier]:
        return lambda data, generic, _m: np.tile(data.reshape(-1), _loop_size(generic, channel))
    return None


def _loop_size(generic: ir.Operation, loop: int) -> int:
    """The trip count of a loop of ``generic``, from an operand it indexes plainly."""
    for value, results in zip(generic.operands, (map_results(m) for m in
                                                 ir.ArrayAttr(generic.attributes["indexing_maps"]))):
        for d, r in enumerate(results):
            if len(r) == 1 and r[0] == (loop, 1):
                return ir.ShapedType(value.type).shape[d]
    raise NotSupported("a loop no operand indexes")


def _plain_dims(results: list[list[tuple[int, int]]]) -> list[int] | None:
    """The loop dimension of each result of a map whose results are plain
    dimensions, else None."""
    if any(len(r) != 1 or r[0][1] != 1 for r in results):
        return None
    return [r[0][0] for r in results]


def role_sizes(layout: TensorLayout) -> dict[str | None, int]:
    """The size along C, H and W of a tensor (1 where it has no such dimension);
    the None entry is the product of the dimensions without a role."""
    sizes: dict[str | None, int] = {"C": 1, "H": 1, "W": 1, None: 1}
    for role, size in zip(layout.roles, layout.tensor.sizes):
        sizes[role] = sizes[role] * size
    return sizes


def _factor(node: Node, inputs: EpilogueInputs, channels: int) -> np.ndarray:
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
                    channels: int) -> tuple[np.ndarray, list[tuple[int, int]], int, np.ndarray]:
    """(int32 biases, multipliers, input zero point, real output scales in
    double precision) of a matched epilogue."""
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
    real = np.asarray(scale, np.float64) / as_f32(match.output.scale)
    return bias.astype(np.int32), _multipliers(scale, match.output), ifm_zp, real


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
    whole tensor of the shape of ``like`` (the output, or the tensor it is
    added to), in any layout."""
    residual_arg = (match.residual_requantized.accumulator.accumulator.value if match.residual_requantized
                    else match.residual.source.value)
    if residual_arg not in inputs.tensors:
        raise NotSupported("the residual operand is not a tensor in memory")
    residual = merged_channels(TensorLayout(inputs.tensors[residual_arg], inputs.tensor_roles[residual_arg]))
    dtype = "i32" if match.residual_requantized else "i8"
    if residual.tensor.dtype != dtype or not residual.tensor.is_whole or role_sizes(residual) != role_sizes(like):
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
        residual, match.residual.zero_point, match.contraction_zero_point,
        *addition_multipliers(s1, s2, match.output.scale), match.output.zero_point, low, high, accumulators)
