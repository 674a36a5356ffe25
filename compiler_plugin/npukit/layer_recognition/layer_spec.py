"""A quantized layer in integer terms, as the recogniser hands it to its
consumers (the mynpu lowering and the CPU layer kernels): geometry, tensors
as the dispatch addresses them, packed weights, integer biases, zero points,
fixed-point multipliers and the fused output stage."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from npukit.layer_recognition.dispatch_ir import SystemTensor


# The operation a "table" layer reports (LayerSpec.operation), and a "mul" layer.
TABLE_OPERATION = "elementwise int8 table lookup"
PRODUCT_OPERATION = "elementwise int8 product"

# The kinds of layer without weights or MACs: an average of another layer's accumulators, a table, a product,
# the int8 pools, a float input's quantization.
UNWEIGHTED_KINDS = ("average", "table", "mul", "average_pool", "max_pool", "mean", "quantize")


class NotSupported(Exception):
    """The dispatch is not a layer its consumer runs; the message is the reason."""


@dataclass(frozen=True)
class Addressing:
    """A tensor as a kernel or the NPU addresses it: byte offset in its
    binding and element strides for C, H and W."""

    offset: int
    sc: int
    sh: int
    sw: int


@dataclass
class TensorLayout:
    """How a system tensor's dimensions map to C, H and W (missing ones are 1).
    A depthwise layer with a channel multiplier M addresses its output as two
    dimensions, input channel c ("C") and multiplier m ("M"); merged_channels
    makes them the one channel dimension c * M + m its consumers address."""

    tensor: SystemTensor
    roles: tuple[str | None, ...]  # per dimension: "C", "H", "W", "M" or None (size 1)

    @property
    def layout(self) -> str:
        order = [r for r, s in zip(self.roles, self.tensor.sizes) if r is not None and s > 1]
        if order in (["C", "H", "W"], ["C", "H"], ["C", "W"]):
            return "CHW"
        if order in (["H", "W", "C"], ["H", "C"], ["W", "C"]):
            return "HWC"
        return "any" if len(order) <= 1 or "C" not in order else "other"

    def addressing(self) -> Addressing:
        t = self.tensor
        dense = [int(np.prod(t.shape[d + 1:])) for d in range(len(t.shape))]
        steps = t.strides or (1,) * len(t.shape)
        start = sum(o * s for o, s in zip(t.offsets, dense))
        role = {r: dense[d] * steps[d] for d, r in enumerate(self.roles) if r is not None}
        return Addressing(t.offset + start * t.element_bytes, role.get("C", 0), role.get("H", 0), role.get("W", 0))


def merged_channels(t: TensorLayout) -> TensorLayout:
    """``t`` with a channel multiplier's dimension ("M") merged into the
    channel dimension before it: channel c * M + m. The M dimension must
    follow C directly and be read whole, so the merged channels lie one
    element stride apart; otherwise NotSupported."""
    if "M" not in t.roles:
        return t
    if "C" not in t.roles:
        raise NotSupported("a depthwise output with a channel multiplier but no channel dimension")
    c, m = t.roles.index("C"), t.roles.index("M")
    x = t.tensor
    steps = x.strides or (1,) * len(x.shape)
    if c + 1 != m or x.offsets[m] != 0 or x.sizes[m] != x.shape[m] or steps[m] != 1 or steps[c] != 1:
        raise NotSupported("a depthwise output whose channels are not input channel * multiplier + index, densely")
    n = x.shape[m]

    def merge(values: tuple[int, ...], merged: int) -> tuple[int, ...]:
        return values[:c] + (merged,) + values[m + 1:]

    tensor = replace(x, shape=merge(x.shape, x.shape[c] * n), offsets=merge(x.offsets, x.offsets[c] * n),
                     sizes=merge(x.sizes, x.sizes[c] * n),
                     strides=None if x.strides is None else merge(x.strides, 1))
    return TensorLayout(tensor, t.roles[:m] + t.roles[m + 1:])


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
class FloatQuantize:
    """An activation and a QuantizeLinear in binary32, as an ONNX QDQ graph
    computes them: v = min(max(v, 0) if relu else v, upper), then
    clamp(roundeven(v / scale) + zero_point, low, high)."""

    scale: float  # a binary32 value
    zero_point: int
    relu: bool
    upper: float | None
    low: int
    high: int


@dataclass
class FloatStage:
    """The float output stage of an ONNX QDQ layer, operation by operation as
    IREE's epilogue computes it: v = float32(acc - correction) * scale0 *
    scale1 + bias (each operation rounded to binary32), then ``quantize``.
    Per output channel: ``scales0``, ``scales1``, ``bias`` (float32 [OC])."""

    scales0: np.ndarray
    scales1: np.ndarray
    bias: np.ndarray
    quantize: FloatQuantize


@dataclass
class FloatAdd:
    """The float residual addition after a float stage: v =
    float32(out - conv_zp) * conv_scale + float32(res - residual_zp) *
    residual_scale, then ``quantize``."""

    conv_zp: int
    conv_scale: float
    residual_zp: int
    residual_scale: float
    quantize: FloatQuantize


@dataclass
class LayerSpec:
    """One layer in integer terms. ``kind`` "average" (CPU kernels only,
    npukit.layer_recognition.accumulator_average) is a global average pool whose input is
    another layer's int32 accumulators, given that layer's output stage
    (bias, multipliers, zero point, range; ``add``: and an ADD with a third
    layer's accumulators) and ``average``; it has no weights. ``kind``
    "table" (the CPU kernels' s8_table and mynpu's OP_TABLE,
    npukit.layer_recognition.table_lookup) maps
    each of the ``ifm_chw[2]`` int8 elements of its input to ``weights[x +
    128]`` (a 256-entry int8 table) at the same place of its output. ``kind``
    "mul" (the CPU kernels and mynpu's OP_E_MUL,
    npukit.layer_recognition.elementwise_product) is TFLite's int8 MUL of ``ifm`` and ``operand``: zp + MBQM(fx(x) *
    fy(y), M, shift), clamped, its two factors in their compact form
    (elementwise_product.factor_bytes) as the weights' bytes. ``kind``
    "average_pool" and "max_pool" (the CPU kernels and mynpu's OP_POOL,
    npukit.layer_recognition.int8_pool) are TFLite's int8 AVERAGE_POOL_2D
    and MAX_POOL_2D over ``kernel`` windows at ``stride``, clamped to
    [act_min, act_max]; no weights. ``kind`` "mean" (the same recogniser)
    is TFLite's int8 MEAN over such windows: each window's sum plus the
    channel's ``bias``, requantized by its ``multipliers`` entry, plus
    ``ofm_zp``, clamped. ``kind`` "quantize" (CPU kernels
    only, npukit.layer_recognition.float_quantize) is TFLite's QUANTIZE of
    a float32 input: zp + x / ``float_scale`` rounded half away from zero,
    clamped."""

    kind: str  # "conv", "depthwise", "fully_connected", or one of UNWEIGHTED_KINDS
    ifm: TensorLayout
    ofm: TensorLayout
    ifm_chw: tuple[int, int, int]
    ofm_chw: tuple[int, int, int]
    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    # ISA layout: conv [OC][KH][KW][IC], depthwise [KH][KW][OC] (OC = C * multiplier), FC [N][K]
    weights: np.ndarray
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
    # A fully connected layer's output scaling: per channel, the double its
    # accumulators are multiplied by before one rounding (TFLite's kernel);
    # ``multipliers`` then only approximate it.
    scales: np.ndarray | None = None
    # A depthwise layer's channel multiplier M: output channel o = c * M + m
    # reads input channel c = o // M (TFLite's depth_multiplier); 1 otherwise.
    multiplier: int = 1
    # An ONNX QDQ layer's own float arithmetic (layer_recognition.float_parameters),
    # verified on the dispatch's epilogue; None where the layer's epilogue is
    # integer (the TFLite frontend) or was not read. ``float_add`` with ``add``.
    # ``float_epilogue``: the dispatch requantizes in float (an ONNX QDQ
    # layer); ``float_unsupported`` says why its float stage was not read.
    float_stage: FloatStage | None = None
    float_add: FloatAdd | None = None
    float_epilogue: bool = False
    float_unsupported: str = ""
    # Input padding the layer reads itself (IREE left a tensor.pad of its
    # input in the dispatch, npukit.layer_recognition.input_padding): taps at
    # rows -top .. -1 and ih .. ih + bottom - 1 (likewise left and right for
    # columns) read ``pad_value``, not the input; input pixel (iy, ix) of
    # output pixel (oy, ox) is iy = oy * stride - top + ky * dilation. The
    # value is what the padded positions hold, whatever ``ifm_zp`` is: a
    # layer whose input zero point was folded into its bias (ifm_zp 0) has
    # its padding hold that zero point. A consumer that takes no padding
    # refuses a layer with any (``padded``).
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, bottom, left, right
    pad_value: int = 0
    # The second input of an elementwise product (kind "mul"), as rows of the output's channels (its strides 0
    # along what it is broadcast over); None for every other kind.
    operand: TensorLayout | None = None
    # A float quantization's divisor (kind "quantize", a binary32 value); None for every other kind.
    float_scale: float | None = None

    @property
    def padded(self) -> bool:
        return any(self.padding)

    @property
    def macs(self) -> int:
        if self.kind in UNWEIGHTED_KINDS:
            return 0
        c, h, w = self.ofm_chw
        taps = self.kernel[0] * self.kernel[1] * (1 if self.kind == "depthwise" else self.ifm_chw[0])
        return c * h * w * taps

    @property
    def operation(self) -> str:
        name = {"conv": "convolution", "depthwise": "depthwise convolution",
                "fully_connected": "fully connected", "average": "requantization",
                "table": TABLE_OPERATION, "mul": PRODUCT_OPERATION, "average_pool": "int8 average pool",
                "max_pool": "int8 max pool", "mean": "int8 mean", "quantize": "float32 to int8 quantization"}[self.kind]
        if self.kind == "conv" and self.kernel == (1, 1):
            name = "pointwise convolution"
        if self.add is not None:
            name += " + add"
        if self.relu or (self.add is not None and self.add.act_min > -128):
            name += " + relu"
        if self.kind == "average":
            name += " + average pool"
        return name
