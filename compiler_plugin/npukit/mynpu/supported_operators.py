"""Which dispatches the NPU runs: predicates on the linalg IREE formed.

A dispatch is claimed when its body is an i8 x i8 -> i32 contraction whose
indexing maps are a convolution, a depthwise convolution or a fully
connected layer, followed by one of the epilogues of ``epilogue.py``
(requantization with an optional ReLU, or that plus a residual addition), or
by nothing (int32 accumulators stored for a later dispatch). Every other
dispatch stays on the CPU with the reason the predicates give. The result,
``LayerSpec``, holds the layer in the NPU's integer terms: packed weights,
integer biases, zero points and fixed-point multipliers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np
from iree.compiler import ir

from npukit.mynpu import epilogue as ep
from npukit.mynpu.constant_pool import BindingSite, constant_reader
from npukit.mynpu.dispatch_ir import DispatchBody, SystemTensor, defining_op, dense_constant
from npukit.mynpu.requantization import accumulator_scale, addition_multipliers, as_f32, integer_bias, \
    quantize_multiplier


class NotSupported(Exception):
    """The NPU does not run this dispatch; the message is the reason."""


@dataclass
class TensorLayout:
    """How a system tensor's dimensions map to C, H and W (missing ones are 1)."""

    tensor: SystemTensor
    roles: tuple[str | None, ...]  # per dimension: "C", "H", "W" or None (size 1)

    @property
    def layout(self) -> str:
        order = [r for r, s in zip(self.roles, self.tensor.sizes) if r is not None and s > 1]
        if order in (["C", "H", "W"], ["C", "H"], ["C", "W"]):
            return "CHW"
        if order in (["H", "W", "C"], ["H", "C"], ["W", "C"]):
            return "HWC"
        return "any" if len(order) <= 1 or "C" not in order else "other"


@dataclass
class ResidualAccumulators:
    """A residual that is another layer's int32 accumulators, given the
    output stage of that layer here (IREE fused it into the dispatch): its
    int8 value is TFLite's requantization of accumulator + ``bias`` (the
    layer's integer bias minus its input zero-point correction) with the
    per-channel ``multipliers``, plus the ADD's residual zero point, clamped
    to [act_min, act_max]."""

    bias: np.ndarray  # int32 [OC]
    multipliers: list[tuple[int, int]]
    act_min: int
    act_max: int


@dataclass
class ElementwiseAdd:
    """TFLite's int8 ADD of the contraction's int8 result and ``residual``:
    an int8 tensor, or int32 accumulators with ``accumulators`` set."""

    residual: TensorLayout
    residual_zp: int
    conv_zp: int
    input_multiplier: tuple[int, int]
    residual_multiplier: tuple[int, int]
    output_multiplier: tuple[int, int]
    output_zp: int
    act_min: int
    act_max: int
    accumulators: ResidualAccumulators | None = None


@dataclass
class AverageOutput:
    """TFLite's int8 AVERAGE_POOL_2D over a whole plane: the sum of the int8
    values divided by ``count`` with ties away from zero, clamped to
    [act_min, act_max]."""

    count: int
    act_min: int
    act_max: int


@dataclass
class LayerSpec:
    """One layer in integer terms. ``kind`` "average" (CPU kernels only,
    npukit.cpu.accumulator_average) is a global average pool whose input is
    another layer's int32 accumulators, given that layer's output stage
    (bias, multipliers, zero point, range; ``add``: and an ADD with a third
    layer's accumulators) and ``average``; it has no weights."""

    kind: str  # "conv", "depthwise", "fully_connected", "average"
    ifm: TensorLayout
    ofm: TensorLayout
    ifm_chw: tuple[int, int, int]
    ofm_chw: tuple[int, int, int]
    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    weights: np.ndarray  # ISA layout: conv [OC][KH][KW][IC], depthwise [KH][KW][C], FC [N][K]
    bias: np.ndarray  # int32 [OC]
    multipliers: list[tuple[int, int]] | None  # None: int32 accumulators out
    ifm_zp: int
    ofm_zp: int
    act_min: int
    act_max: int
    relu: bool
    add: ElementwiseAdd | None = None
    notes: list[str] = field(default_factory=list)
    average: AverageOutput | None = None

    @property
    def macs(self) -> int:
        if self.kind == "average":
            return 0
        c, h, w = self.ofm_chw
        taps = self.kernel[0] * self.kernel[1] * (1 if self.kind == "depthwise" else self.ifm_chw[0])
        return c * h * w * taps

    @property
    def operation(self) -> str:
        name = {"conv": "convolution", "depthwise": "depthwise convolution",
                "fully_connected": "fully connected", "average": "requantization"}[self.kind]
        if self.kind == "conv" and self.kernel == (1, 1):
            name = "pointwise convolution"
        if self.add is not None:
            name += " + add"
        if self.relu or (self.add is not None and self.add.act_min > -128):
            name += " + relu"
        if self.kind == "average":
            name += " + average pool"
        return name


