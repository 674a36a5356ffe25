"""CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED and TRANSPOSE_CONV: a
contraction (``linalg.generic``) of the input and the constant weights into
accumulators, then the output stage of ``epilogues``.

The reference kernels accumulate ``sum(w * (x - zp_in)) + bias`` in int32
(int64 for 16-bit activations), skipping taps outside the input. Here the
input is padded with its zero point, the contraction sums ``w * x`` over
every tap, and ``-zp_in * sum(w)`` is folded into the bias per channel:
the same integer, since padded taps then contribute ``w * zp_in - w *
zp_in = 0`` and int32 arithmetic wraps alike in both orders.
"""

from __future__ import annotations

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith

from npukit.frontends.tflite import epilogues, hybrid
from npukit.frontends.tflite.flatbuffer_reader import Tensor
from npukit.frontends.tflite.lowering import INT_RANGES, LoweringContext, lowers
from npukit.frontends.tflite.mlir_builder import PARALLEL, REDUCTION, Value, affine_map, element_type
from npukit.quantization.tflite_prepare import activation_range, convolution_multipliers, float_activation_range, \
    fully_connected_scales

PADDING_SAME, PADDING_VALID = 0, 1


def output_size(size: int, kernel: int, stride: int, dilation: int, padding: int) -> tuple[int, int, int]:
    """(output size, padding before, padding after) as TFLite computes them."""
    effective = (kernel - 1) * dilation + 1
    out = (size + stride - 1) // stride if padding == PADDING_SAME else (size + stride - effective) // stride
    total = max(0, (out - 1) * stride + effective - size)
    return out, total // 2, total - total // 2


def _arithmetic(ctx: LoweringContext, x: Tensor, w: Tensor, y: Tensor) -> str:
    """'int8', 'int16x8' or 'float32', or the one-line refusal."""
    kinds = {("int8", "int8", "int8"): "int8", ("int16", "int8", "int16"): "int16x8",
             ("float32", "float32", "float32"): "float32", ("float32", "int8", "float32"): "hybrid"}
    kind = kinds.get((x.dtype, w.dtype, y.dtype))
    if kind is None:
        raise ctx.unsupported(f"a {x.dtype} input with {w.dtype} weights and a {y.dtype} output (int8, int16 "
                              "activations with int8 weights, and float32 are)")
    return kind


def float_weights(ctx: LoweringContext, position: int, channel_axis: int) -> np.ndarray:
    """Constant weights as float32: as stored, or dequantized where a float
    layer keeps them in int8 (a dynamic-range quantized, "hybrid", model)."""
    w = ctx.input(position)
    data = ctx.constant(position, "weights")
    if w.dtype == "float32":
        return data
    q = ctx.quantization(w, "weight tensor")
    shape = [1] * data.ndim
    shape[q.dimension if q.per_channel else 0] = -1
    scales = q.scales.reshape(shape) if q.per_channel else q.scales.reshape(())
    zero_points = q.zero_points.reshape(shape) if q.per_channel else q.zero_points.reshape(())
    return (scales * (data.astype(np.float32) - zero_points.astype(np.float32))).astype(np.float32)


def _weight_scales(ctx: LoweringContext, w: Tensor, channels: int, channel_axis: int) -> np.ndarray:
    q = ctx.quantization(w, "weight tensor")
    if np.any(q.zero_points != 0):
        raise ctx.unsupported("weights with a nonzero zero point")
    if q.per_channel and (q.dimension != channel_axis or q.scales.size != channels):
        raise ctx.unsupported(f"weights quantized per channel along dimension {q.dimension}")
    return np.broadcast_to(q.scales, (channels,)).astype(np.float32)


