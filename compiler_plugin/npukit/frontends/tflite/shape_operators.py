"""Operators that move values without arithmetic: RESHAPE, SQUEEZE,
EXPAND_DIMS, TRANSPOSE, DEPTH_TO_SPACE, SPACE_TO_DEPTH, CONCATENATION, PAD,
PADV2, SLICE, STRIDED_SLICE, SPLIT, SPLIT_V, PACK, UNPACK, GATHER. TFLite's quantized kernels copy the
stored integers (a QUANTIZE is where the scale changes), so these do too;
CONCATENATION of int8 tensors requires equal quantization, as TFLite does."""

from __future__ import annotations

import numpy as np

from npukit.frontends.tflite.lowering import LoweringContext, lowers


def _same_elements(ctx: LoweringContext) -> None:
    x, y = ctx.input(0), ctx.output()
    if x.elements != y.elements:
        raise ctx.fail(f"{x.describe()} has {x.elements} values, {y.describe()} {y.elements}")


@lowers("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
def reshape(ctx: LoweringContext, op) -> None:
    _same_elements(ctx)
    ctx.define(0, ctx.builder.reshape(ctx.input_value(0), ctx.output().shape))


def _axis(ctx: LoweringContext, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ctx.fail(f"axis {axis} of a rank-{rank} tensor")
    return axis % rank


@lowers("TRANSPOSE")
def transpose(ctx: LoweringContext, op) -> None:
    x = ctx.input(0)
    perm = [int(p) for p in ctx.constant(1, "a permutation").reshape(-1)]
    if sorted(_axis(ctx, p, len(x.shape)) for p in perm) != list(range(len(x.shape))):
        raise ctx.fail(f"the permutation {perm} of a rank-{len(x.shape)} tensor")
    ctx.define(0, ctx.builder.transpose(ctx.input_value(0), [p % len(x.shape) for p in perm]))


@lowers("DEPTH_TO_SPACE", "SPACE_TO_DEPTH")
def depth_space(ctx: LoweringContext, op) -> None:
    """NHWC blocks of ``block_size`` x ``block_size`` pixels to channels and back, TFLite's channel order:
    the input channel of output pixel (h, w) channel c is ((h % b) * b + w % b) * C_out + c (DEPTH_TO_SPACE),
    its inverse for SPACE_TO_DEPTH. A reshape to (N, H, W, b, b, C) or (N, H, b, W, b, C), a transpose of the
    two middle axes, a reshape."""
    x, y = ctx.input(0), ctx.output()
    b = int(op.option("block_size", 0))
    if len(x.shape) != 4 or b < 1:
        raise ctx.fail(f"a {op.opcode} of {x.describe()} with block size {b} (rank 4 and a block size of at least "
                       "1 are required)")
    n, h, w, c = x.shape
    if op.opcode == "DEPTH_TO_SPACE":
        if c % (b * b) or y.shape != (n, h * b, w * b, c // (b * b)):
            raise ctx.fail(f"{x.describe()} to {y.describe()} is not a DEPTH_TO_SPACE of block size {b}")
        blocks, result = (n, h, w, b, b, c // (b * b)), y.shape
    else:
        if h % b or w % b or y.shape != (n, h // b, w // b, c * b * b):
            raise ctx.fail(f"{x.describe()} to {y.describe()} is not a SPACE_TO_DEPTH of block size {b}")
        blocks, result = (n, h // b, b, w // b, b, c), y.shape
    _same_quantization(ctx, [x, y])
    builder = ctx.builder
    moved = builder.transpose(builder.reshape(ctx.input_value(0), blocks), [0, 1, 3, 2, 4, 5])
    ctx.define(0, builder.reshape(moved, result))


def _same_quantization(ctx: LoweringContext, tensors) -> None:
    quantized = [t for t in tensors if t.dtype in ("int8", "uint8", "int16")]
    if not quantized:
        return
    first = quantized[0].quantization
    for t in quantized[1:]:
        q = t.quantization
        if first is None or q is None or not np.array_equal(q.scales, first.scales) or \
                not np.array_equal(q.zero_points, first.zero_points):
            raise ctx.unsupported(f"a {op_name(ctx)} of {t.dtype} tensors quantized differently")


def op_name(ctx: LoweringContext) -> str:
    return ctx.operator.opcode


@lowers("CONCATENATION")
def concatenation(ctx: LoweringContext, op) -> None:
    inputs = [ctx.tensor(i) for i in op.inputs if i >= 0]
    y = ctx.output()
    if op.option("fused_activation_function", 0) != 0:
        raise ctx.unsupported("a CONCATENATION with a fused activation")
    if y.dtype == "int8":
        _same_quantization(ctx, inputs + [y])
    axis = _axis(ctx, int(op.option("axis", 0)), len(y.shape))
    ctx.define(0, ctx.builder.concatenate([ctx.value(t.index) for t in inputs], axis))


@lowers("PAD", "PADV2")
def pad(ctx: LoweringContext, op) -> None:
    x, y = ctx.input(0), ctx.output()
    paddings = np.asarray(ctx.constant(1, "paddings")).reshape(-1, 2)
    if paddings.shape[0] != len(x.shape) or np.any(paddings < 0):
        raise ctx.fail(f"paddings {paddings.tolist()} for a rank-{len(x.shape)} tensor")
    if x.dtype.startswith("float"):
        fill = 0.0
    else:
        fill = ctx.per_tensor(y, "output").zero_point if y.quantization is not None else 0
    if op.opcode == "PADV2" and ctx.input(2) is not None:
        fill = ctx.constant(2, "a padding value").reshape(-1)[0].item()
    ctx.define(0, ctx.builder.pad(ctx.input_value(0), paddings[:, 0].tolist(), paddings[:, 1].tolist(), fill))


@lowers("SLICE")
def slice_(ctx: LoweringContext, op) -> None:
    x = ctx.input(0)
    begin = [int(v) for v in ctx.constant(1, "slice bounds").reshape(-1)]
    size = [int(v) for v in ctx.constant(2, "slice sizes").reshape(-1)]
    size = [x.shape[i] - begin[i] if s == -1 else s for i, s in enumerate(size)]
    ctx.define(0, ctx.builder.slice(ctx.input_value(0), begin, size))


def strided_slice_window(op, shape: tuple[int, ...], begin, end, strides) -> tuple[list[int], list[int], list[int]]:
    """A STRIDED_SLICE's offsets, sizes and steps per axis of an input of ``shape``, TFLite's
    masks applied (begin, end, shrink-axis, offset); positive strides, no ellipsis or new axis
    (the caller checks those). Raises ValueError for bounds that do not fit the input."""
    rank = len(shape)
    if not (len(begin) == len(end) == len(strides) == rank):
        raise ValueError("slice bounds of another rank than the input")
    offsets, sizes, steps = [], [], []
    for axis in range(rank):
        n, stride = shape[axis], strides[axis]
        if stride <= 0:
            raise ValueError(f"a stride of {stride}")
        b = 0 if op.option("begin_mask", 0) >> axis & 1 else begin[axis]
        e = n if op.option("end_mask", 0) >> axis & 1 else end[axis]
        b = b + n if b < 0 else b
        e = e + n if e < 0 else e
        if op.option("shrink_axis_mask", 0) >> axis & 1:
            e = b + 1
        elif op.option("offset", False):
            e = b + end[axis]
        b, e = min(max(b, 0), n), min(max(e, 0), n)
        offsets.append(b)
        sizes.append(max(0, (e - b + stride - 1) // stride))
        steps.append(stride)
    return offsets, sizes, steps


@lowers("STRIDED_SLICE")
def strided_slice(ctx: LoweringContext, op) -> None:
    x, y = ctx.input(0), ctx.output()
    begin = [int(v) for v in ctx.constant(1, "slice bounds").reshape(-1)]
    end = [int(v) for v in ctx.constant(2, "slice bounds").reshape(-1)]
    strides = [int(v) for v in ctx.constant(3, "slice strides").reshape(-1)]
    if op.option("ellipsis_mask", 0) or op.option("new_axis_mask", 0):
        raise ctx.unsupported("a STRIDED_SLICE with an ellipsis or new axis mask")
    if 0 in strides:
        raise ctx.fail("a zero stride")
    if any(s < 0 for s in strides):
        raise ctx.unsupported("a STRIDED_SLICE with a negative stride")
    offsets, sizes, steps = strided_slice_window(op, x.shape, begin, end, strides)
    result = ctx.builder.slice(ctx.input_value(0), offsets, sizes, steps)
    if int(np.prod(sizes)) != y.elements:
        raise ctx.fail(f"a slice of {int(np.prod(sizes))} values for an output of {y.elements}")
    ctx.define(0, result)


@lowers("SPLIT", "SPLIT_V")
def split(ctx: LoweringContext, op) -> None:
    if op.opcode == "SPLIT":
        axis_position, data_position = 0, 1
    else:
        axis_position, data_position = 2, 0
    x = ctx.input(data_position)
    axis = _axis(ctx, int(ctx.constant(axis_position, "a split axis").reshape(-1)[0]), len(x.shape))
    value = ctx.value(x.index)
    start = 0
    for position in range(len(op.outputs)):
        part = ctx.output(position)
        offsets = [0] * len(x.shape)
        offsets[axis] = start
        ctx.define(position, ctx.builder.slice(value, offsets, part.shape))
        start += part.shape[axis]
    if start != x.shape[axis]:
        raise ctx.fail(f"parts of {start} values along axis {axis} of {x.shape[axis]}")


@lowers("PACK")
def pack(ctx: LoweringContext, op) -> None:
    inputs = [ctx.tensor(i) for i in op.inputs]
    y = ctx.output()
    axis = _axis(ctx, int(op.option("axis", 0)), len(y.shape))
    parts = []
    for t in inputs:
        shape = list(t.shape)
        shape.insert(axis, 1)
        parts.append(ctx.builder.reshape(ctx.value(t.index), shape))
    ctx.define(0, ctx.builder.concatenate(parts, axis))


@lowers("UNPACK")
def unpack(ctx: LoweringContext, op) -> None:
    x = ctx.input(0)
    axis = _axis(ctx, int(op.option("axis", 0)), len(x.shape))
    value = ctx.value(x.index)
    for position in range(len(op.outputs)):
        offsets = [0] * len(x.shape)
        offsets[axis] = position
        sizes = list(x.shape)
        sizes[axis] = 1
        ctx.define(position, ctx.builder.slice(value, offsets, sizes))


@lowers("GATHER")
def gather(ctx: LoweringContext, op) -> None:
    x = ctx.input(0)
    indices = np.asarray(ctx.constant(1, "gather indices")).reshape(-1)
    axis = _axis(ctx, int(op.option("axis", 0)), len(x.shape))
    if op.option("batch_dims", 0):
        raise ctx.unsupported("a GATHER with batch dimensions")
    value = ctx.value(x.index)
    parts = []
    for index in indices.tolist():
        if not 0 <= index < x.shape[axis]:
            raise ctx.fail(f"gather index {index} outside 0..{x.shape[axis] - 1}")
        offsets = [0] * len(x.shape)
        offsets[axis] = index
        sizes = list(x.shape)
        sizes[axis] = 1
        parts.append(ctx.builder.slice(value, offsets, sizes))
    ctx.define(0, ctx.builder.concatenate(parts, axis))
