"""Multiply-accumulates of a linalg operation, for instructions-per-MAC figures.

A contraction (a linalg op with reduction loops whose body multiplies) does
one MAC per point of its iteration space; the size of each loop comes from an
operand dimension that the loop indexes directly (the output for parallel
loops, the filter or right-hand side for reduction loops). Elementwise ops,
pooling (no multiply) and softmax count zero.
"""

from __future__ import annotations

from iree.compiler import ir

_MULTIPLY = ("arith.muli", "arith.mulf")


def _static_shape(value: ir.Value) -> list[int] | None:
    try:
        shaped = ir.ShapedType(value.type)
    except (ValueError, TypeError):
        return None
    if not shaped.has_rank or not shaped.has_static_shape:
        return None
    return list(shaped.shape)


def _body_multiplies(op: ir.Operation) -> bool:
    if not op.regions or not op.regions[0].blocks:
        return False
    return any(inner.operation.name in _MULTIPLY for inner in op.regions[0].blocks[0].operations)


def _product(values) -> int:
    total = 1
    for v in values:
        total *= v
    return total


def _named_macs(op: ir.Operation) -> int:
    """Named contractions that carry no indexing maps: output points times
    the reduction extent read off the first input or the filter."""
    name = op.name.removeprefix("linalg.").removesuffix("_q")
    shapes = [_static_shape(v) for v in op.operands]
    if len(shapes) < 3 or any(s is None for s in shapes[:2]) or shapes[-1] is None:
        return 0
    lhs, rhs, out = shapes[0], shapes[1], shapes[-1]
    if name in ("matmul", "batch_matmul", "matvec", "batch_matvec"):
        return _product(out) * lhs[-1]
    if name == "vecmat":
        return _product(out) * lhs[-1]
    if name in ("conv_2d_nhwc_hwcf", "conv_1d_nwc_wcf", "conv_3d_ndhwc_dhwcf"):
        return _product(out) * _product(rhs[:-1])
    if name in ("conv_2d_nchw_fchw",):
        return _product(out) * _product(rhs[1:])
    if name.startswith("depthwise_conv_2d_nhwc_hwc"):
        return _product(out) * rhs[0] * rhs[1]
    return 0


def linalg_macs(op: ir.Operation) -> int:
    """MACs of |op| (0 when it is not a contraction or its shapes are dynamic)."""
    if "indexing_maps" not in op.attributes or "iterator_types" not in op.attributes:
        return _named_macs(op)
    iterators = [str(t) for t in ir.ArrayAttr(op.attributes["iterator_types"])]
    if not any("reduction" in t for t in iterators) or not _body_multiplies(op):
        return 0
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    sizes: list[int | None] = [None] * len(iterators)
    for operand, amap in zip(op.operands, maps):
        shape = _static_shape(operand)
        if shape is None:
            continue
        for dim, expr in zip(shape, amap.results):
            try:
                position = ir.AffineDimExpr(expr).position
            except ValueError:
                continue  # a compound index (a convolution's input window)
            if sizes[position] is None:
                sizes[position] = dim
    if any(s is None for s in sizes):
        return 0
    return _product(sizes)