def _bias(ctx: LoweringContext, position: int, channels: int, kind: str) -> np.ndarray:
    b = ctx.input(position)
    if b is None:
        return np.zeros(channels, np.float32 if kind == "float32" else np.int64)
    if b.data is None:
        raise ctx.unsupported("a bias that is not a constant")
    data = np.asarray(b.data).reshape(-1)
    if data.size != channels:
        raise ctx.fail(f"a bias of {data.size} values for {channels} output channels")
    if kind == "int8" and b.dtype != "int32":
        raise ctx.unsupported(f"an int8 layer with a {b.dtype} bias")
    if kind == "int16x8" and b.dtype not in ("int32", "int64"):
        raise ctx.unsupported(f"a 16-bit layer with a {b.dtype} bias")
    return data


TENSOR_TYPE_INT32 = 2  # the schema's TensorType.INT32


def accumulator_dtype(ctx: LoweringContext, op, kind: str, bias_position: int) -> str:
    """The accumulator TFLite's kernel uses. For 16-bit activations the bias
    type and the option ``quantized_bias_type`` choose it: int32 (with the
    int32 output stage) where the option says INT32, int64 otherwise. The
    kernels read an int32 bias as int64 unless the option says INT32, so
    that combination is refused rather than guessed."""
    if kind != "int16x8":
        return DEFAULT_ACCUMULATORS[kind]
    declared = (op.options or {}).get("quantized_bias_type", 0)
    bias = ctx.input(bias_position)
    if declared == TENSOR_TYPE_INT32:
        if bias is not None and bias.dtype != "int32":
            raise ctx.fail(f"quantized_bias_type INT32 with a {bias.dtype} bias")
        return "int32"
    if bias is not None and bias.dtype == "int32":
        raise ctx.unsupported("a 16-bit layer with an int32 bias but no quantized_bias_type INT32 (TFLite's "
                              "kernel would read the bias as int64)")
    return "int64"


DEFAULT_ACCUMULATORS = {"int8": "int32", "int16x8": "int64", "float32": "float32", "hybrid": "int32"}


def accumulate(ctx: LoweringContext, x: Value, w: Value, out_shape, iterators, x_map, w_map, out_map,
               kind: str, acc_dtype: str | None = None) -> Value:
    """The contraction: sum of x * w into ``acc_dtype`` (see accumulator_dtype; by default int32 for
    int8, int64 for int16x8, float32)."""
    acc_dtype = acc_dtype or DEFAULT_ACCUMULATORS[kind]
    builder = ctx.builder
    init = builder.filled(out_shape, acc_dtype, 0)
    acc_type = element_type(acc_dtype)

    def body(a, b, out):
        if kind == "float32":
            return arith.AddFOp(out, arith.MulFOp(a, b).result).result
        product = arith.MulIOp(arith.ExtSIOp(acc_type, a).result, arith.ExtSIOp(acc_type, b).result).result
        return arith.AddIOp(out, product).result

    dims = len(iterators)
    return builder.generic([(x, affine_map(dims, x_map)), (w, affine_map(dims, w_map))],
                           [(init, affine_map(dims, out_map))], iterators, body)[0]


def _output_stage(ctx: LoweringContext, kind: str, acc: Value, channel_dim: int, x: Tensor, y: Tensor,
                  weight_scales: np.ndarray | None, bias: np.ndarray, weight_sums: np.ndarray | None,
                  activation: int, fully_connected: bool = False) -> Value:
    if kind == "float32":
        low, high = _float_range(ctx, activation)
        return epilogues.float_output(ctx, acc, channel_dim, bias if np.any(bias != 0) else None, low, high)
    qx, qy = ctx.per_tensor(x, "input"), ctx.per_tensor(y, "output")
    if kind == "int16x8" and (qx.zero_point != 0 or qy.zero_point != 0):
        raise ctx.unsupported("16-bit activations with a nonzero zero point")
    lo, hi = INT_RANGES[y.dtype]
    try:
        low, high = activation_range(activation, qy.scale, qy.zero_point, lo, hi)
    except ValueError as e:
        raise ctx.unsupported(str(e)) from None
    bias = np.asarray(bias, np.int64)
    if weight_sums is not None and qx.zero_point != 0:
        bias = bias - qx.zero_point * weight_sums
    if fully_connected:
        if acc.dtype == "int64" and weight_sums is not None and \
                acc_bound(ctx, weight_sums.size, bias) >= 1 << 31:
            raise ctx.unsupported("a 16-bit fully connected layer whose accumulators can exceed int32")
        scales = fully_connected_scales(qx.scale, weight_scales, qy.scale)
        return epilogues.scale_once(ctx, acc, channel_dim, _wrap(bias, acc.dtype), scales, qy.zero_point, low,
                                    high, y.dtype)
    multipliers = convolution_multipliers(qx.scale, weight_scales, qy.scale)
    if acc.dtype == "int32":
        return epilogues.requantize_int32(ctx, acc, channel_dim, _wrap(bias, "int32"), multipliers, qy.zero_point,
                                          low, high, y.dtype)
    return epilogues.requantize_int64(ctx, acc, channel_dim, bias, multipliers, qy.zero_point, low, high, y.dtype)


