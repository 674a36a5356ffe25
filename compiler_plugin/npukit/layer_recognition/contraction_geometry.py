"""The geometry of an int8 contraction from its indexing maps: which loop
dimensions are channels, pixels and kernel taps, the strides and dilations,
the input's layout, and the weights packed in the layer's order
(conv [OC][KH][KW][IC], depthwise [KH][KW][C * M], fully connected [N][K]).

A depthwise contraction may have a channel multiplier M (TFLite's
depth_multiplier, linalg's depthwise_conv_2d_nhwc_hwcm): two parallel output
dimensions, input channel c and multiplier index m, with output channel
c * M + m; its output roles name them "C" and "M" (layer_spec.merged_channels)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np
from iree.compiler import ir

from npukit.layer_recognition.dispatch_ir import DispatchBody, SystemTensor
from npukit.layer_recognition.input_padding import InputPadding, input_padding
from npukit.layer_recognition.layer_spec import NotSupported, TensorLayout

_TERM = re.compile(r"^d(\d+)(?: \* (\d+))?$")


def map_results(attr: ir.Attribute) -> list[list[tuple[int, int]]]:
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


def body_ops(op: ir.Operation) -> list[str]:
    return [o.operation.name for o in op.regions[0].blocks[0].operations]


def is_int8_contraction(op: ir.Operation) -> bool:
    ops = body_ops(op)
    return (len(op.operands) == 3 and sorted(ops) == sorted(["arith.extsi", "arith.extsi", "arith.muli",
                                                             "arith.addi", "linalg.yield"])
            and all(_element_type(v) == "i8" for v in op.operands[:2]) and _element_type(op.operands[2]) == "i32")


def _element_type(value: ir.Value) -> str | None:
    """The element type of a ranked tensor value (rank 0 included), else None."""
    try:
        return str(ir.RankedTensorType(value.type).element_type)
    except ValueError:
        return None


@dataclass
class Geometry:
    kind: str
    ifm: TensorLayout
    ofm_roles: tuple[str | None, ...]
    ifm_chw: tuple[int, int, int]
    ofm_chw: tuple[int, int, int]
    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    weights: np.ndarray
    multiplier: int = 1  # depthwise: output channels per input channel (c * M + m)
    # Input padding inside the dispatch (input_padding): (top, bottom, left, right), and its value.
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    pad_value: int = 0


def contraction_geometry(op: ir.Operation, body: DispatchBody, constant_of) -> Geometry:
    iterators = ["reduction" if "reduction" in str(t) else "parallel"
                 for t in ir.ArrayAttr(op.attributes["iterator_types"])]
    maps = [map_results(m) for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    in_map, filter_map, out_map = maps
    operands = list(op.operands)
    padding = input_padding(operands[0])
    loaded = operands[0] if padding is None else padding.source
    ifm_tensor = body.loads.get(loaded)
    if ifm_tensor is None:
        raise NotSupported("the input is not a tensor read from memory" if padding is None else
                           "a padded input that is not a tensor read from memory")
    # The tensor dimension each of the contraction's input dimensions reads.
    tensor_dims = loaded_dimensions(ifm_tensor, tuple(ir.ShapedType(loaded.type).shape))
    load_strides = [ifm_tensor.strides[d] for d in tensor_dims] if ifm_tensor.strides else [1] * len(tensor_dims)
    if ifm_tensor.strides is not None and padding is not None:
        raise NotSupported("a padded input read with element strides")
    if ifm_tensor.strides is not None:
        # IREE reads a strided 1x1 convolution's input with element strides:
        # the NPU reads the whole tensor and its convolution steps over them.
        if any(o != 0 for o in ifm_tensor.offsets):
            raise NotSupported("a strided read of part of the input")
        ifm_tensor = replace(ifm_tensor, sizes=ifm_tensor.shape, strides=None)
    # Otherwise the input may be a window of a larger tensor (a SPLIT, SLICE or
    # STRIDED_SLICE IREE fused into the layer): its sizes from its offsets,
    # addressed with the whole tensor's strides (TensorLayout.addressing).
    in_sizes = [ifm_tensor.sizes[d] for d in tensor_dims]
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
    channel_in = {r[0][0] for r in in_map if len(r) == 1 and r[0][0] in filter_dims and r[0][0] in out_dims}
    pure_in = set(channel_in)
    window_only: set[int] = set()
    if not channel_in:
        pure_in |= {r[0][0] for r in in_map if len(r) == 1 and r[0][1] == 1 and iterators[r[0][0]] == "reduction"}
        alone = [r[0][0] for r, load_stride in zip(in_map, load_strides)
                 if len(r) == 1 and r[0][1] == 1 and iterators[r[0][0]] == "reduction" and load_stride == 1]
        if len(alone) > 1 and all(d in filter_dims for d in alone):
            # One output pixel along a dimension a kernel window spans (a VALID
            # window as wide as the input): IREE drops that output dimension, and
            # the window's dimension reads the input alone, as the input channels
            # do. Either reading sums the same products; the channels are the
            # candidate at the end of the input where the output has its channels
            # (HWC: the last, CHW: the first), the others windows over one pixel.
            oc = [i for i, d in enumerate(out_dims) if d in filter_dims and iterators[d] == "parallel"]
            channels_last = not oc or oc[0] == len(out_dims) - 1
            channel = alone[-1] if channels_last else alone[0]
            window_only = set(alone) - {channel}
    roles: dict[int, str] = {}
    # (out dim, stride, kernel dim, dilation); out dim None: an input dimension
    # a depthwise layer reads with a kernel dimension alone, a spatial
    # dimension of one output pixel (IREE drops its output dimension).
    spatial: list[tuple[int | None, int, int | None, int]] = []
    for r, load_stride in zip(in_map, load_strides):
        kernel_only = len(r) == 1 and iterators[r[0][0]] == "reduction"
        if kernel_only and (channel_in or load_stride != 1 or r[0][0] in window_only):
            # A depthwise layer has no input-channel reduction; a strided read is
            # no channel: a window over a dimension of one output pixel.
            spatial.append((None, 1, r[0][0], r[0][1] * load_stride))
            pure_in.discard(r[0][0])
            continue
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
    multiplier_dim = None
    if depthwise and len(channel) == 2 and sorted(roles[d] for d in channel) == ["C", "OC"]:
        # A channel multiplier: output (c, m) reads input channel c with filter (c, m).
        c_dim, multiplier_dim = (channel if roles[channel[0]] == "C" else channel[::-1])
        roles[multiplier_dim] = "M"
        channel = [c_dim]
    if not channel and not depthwise:
        channel = [None]  # one output channel: IREE drops the dimension of size 1
    if len(channel) != 1:
        raise NotSupported("not one output-channel dimension")
    spatial_out = [d for d in out_dims if roles.get(d) == "S"]
    if len(spatial_out) > 2:
        raise NotSupported("more than two spatial dimensions")
    if any(s[0] is None for s in spatial):
        if len(spatial) > 2:
            raise NotSupported("more than two spatial dimensions")
        geometry_hw = list(spatial)  # in the input's dimension order
    else:
        by_out = {s[0]: s for s in spatial}
        geometry_hw = [by_out[d] for d in spatial_out]
    while len(geometry_hw) < 2:
        geometry_hw.insert(0, (None, 1, None, 1))
    (oy, sy, ky, dy), (ox, sx, kx, dx) = geometry_hw
    row_kernel = ky
    oh, ow = sizes.get(oy, 1) if oy is not None else 1, sizes.get(ox, 1) if ox is not None else 1
    kh, kw = (sizes[ky] if ky is not None else 1), (sizes[kx] if kx is not None else 1)
    ic_dims = [d for d, r in roles.items() if r == "IC"]
    if len(ic_dims) > 1:
        raise NotSupported("more than one input-channel dimension")
    if depthwise and ic_dims:
        # Each channel's own dot product over several inputs (an SVDF's time filter): a grouped layer.
        raise NotSupported("a depthwise channel that also sums over input channels")
    ic = sizes[ic_dims[0]] if ic_dims else 1
    oc = sizes[channel[0]] if channel[0] is not None else 1
    multiplier = sizes[multiplier_dim] if multiplier_dim is not None else 1
    if depthwise:
        ic, oc = oc, oc * multiplier
    # Which input tensor dimension is C, H or W.
    in_roles: list[str | None] = []
    for r in in_map:
        if len(r) == 1 and r[0][0] in pure_in:
            in_roles.append("C")
        elif all(iterators[d] == "reduction" for d, _ in r):  # a dimension of one output pixel
            in_roles.append("H" if r[0][0] == row_kernel else "W")
        else:
            out_dim = next(d for d, _ in r if iterators[d] == "parallel")
            in_roles.append("H" if out_dim == oy and oy is not None else "W")
    ifm_shape = dict(zip(in_roles, in_sizes))
    ih, iw = ifm_shape.get("H", 1), ifm_shape.get("W", 1)
    pads = _padding_by_role(padding, in_roles)
    top, bottom, left, right = pads
    if (oh - 1) * sy + (kh - 1) * dy + 1 > top + ih + bottom or (ow - 1) * sx + (kw - 1) * dx + 1 > left + iw + right:
        raise NotSupported("the window reaches outside the input")
    out_roles = tuple("C" if d == channel[0] else "M" if d == multiplier_dim else
                      ("H" if d == oy else "W") if d in (oy, ox) else None for d in out_dims)
    # Packed weights in the ISA's layout (depthwise: [KH][KW][C][M], channel c * M + m).
    order = {"conv": ["OC", "KH", "KW", "IC"], "depthwise": ["KH", "KW", "C", "M"]}
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
    if kind == "depthwise":
        packed = packed.reshape(kh, kw, oc)
    tensor_roles: list[str | None] = [None] * len(ifm_tensor.shape)
    for d, role in zip(tensor_dims, in_roles):
        tensor_roles[d] = role
    ifm_layout = TensorLayout(ifm_tensor, tuple(tensor_roles))
    return Geometry(kind, ifm_layout, out_roles, (ic, ih, iw), (oc, oh, ow), (kh, kw), (sy, sx), (dy, dx),
                    packed, multiplier, pads, 0 if padding is None else padding.value)


def loaded_dimensions(t: SystemTensor, loaded: tuple[int, ...]) -> list[int]:
    """The dimension of tensor ``t`` that each dimension of a load's result
    ``loaded`` reads: a load may drop dimensions it reads one element of."""
    dims: list[int] = []
    for d, n in enumerate(t.sizes):
        if len(dims) < len(loaded) and n == loaded[len(dims)]:
            dims.append(d)
        elif n != 1:
            raise NotSupported("a load whose result drops a dimension it reads more than one element of")
    if len(dims) != len(loaded):
        raise NotSupported("a load whose result does not follow the elements it reads")
    return dims


def _padding_by_role(padding: InputPadding | None, in_roles: list[str | None]) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) of a padded input whose dimensions have
    ``in_roles``; NotSupported for padding along anything but H and W."""
    if padding is None:
        return (0, 0, 0, 0)
    sides = {"H": (0, 0), "W": (0, 0)}
    for role, low, high in zip(in_roles, padding.low, padding.high):
        if low == high == 0:
            continue
        if role not in sides or sides[role] != (0, 0):
            raise NotSupported("an input padded along its channels")
        sides[role] = (low, high)
    return sides["H"] + sides["W"]