# Indexing maps ---------------------------------------------------------------

_TERM = re.compile(r"^d(\d+)(?: \* (\d+))?$")


def _map_results(attr: ir.Attribute) -> list[list[tuple[int, int]]]:
    """Each result of an affine map as [(dim, coefficient), ...] (a sum)."""
    amap = ir.AffineMapAttr(attr).value
    results = []
    for expr in amap.results:
        terms = []
        for term in str(expr).split(" + "):
            m = _TERM.match(term.strip())
            if not m:
                raise NotSupported(f"an indexing expression the NPU has no addressing for ({expr})")
            terms.append((int(m.group(1)), int(m.group(2) or 1)))
        results.append(terms)
    return results


def _body_ops(op: ir.Operation) -> list[str]:
    return [o.operation.name for o in op.regions[0].blocks[0].operations]


def _is_int8_contraction(op: ir.Operation) -> bool:
    ops = _body_ops(op)
    return (len(op.operands) == 3 and sorted(ops) == sorted(["arith.extsi", "arith.extsi", "arith.muli",
                                                             "arith.addi", "linalg.yield"])
            and all(str(v.type).endswith("xi8>") for v in op.operands[:2])
            and str(op.operands[2].type).endswith("xi32>"))


@dataclass
class _Geometry:
    kind: str
    ifm: TensorLayout
    ofm_roles: tuple[str | None, ...]
    ifm_chw: tuple[int, int, int]
    ofm_chw: tuple[int, int, int]
    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    weights: np.ndarray
    channel_position: int  # output dimension holding the channels