def acc_bound(ctx: LoweringContext, units: int, bias: np.ndarray) -> int:
    """The largest accumulator magnitude of a 16x8 fully connected layer:
    |bias| plus depth products of at most 2^15 * 2^7."""
    depth = ctx.input(1).shape[-1]
    return int(np.abs(np.asarray(bias, np.int64)).max(initial=0)) + depth * (1 << 22)


def _wrap(values: np.ndarray, dtype: str) -> np.ndarray:
    """int64 values wrapped to int32 as the kernels' int32 arithmetic wraps them."""
    if dtype != "int32":
        return np.asarray(values, np.int64)
    return ((np.asarray(values, np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


def _float_range(ctx: LoweringContext, activation: int) -> tuple[float, float]:
    try:
        return float_activation_range(activation)
    except ValueError as e:
        raise ctx.unsupported(str(e)) from None


def _hybrid_weight_scale(ctx: LoweringContext, w: Tensor, per_channel_allowed: bool) -> np.ndarray:
    """The weight scales of a dynamic-range layer (one, or one per output
    channel where the kernel takes them), zero points 0."""
    q = ctx.quantization(w, "weight tensor")
    if np.any(q.zero_points != 0):
        raise ctx.unsupported("dynamic-range weights with a nonzero zero point")
    if q.per_channel and np.any(q.scales != q.scales[0]):
        if not per_channel_allowed:
            raise ctx.unsupported("a dynamic-range convolution with per-channel weight scales")
        return q.scales
    return q.scales[:1] if not (per_channel_allowed and q.per_channel) else q.scales


def _optional_float_bias(ctx: LoweringContext, position: int) -> np.ndarray | None:
    b = ctx.input(position)
    if b is None:
        return None
    if b.data is None or b.dtype != "float32":
        raise ctx.unsupported("a dynamic-range layer whose bias is not a float32 constant")
    return b.data.reshape(-1)


def builder_weights(ctx: LoweringContext, position: int, kind: str, channel_axis: int) -> Value:
    """The weights as the contraction reads them (float32 for float layers)."""
    if kind == "float32" and ctx.input(position).dtype != "float32":
        return ctx.builder.constant(float_weights(ctx, position, channel_axis))
    return ctx.value(ctx.input(position).index)


def _check_size(ctx: LoweringContext, what: str, computed: int, declared: int) -> None:
    if computed != declared:
        raise ctx.fail(f"the output {what} is {declared}, but the input, kernel, stride and padding give {computed}")


def _padded_input(ctx: LoweringContext, x: Value, kind: str, q_zero_point: int, pads) -> Value:
    (top, bottom), (left, right) = pads
    fill = 0.0 if kind == "float32" else q_zero_point
    return ctx.builder.pad(x, [0, top, left, 0], [0, bottom, right, 0], fill)


LAYER_BOUNDARY = "npukit.layer_boundary"  # npukit.passes.layer_boundaries.MARK

# Consumers of a layer's output that IREE may fuse into the layer's dispatch
# in a form the layer recogniser reads (a residual addition, a global
# average) or that never fuse into it (other layers, data movement).
_RECOGNISED_CONSUMERS = {"ADD", "AVERAGE_POOL_2D", "MEAN", "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED",
                         "TRANSPOSE_CONV", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "CONCATENATION", "PAD", "PADV2",
                         "SOFTMAX"}


def define_layer_output(ctx: LoweringContext, value: Value) -> None:
    """Defines a quantized layer's output. Where an operator outside
    _RECOGNISED_CONSUMERS reads it (LEAKY_RELU, HARD_SWISH, LOGISTIC, MUL,
    ...), the output passes through ``util.optimization_barrier``, so that
    IREE does not fuse that operator into the layer's dispatch: the layer
    stays a convolution with TFLite's output stage, which the NPU and the
    tuned kernels take, and the operator runs in a dispatch of its own.
    npukit.passes.layer_boundaries removes the barrier once IREE has formed
    its dispatches."""
    index = ctx.operator.outputs[0]
    consumers = {op.opcode for op in ctx.graph.operators if index in op.inputs}
    if value.dtype in ("int8", "int16") and consumers - _RECOGNISED_CONSUMERS:
        barrier = ir.Operation.create("util.optimization_barrier", results=[value.value.type],
                                      operands=[value.value], attributes={LAYER_BOUNDARY: ir.UnitAttr.get()})
        value = Value(barrier.result, value.shape, value.dtype)
    ctx.define(0, value)


@lowers("CONV_2D")
def conv_2d(ctx: LoweringContext, op) -> None:
    x_t, w_t, y_t = ctx.input(0), ctx.input(1), ctx.output()
    kind = _arithmetic(ctx, x_t, w_t, y_t)
    if kind == "hybrid":
        _hybrid_weight_scale(ctx, w_t, per_channel_allowed=False)
    acc_dtype = accumulator_dtype(ctx, op, kind, 2)
    weights = ctx.constant(1, "weights")
    if len(x_t.shape) != 4 or weights.ndim != 4:
        raise ctx.fail(f"a convolution of a {len(x_t.shape)}-d input with {weights.ndim}-d weights")
    n, h, w, c = x_t.shape
    oc, kh, kw, ic = weights.shape
    if ic != c:
        raise ctx.unsupported(f"a grouped convolution ({c // max(ic, 1)} groups)")
    stride = (op.option("stride_h", 1), op.option("stride_w", 1))
    dilation = (op.option("dilation_h_factor", 1), op.option("dilation_w_factor", 1))
    oh, top, bottom = output_size(h, kh, stride[0], dilation[0], op.option("padding", 0))
    ow, left, right = output_size(w, kw, stride[1], dilation[1], op.option("padding", 0))
    _check_size(ctx, "shape", (n, oh, ow, oc), y_t.shape)
    x = ctx.value(x_t.index)
    row_scales = None
    if kind == "hybrid":  # quantized on the fly, one scale per image; padding is a quantized 0
        q, row_scales = hybrid.symmetric_quantize_rows(ctx, ctx.builder.reshape(x, (n, h * w * c)))
        x = ctx.builder.reshape(q, (n, h, w, c))
    zp = 0 if kind in ("float32", "hybrid") else ctx.per_tensor(x_t, "input").zero_point
    x = _padded_input(ctx, x, kind, zp, ((top, bottom), (left, right)))
    w_value = builder_weights(ctx, 1, kind, 0)
    sy, sx = stride
    dy, dx = dilation
    # Loops: n, oh, ow, oc, kh, kw, ic.
    acc = accumulate(ctx, x, w_value, (n, oh, ow, oc), [PARALLEL] * 4 + [REDUCTION] * 3,
                     [0, f"d1 * {sy} + d4 * {dy}", f"d2 * {sx} + d5 * {dx}", 6], [3, 4, 5, 6], [0, 1, 2, 3], kind, acc_dtype)
    bias = _bias(ctx, 2, oc, kind)
    activation = op.option("fused_activation_function", 0)
    if kind == "hybrid":
        low, high = _float_range(ctx, activation)
        ctx.define(0, hybrid.rescale(ctx, acc, 0, 3, row_scales, _hybrid_weight_scale(ctx, w_t, False),
                                     _optional_float_bias(ctx, 2), low, high))
        return
    scales = None if kind == "float32" else _weight_scales(ctx, w_t, oc, 0)
    sums = weights.reshape(oc, -1).astype(np.int64).sum(axis=1) if kind != "float32" else None
    define_layer_output(ctx, _output_stage(ctx, kind, acc, 3, x_t, y_t, scales, bias, sums, activation))


@lowers("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(ctx: LoweringContext, op) -> None:
    x_t, w_t, y_t = ctx.input(0), ctx.input(1), ctx.output()
    kind = _arithmetic(ctx, x_t, w_t, y_t)
    if kind == "hybrid":
        raise ctx.unsupported("a dynamic-range depthwise convolution (float input, int8 weights)")
    acc_dtype = accumulator_dtype(ctx, op, kind, 2)
    weights = ctx.constant(1, "weights")
    if len(x_t.shape) != 4 or weights.ndim != 4 or weights.shape[0] != 1:
        raise ctx.fail("a depthwise convolution whose input or weights are not [1, H, W, C]")
    n, h, w, c = x_t.shape
    _, kh, kw, oc = weights.shape
    if c == 0 or oc % c:
        raise ctx.fail(f"{oc} output channels for {c} input channels")
    multiplier = oc // c
    stride = (op.option("stride_h", 1), op.option("stride_w", 1))
    dilation = (op.option("dilation_h_factor", 1), op.option("dilation_w_factor", 1))
    oh, top, bottom = output_size(h, kh, stride[0], dilation[0], op.option("padding", 0))
    ow, left, right = output_size(w, kw, stride[1], dilation[1], op.option("padding", 0))
    _check_size(ctx, "shape", (n, oh, ow, oc), y_t.shape)
    zp = 0 if kind == "float32" else ctx.per_tensor(x_t, "input").zero_point
    x = _padded_input(ctx, ctx.value(x_t.index), kind, zp, ((top, bottom), (left, right)))
    sy, sx = stride
    dy, dx = dilation
    builder = ctx.builder
    bias = _bias(ctx, 2, oc, kind)
    scales = None if kind == "float32" else _weight_scales(ctx, w_t, oc, 3)
    sums = weights.reshape(-1, oc).astype(np.int64).sum(axis=0) if kind != "float32" else None
    activation = op.option("fused_activation_function", 0)
    if c == 1:
        # One input channel: the multiplier's channels are a convolution's output channels.
        source = float_weights(ctx, 1, 3) if kind == "float32" else weights
        filters = builder.constant(np.ascontiguousarray(source.reshape(kh, kw, oc).transpose(2, 0, 1)[..., None]))
        acc = accumulate(ctx, x, filters, (n, oh, ow, oc), [PARALLEL] * 4 + [REDUCTION] * 3,
                          [0, f"d1 * {sy} + d4 * {dy}", f"d2 * {sx} + d5 * {dx}", 6], [3, 4, 5, 6], [0, 1, 2, 3],
                          kind, acc_dtype)
        result = _output_stage(ctx, kind, acc, 3, x_t, y_t, scales, bias, sums, activation)
    elif multiplier == 1:
        filters = builder.reshape(builder_weights(ctx, 1, kind, 3), (kh, kw, c))
        # Loops: n, oh, ow, c, kh, kw.
        acc = accumulate(ctx, x, filters, (n, oh, ow, c), [PARALLEL] * 4 + [REDUCTION] * 2,
                         [0, f"d1 * {sy} + d4 * {dy}", f"d2 * {sx} + d5 * {dx}", 3], [4, 5, 3], [0, 1, 2, 3], kind, acc_dtype)
        result = _output_stage(ctx, kind, acc, 3, x_t, y_t, scales, bias, sums, activation)
    else:
        # Output channel c * multiplier + m: loops n, oh, ow, c, m, kh, kw over [.., C, M] accumulators.
        filters = builder.reshape(builder_weights(ctx, 1, kind, 3), (kh, kw, c, multiplier))
        acc = accumulate(ctx, x, filters, (n, oh, ow, c, multiplier), [PARALLEL] * 5 + [REDUCTION] * 2,
                          [0, f"d1 * {sy} + d5 * {dy}", f"d2 * {sx} + d6 * {dx}", 3], [5, 6, 3, 4],
                          [0, 1, 2, 3, 4], kind, acc_dtype)
        acc = builder.reshape(acc, (n, oh, ow, oc))
        result = _output_stage(ctx, kind, acc, 3, x_t, y_t, scales, bias, sums, activation)
    define_layer_output(ctx, result)


@lowers("FULLY_CONNECTED")
def fully_connected(ctx: LoweringContext, op) -> None:
    x_t, w_t, y_t = ctx.input(0), ctx.input(1), ctx.output()
    kind = _arithmetic(ctx, x_t, w_t, y_t)
    weights = ctx.constant(1, "weights")
    if op.option("weights_format", 0) != 0:
        raise ctx.unsupported("shuffled fully connected weights")
    acc_dtype = accumulator_dtype(ctx, op, kind, 2)
    if weights.ndim != 2:
        raise ctx.fail(f"fully connected weights of rank {weights.ndim}")
    units, depth = weights.shape
    if depth == 0 or x_t.elements % depth:
        raise ctx.fail(f"an input of {x_t.elements} values for weights of depth {depth}")
    batches = x_t.elements // depth
    if y_t.elements != batches * units:
        raise ctx.fail(f"an output of {y_t.elements} values for {batches} x {units}")
    x = ctx.builder.reshape(ctx.value(x_t.index), (batches, depth))
    row_scales = None
    if kind == "hybrid":
        if op.option("asymmetric_quantize_inputs", False):
            raise ctx.unsupported("a dynamic-range fully connected layer with asymmetric input quantization")
        x, row_scales = hybrid.symmetric_quantize_rows(ctx, x)
    # Loops: b, n, k.
    acc = accumulate(ctx, x, builder_weights(ctx, 1, kind, 0), (batches, units), [PARALLEL, PARALLEL, REDUCTION],
                      [0, 2],
                      [1, 2], [0, 1], kind, acc_dtype)
    bias = _bias(ctx, 2, units, kind)
    if kind == "hybrid":
        low, high = _float_range(ctx, op.option("fused_activation_function", 0))
        ctx.define(0, hybrid.rescale(ctx, acc, 0, 1, row_scales, _hybrid_weight_scale(ctx, w_t, True),
                                     _optional_float_bias(ctx, 2), low, high))
        return
    scales = None if kind == "float32" else _weight_scales(ctx, w_t, units, 0)
    sums = weights.astype(np.int64).sum(axis=1) if kind != "float32" else None
    result = _output_stage(ctx, kind, acc, 1, x_t, y_t, scales, bias, sums,
                           op.option("fused_activation_function", 0), fully_connected=kind != "float32")
    define_layer_output(ctx, result)


def transpose_padding(out: int, kernel: int, stride: int, padding: int) -> int:
    """The padding TFLite's TRANSPOSE_CONV takes off the front of its output:
    computed from the output size alone, as a convolution from the output
    back to the input would pad."""
    steps = (out + stride - 1) // stride if padding == PADDING_SAME else (out + stride - kernel) // stride
    return max(0, (steps - 1) * stride + kernel - out) // 2


@lowers("TRANSPOSE_CONV")
def transpose_conv(ctx: LoweringContext, op) -> None:
    """Each input pixel scatters its products over a kernel-sized patch of
    the output (at stride spacing, less the padding). The same sums are a
    stride-1 convolution with the weights flipped in both spatial axes over
    the input spread out by the stride, the gaps and the border filled with
    the input zero point (so they contribute nothing once the zero point is
    folded into the bias): the form the kernels and the NPU take."""
    x_t, w_t, y_t = ctx.input(2), ctx.input(1), ctx.output()
    kind = _arithmetic(ctx, x_t, w_t, y_t)
    if kind == "hybrid":
        raise ctx.unsupported("a dynamic-range transpose convolution (float input, int8 weights)")
    acc_dtype = accumulator_dtype(ctx, op, kind, 3)
    weights = ctx.constant(1, "weights")
    if len(x_t.shape) != 4 or weights.ndim != 4 or len(y_t.shape) != 4:
        raise ctx.fail(f"a transpose convolution of a {len(x_t.shape)}-d input with {weights.ndim}-d weights")
    n, h, w, c = x_t.shape
    oc, kh, kw, ic = weights.shape
    if ic != c:
        raise ctx.fail(f"weights for {ic} input channels on an input of {c}")
    declared = ctx.input(0)
    if declared is not None and declared.data is not None and \
            tuple(int(v) for v in np.asarray(declared.data).reshape(-1)) != y_t.shape:
        raise ctx.fail(f"an output_shape of {list(np.asarray(declared.data).reshape(-1))} for an output of "
                       f"shape {list(y_t.shape)}")
    if y_t.shape[0] != n or y_t.shape[3] != oc:
        raise ctx.fail(f"an output of shape {list(y_t.shape)} for {n} images and {oc} output channels")
    _, oh, ow, _ = y_t.shape
    sy, sx = op.option("stride_h", 1), op.option("stride_w", 1)
    if sy < 1 or sx < 1:
        raise ctx.fail(f"a stride of {sy}x{sx}")
    padding = op.option("padding", 0)
    pad_h, pad_w = transpose_padding(oh, kh, sy, padding), transpose_padding(ow, kw, sx, padding)
    zp = 0 if kind == "float32" else ctx.per_tensor(x_t, "input").zero_point
    builder = ctx.builder
    x = ctx.value(x_t.index)
    spread = (n, (h - 1) * sy + 1, (w - 1) * sx + 1, c)
    if (sy, sx) != (1, 1):
        x = builder.insert(x, builder.filled(spread, x.dtype, 0.0 if kind == "float32" else zp), [0, 0, 0, 0],
                           [1, sy, sx, 1])
    # Output row r reads spread rows r + kh-1 - pad_h - k' for flipped taps k'.
    windows = []
    for size, out, kernel, pad in ((spread[1], oh, kh, pad_h), (spread[2], ow, kw, pad_w)):
        before = kernel - 1 - pad
        after = out + kernel - 1 - before - size
        windows.append((before, after))
    (top, bottom), (left, right) = windows
    x = _padded_input(ctx, x, kind, zp, ((max(top, 0), max(bottom, 0)), (max(left, 0), max(right, 0))))
    x = builder.slice(x, [0, max(-top, 0), max(-left, 0), 0], [n, oh + kh - 1, ow + kw - 1, c])
    flipped = np.ascontiguousarray(weights[:, ::-1, ::-1, :])
    if kind == "float32" and w_t.dtype != "float32":
        flipped = np.ascontiguousarray(float_weights(ctx, 1, 0)[:, ::-1, ::-1, :])
    acc = accumulate(ctx, x, builder.constant(flipped), (n, oh, ow, oc), [PARALLEL] * 4 + [REDUCTION] * 3,
                      [0, "d1 + d4", "d2 + d5", 6], [3, 4, 5, 6], [0, 1, 2, 3], kind, acc_dtype)
    bias = _bias(ctx, 3, oc, kind)
    scales = None if kind == "float32" else _weight_scales(ctx, w_t, oc, 0)
    sums = weights.reshape(oc, -1).astype(np.int64).sum(axis=1) if kind != "float32" else None
    activation = op.option("fused_activation_function", 0)
    define_layer_output(ctx, _output_stage(ctx, kind, acc, 3, x_t, y_t, scales, bias, sums, activation))