def _geometry(op: ir.Operation, body: DispatchBody, constant_of) -> _Geometry:
    iterators = ["reduction" if "reduction" in str(t) else "parallel"
                 for t in ir.ArrayAttr(op.attributes["iterator_types"])]
    maps = [_map_results(m) for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    in_map, filter_map, out_map = maps
    operands = list(op.operands)
    ifm_tensor = body.loads.get(operands[0])
    if ifm_tensor is None:
        raise NotSupported("the input is not a tensor read from memory")
    load_strides = ifm_tensor.strides or (1,) * len(ifm_tensor.shape)
    if ifm_tensor.strides is not None:
        # IREE reads a strided 1x1 convolution's input with element strides:
        # the NPU reads the whole tensor and its convolution steps over them.
        if any(o != 0 for o in ifm_tensor.offsets):
            raise NotSupported("a strided read of part of the input")
        ifm_tensor = replace(ifm_tensor, sizes=ifm_tensor.shape, strides=None)
    if not ifm_tensor.is_whole:
        raise NotSupported("the input is not a whole tensor read from memory")
    weights = constant_of(operands[1])
    if weights is None:
        raise NotSupported("the weights are not compile-time constants")
    if any(len(r) != 1 or r[0][1] != 1 for r in filter_map + out_map):
        raise NotSupported("filter or output indexing is not a plain permutation")
    out_dims = [r[0][0] for r in out_map]
    filter_dims = [r[0][0] for r in filter_map]
    sizes: dict[int, int] = {}
    for dims, shape in ((out_dims, ir.ShapedType(operands[2].type).shape),
                        (filter_dims, ir.ShapedType(operands[1].type).shape)):
        for d, s in zip(dims, shape):
            sizes[d] = s
    pure_in = {r[0][0] for r in in_map if len(r) == 1 and r[0][1] == 1 and iterators[r[0][0]] == "reduction"}
    pure_in |= {r[0][0] for r in in_map if len(r) == 1 and r[0][0] in filter_dims and r[0][0] in out_dims}
    roles: dict[int, str] = {}
    spatial: list[tuple[int, int, int | None, int]] = []  # (out dim, stride, kernel dim, dilation)
    for r, load_stride in zip(in_map, load_strides):
        if len(r) == 1 and r[0][0] in pure_in:
            if load_stride != 1:
                raise NotSupported("a strided read over channels")
            continue
        out_terms = [(d, c) for d, c in r if iterators[d] == "parallel"]
        red_terms = [(d, c) for d, c in r if iterators[d] == "reduction"]
        if len(out_terms) != 1 or len(red_terms) > 1:
            raise NotSupported("an input window the NPU's convolution cannot express")
        kernel_dim, dilation = red_terms[0] if red_terms else (None, 1)
        spatial.append((out_terms[0][0], out_terms[0][1] * load_stride, kernel_dim, dilation * load_stride))
    for d in range(len(iterators)):
        if iterators[d] == "parallel":
            in_filter, in_input = d in filter_dims, d in pure_in
            if in_filter and in_input:
                roles[d] = "C"  # depthwise channel
            elif in_filter:
                roles[d] = "OC"
            elif any(s[0] == d for s in spatial):
                roles[d] = "S"
            elif sizes.get(d, 1) != 1:
                raise NotSupported("a batch dimension")
        else:
            if any(s[2] == d for s in spatial):
                roles[d] = "K"
            elif d in pure_in and d in filter_dims:
                roles[d] = "IC"
            else:
                raise NotSupported("a reduction that is not over input channels or the kernel window")
    depthwise = "C" in roles.values()
    channel = [d for d in out_dims if roles.get(d) in ("OC", "C")]
    if len(channel) != 1:
        raise NotSupported("not one output-channel dimension")
    spatial_out = [d for d in out_dims if roles.get(d) == "S"]
    if len(spatial_out) > 2:
        raise NotSupported("more than two spatial dimensions")
    by_out = {s[0]: s for s in spatial}
    geometry_hw = [by_out[d] for d in spatial_out]
    while len(geometry_hw) < 2:
        geometry_hw.insert(0, (None, 1, None, 1))
    (oy, sy, ky, dy), (ox, sx, kx, dx) = geometry_hw
    oh, ow = sizes.get(oy, 1) if oy is not None else 1, sizes.get(ox, 1) if ox is not None else 1
    kh, kw = (sizes[ky] if ky is not None else 1), (sizes[kx] if kx is not None else 1)
    ic_dims = [d for d, r in roles.items() if r == "IC"]
    if len(ic_dims) > 1:
        raise NotSupported("more than one input-channel dimension")
    ic = sizes[ic_dims[0]] if ic_dims else 1
    oc = sizes[channel[0]]
    if depthwise:
        ic = oc
    # Which input tensor dimension is C, H or W.
    in_roles: list[str | None] = []
    for r, s in zip(in_map, ifm_tensor.shape):
        if len(r) == 1 and r[0][0] in pure_in:
            in_roles.append("C")
        else:
            out_dim = next(d for d, _ in r if iterators[d] == "parallel")
            in_roles.append("H" if out_dim == oy else "W")
    ifm_shape = dict(zip(in_roles, ifm_tensor.shape))
    ih, iw = ifm_shape.get("H", 1), ifm_shape.get("W", 1)
    if (oh - 1) * sy + (kh - 1) * dy + 1 > ih or (ow - 1) * sx + (kw - 1) * dx + 1 > iw:
        raise NotSupported("the window reaches outside the input")
    out_roles = tuple("C" if d == channel[0] else ("H" if d == oy else "W") if d in (oy, ox) else None
                      for d in out_dims)
    # Packed weights in the ISA's layout.
    order = {"conv": ["OC", "KH", "KW", "IC"], "depthwise": ["KH", "KW", "C"]}
    role_of_filter = []
    for d in filter_dims:
        r = roles[d]
        role_of_filter.append("KH" if d == ky else "KW" if d == kx else r)
    if not spatial_out and not ky and not kx and not depthwise:
        kind = "fully_connected"
        target = ["OC", "IC"]
    else:
        kind = "depthwise" if depthwise else "conv"
        target = order[kind]
    expanded = np.asarray(weights, np.int8)
    present = list(role_of_filter)
    for role in target:
        if role not in present:
            expanded = expanded[..., np.newaxis]
            present.append(role)
    packed = np.ascontiguousarray(expanded.transpose([present.index(r) for r in target]))
    ifm_layout = TensorLayout(ifm_tensor, tuple(in_roles))
    return _Geometry(kind, ifm_layout, out_roles, (ic, ih, iw), (oc, oh, ow), (kh, kw), (sy, sx), (dy, dx),
                     packed, out_dims.index(channel[0]))


# Epilogues -------------------------------------------------------------------

class EpilogueInputs:
    """The epilogue generic's inputs, by block-argument index: the
    contraction's result (if it is one), per-channel constants and whole
    tensors loaded from memory."""

    def __init__(self, generic: ir.Operation, contraction: ir.Operation | None, body: DispatchBody, constant_of,
                 channel_position: int, rank: int) -> None:
        self.contraction_arg = None
        self.per_channel: dict[int, np.ndarray] = {}
        self.tensors: dict[int, SystemTensor] = {}
        maps = [_map_results(m) for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
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


def _requantization(match: ep.RequantizedContraction, inputs: EpilogueInputs, weights: np.ndarray, kind: str,
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


def reduces_accumulators(body: DispatchBody) -> bool:
    """Whether a dispatch without an int8 contraction reduces int32
    accumulators loaded from memory (a pool over another layer's result,
    with that layer's requantization fused in)."""
    generics = [op for op in body.linalg if op.name == "linalg.generic"]
    return not any(_is_int8_contraction(op) for op in generics) and any(
        t.dtype == "i32" for t in body.loads.values()) and any(
        "reduction" in str(op.attributes["iterator_types"]) for op in generics)


def match_layer(body: DispatchBody, constant_of) -> LayerSpec:
    """The NPU layer of a dispatch, or NotSupported with the reason.
    ``constant_of(value)`` gives a value's compile-time contents or None."""
    contractions = [op for op in body.linalg if op.name == "linalg.generic" and _is_int8_contraction(op)]
    if not contractions:
        if reduces_accumulators(body):
            raise NotSupported("a pooling reduction over int32 accumulators, requantized in this dispatch (IREE "
                               "fused the previous layer's requantization into it; the NPU pools int8 tensors)")
        kinds = sorted({op.name.removeprefix("linalg.") for op in body.linalg if op.name != "linalg.fill"})
        what = ", ".join(kinds) if kinds else "data movement only"
        raise NotSupported(f"no int8 contraction ({what})")
    if len(contractions) > 1:
        raise NotSupported("more than one contraction in the dispatch")
    contraction = contractions[0]
    others = [op for op in body.linalg if op is not contraction and op.name != "linalg.fill"]
    fill = defining_op(contraction.operands[2])
    if not (isinstance(fill, ir.Operation) and fill.name == "linalg.fill" and
            (dense_constant(fill.operands[0]) == 0).all()):
        raise NotSupported("the accumulator does not start at zero")
    geometry = _geometry(contraction, body, constant_of)
    channels = geometry.ofm_chw[0]
    rank = len(geometry.ofm_roles)
    if not others:
        stored = [t for v, t in body.stores if v == contraction.results[0]]
        if len(stored) != 1 or len(body.stores) != 1:
            raise NotSupported("the accumulators are not stored once")
        ofm = TensorLayout(stored[0], geometry.ofm_roles)
        return _spec(geometry, ofm, np.zeros(channels, np.int32), None, 0, 0, -128, 127, False)
    if len(others) != 1 or others[0].name != "linalg.generic":
        raise NotSupported("an epilogue of more than one operation")
    generic = others[0]
    stored = [t for v, t in body.stores if v == generic.results[0]]
    if len(stored) != 1 or len(body.stores) != 1 or stored[0].dtype != "i8":
        raise NotSupported("the result is not stored once as int8")
    ofm = TensorLayout(stored[0], geometry.ofm_roles)
    inputs = EpilogueInputs(generic, contraction, body, constant_of, geometry.channel_position, rank)
    expression = ep.expression_of(generic)
    simple = ep.match_requantized(expression)
    if simple is not None:
        bias, multipliers, ifm_zp = _requantization(simple, inputs, geometry.weights, geometry.kind, channels)
        low, high = ep.activation_range(simple.activation, simple.output)
        return _spec(geometry, ofm, bias, multipliers, ifm_zp, simple.output.zero_point, low, high,
                     simple.activation.kind == "relu")
    residual = ep.match_residual_add(expression, inputs.contraction_arg)
    if residual is not None:
        if geometry.kind == "fully_connected":
            raise NotSupported("a fully connected layer with a residual addition")
        inner = residual.contraction
        bias, multipliers, ifm_zp = _requantization(inner, inputs, geometry.weights, geometry.kind, channels)
        low, high = ep.activation_range(inner.activation, inner.output)
        spec = _spec(geometry, ofm, bias, multipliers, ifm_zp, inner.output.zero_point, low, high,
                     inner.activation.kind == "relu")
        spec.add = add_parameters(residual, inputs, ofm, channels)
        return spec
    raise NotSupported("an epilogue that is not a requantization (with ReLU) or a residual addition")


def match_layer_at_site(body: DispatchBody, site: "list[BindingSite] | str | None") -> LayerSpec:
    """``match_layer`` with the constants of the dispatch's call site (an
    entry of constant_pool.binding_sites: the bindings, or why they are unknown)."""
    if isinstance(site, str):
        raise NotSupported(site)
    return match_layer(body, constant_reader(body, site))


def _spec(g: _Geometry, ofm: TensorLayout, bias, multipliers, ifm_zp, ofm_zp, low, high, relu) -> LayerSpec:
    for name, t in (("input", g.ifm), ("output", ofm)):
        if t.layout == "other":
            raise NotSupported(f"the {name} layout is neither HWC nor CHW")
    layouts = {t.layout for t in (g.ifm, ofm)} - {"any"}
    if len(layouts) > 1:
        raise NotSupported("the input and output layouts differ")
    return LayerSpec(g.kind, g.ifm, ofm, g.ifm_chw, g.ofm_chw, g.kernel, g.stride, g.dilation, g.weights,
                     np.asarray(bias, np.int32), multipliers, ifm_zp, ofm_zp, low, high, relu)
