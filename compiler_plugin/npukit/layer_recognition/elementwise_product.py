"""An int8 elementwise product of two tensors (LayerSpec kind "mul").

TFLite's int8 MUL computes, per element, zp + MBQM((x - zx) * (y - zy), M,
shift) clamped to the activation range; IREE may fuse an elementwise
operation of one operand into it (a squeeze-and-excitation block's LOGISTIC
on its per-channel scale: y - zy becomes table[y] - zy). The recogniser
reads the dispatch's output stage (integer_epilogue.match_requantization:
constant multiplier and shifts, no bias) and finds the product it scales,
``arith.muli`` of a factor computed from x alone and one from y alone. Each
factor is a function of one int8 value, so it is tabulated on all 256 of
them with the dispatch's own arithmetic (scalar_expression.evaluate), then
kept in the smallest form that holds it exactly: the value plus a constant
(TFLite's x - zx) as that constant alone, a table that never falls by steps
of at most 15 (a fused LOGISTIC's) as 4-bit steps, otherwise an int8 table,
each plus a constant; the kernel computes zp + MBQM(fx(x) * fy(y), M, shift), clamped. Before the
layer is taken, that formula is evaluated on all 65,536 pairs (x, y) against
the dispatch's whole body: a form read wrongly is refused, not run.

The space: one ``linalg.generic``, every loop parallel, two int8 inputs read
from memory (whole, contiguous) and one int8 output stored (whole, the
shape of the loops); the output and one input ("x") indexed by every loop
in order; the other ("y") likewise (the same shape), by the innermost loop
alone (a vector along the channels, broadcast over the other dimensions) or
by none (one value); integer arithmetic only (no float operation); the
product of the two factors below 2^30 in magnitude for every pair (TFLite's
MUL: at most 255 * 255), each factor spanning at most 256 consecutive
integers (an int8 table plus a constant), a constant multiplier M in [0, 2^31) and shift in
[-31, 30]. Anything else raises NotSupported with the reason.

The LayerSpec: ``ifm`` x and ``operand`` y as rows of ``ofm_chw[0]``
channels (the innermost dimension; y's strides 0 where it is broadcast),
``ofm_chw[2]`` rows; ``weights`` the two factors as bytes (``factor_bytes``),
one multiplier; no MACs.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from iree.compiler import ir

from npukit.layer_recognition.dispatch_ir import DispatchBody, SystemTensor, map_dims
from npukit.layer_recognition.integer_epilogue import match_requantization
from npukit.layer_recognition.layer_spec import LayerSpec, NotSupported, TensorLayout
from npukit.layer_recognition.scalar_expression import (
    FLOAT_TYPES, INT8_VALUES, Node, NotEvaluable, evaluate, expression_of, walk)
from npukit.layer_recognition.table_lookup import elementwise_generic
from npukit.quantization.fixed_point_reference import multiply_by_quantized_multiplier_array

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def _arguments(node: Node) -> set[int]:
    return {n.value for n in walk(node) if n.op == "arg"}


def _rows(t: SystemTensor, channels: int, rows: int, broadcast: str) -> TensorLayout:
    """``t`` as ``rows`` rows of ``channels`` values: "none" (every element), "rows" (one vector of the
    channels, read by every row) or "all" (one value)."""
    if broadcast == "none":
        return TensorLayout(replace(t, shape=(rows, channels), offsets=(0, 0), sizes=(rows, channels)), ("W", "C"))
    if broadcast == "rows":
        return TensorLayout(replace(t, shape=(channels,), offsets=(0,), sizes=(channels,)), ("C",))
    return TensorLayout(replace(t, shape=(1,), offsets=(0,), sizes=(1,)), (None,))


def _form(m: list, t: SystemTensor, loops: list[int], target: SystemTensor) -> str | None:
    """How an input is indexed: "none" (by every loop, the output's shape), "rows" (by the innermost loop
    alone, dimensions of size 1 aside) or "all" (one value); None otherwise."""
    dims = [d for d in m if d is not None]
    if m == loops and t.shape == target.shape:
        return "none"
    if loops and dims == loops[-1:] and int(np.prod(t.shape)) == target.shape[-1]:
        return "rows"
    if not dims and int(np.prod(t.shape)) == 1:
        return "all"
    return None


def _factor(node: Node, arg: int) -> np.ndarray:
    try:
        values = evaluate(node, {arg: INT8_VALUES})
    except NotEvaluable as e:
        raise NotSupported(f"an elementwise product whose factor the compiler cannot evaluate ({e})") from None
    return np.broadcast_to(np.asarray(values, np.int64), INT8_VALUES.shape).copy()


STEP_LIMIT = 15  # the largest step a table stored as 4-bit steps holds


def _compact(f: np.ndarray, steps_allowed: bool = True) -> tuple[int, int, np.ndarray | None]:
    """A factor tabulated on the 256 int8 values as (c, form, data): form 0, no data, where f is the value plus
    c; form 1, its 255 steps as 4-bit values (128 bytes, low nibble first), where f never falls and never
    rises by more than 15 from one value to the next (a LOGISTIC's, a hard sigmoid's): f[-128] = c - 128 and
    each next entry the previous plus its step (where ``steps_allowed``); form 2, an int8 table t with
    f = t + c."""
    c = int(f[0]) - int(INT8_VALUES[0])
    if np.array_equal(f, INT8_VALUES + c):
        return c, 0, None
    low, high = int(f.min()), int(f.max())
    if high - low > 255:
        raise NotSupported(f"an elementwise product with a factor spanning {low}..{high} (the kernels take a factor "
                           "of at most 256 consecutive values: an int8 table plus a constant)")
    steps = np.diff(f)
    if steps_allowed and steps.min() >= 0 and steps.max() <= STEP_LIMIT:
        nibbles = np.append(steps, 0).astype(np.uint8)
        return int(f[0]) + 128, 1, (nibbles[0::2] | nibbles[1::2] << 4).view(np.int8)
    c = low + 128
    return c, 2, (f - c).astype(np.int8)


def factor_bytes(fx: np.ndarray, fy: np.ndarray) -> np.ndarray:
    """The kernel's form of the two factors (s8_mul.c): int32 cx, cy and each factor's form (_compact) in
    two bits of a third int32, x's the low ones, then x's data, then y's. One factor at most is stored as
    steps (the kernel unpacks one): y's (a gate's) where both could be."""
    cy, form_y, dy = _compact(fy)
    cx, form_x, dx = _compact(fx, steps_allowed=form_y != 1)
    head = np.array([cx, cy, form_x | form_y << 2], "<i4").view(np.int8)
    return np.concatenate([head] + [d for d in (dx, dy) if d is not None])


def factors_of(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two factors (x's, y's), each tabulated on the 256 int8 values, from their ``factor_bytes`` form."""
    data = np.asarray(data, np.int8)
    cx, cy, forms = (int(v) for v in data[:12].view("<i4"))
    at = 12
    factors = []
    for c, form in ((cx, forms & 3), (cy, forms >> 2 & 3)):
        if form == 0:
            factors.append(INT8_VALUES.astype(np.int64) + c)
        elif form == 1:
            nibbles = data[at:at + 128].view(np.uint8)
            steps = np.stack([nibbles & 15, nibbles >> 4], axis=1).reshape(-1)[:255].astype(np.int64)
            factors.append(c - 128 + np.concatenate([[0], np.cumsum(steps)]))
            at += 128
        else:
            factors.append(data[at:at + 256].astype(np.int64) + c)
            at += 256
    return factors[0], factors[1]


def _constant(node: Node | None, name: str) -> int:
    if node is None:
        return 0
    if node.op != "const":
        raise NotSupported(f"an elementwise product whose {name} is not a constant")
    return int(node.value)


def match_elementwise_product(body: DispatchBody) -> LayerSpec:
    """The layer of an int8 elementwise product dispatch, or NotSupported with the reason."""
    generic, iterators = elementwise_generic(body, 2)
    sources = [body.loads.get(generic.operands[i]) for i in range(2)]
    stored = [t for v, t in body.stores if v == generic.results[0]]
    if any(s is None for s in sources) or len(stored) != 1 or len(body.stores) != 1:
        raise NotSupported("an elementwise product whose inputs or output are not tensors in memory")
    target = stored[0]
    if any(t.dtype != "i8" for t in (*sources, target)):
        raise NotSupported("an elementwise product that is not int8 by int8 to int8")
    if not all(t.is_whole for t in (*sources, target)):
        raise NotSupported("an elementwise product on a window of a tensor")
    maps = [map_dims(m) for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
    loops = list(range(len(iterators)))
    if maps[2] != loops:
        raise NotSupported("an elementwise product whose output is not indexed by every loop in order")
    forms = [_form(m, t, loops, target) for m, t in zip(maps[:2], sources)]
    if "none" not in forms or None in forms:
        raise NotSupported("an elementwise product that transposes or broadcasts other than along the channels")
    x = forms.index("none")
    y = 1 - x
    expression = expression_of(generic)
    if any(n.type in FLOAT_TYPES for n in walk(expression)):
        raise NotSupported("an elementwise product in float")
    stage = match_requantization(expression)
    if stage is None or stage.multiplier is None or stage.bias is not None:
        raise NotSupported("an elementwise operation of two tensors that is not a requantized product")
    product = stage.accumulator
    if product.op != "arith.muli" or len(product.operands) != 2:
        raise NotSupported("an elementwise operation of two tensors that is not a requantized product")
    left, right = product.operands
    if _arguments(left) == {y} and _arguments(right) == {x}:
        left, right = right, left
    if _arguments(left) != {x} or _arguments(right) != {y}:
        raise NotSupported("an elementwise product whose factors each read more than one input")
    fx, fy = _factor(left, x), _factor(right, y)
    bound = int(np.abs(fx).max()) * int(np.abs(fy).max())
    if bound >= 1 << 30:
        raise NotSupported(f"an elementwise product of factors up to {bound} (the kernels take products below 2^30)")
    multiplier = _constant(stage.multiplier.multiplier, "multiplier")
    shift = _constant(stage.multiplier.left, "left shift") - _constant(stage.multiplier.right, "right shift")
    if not (0 <= multiplier <= INT32_MAX and -31 <= shift <= 30):
        raise NotSupported(f"an elementwise product with multiplier {multiplier} and shift {shift}")
    # The formula against the dispatch's own arithmetic on every pair of int8 values.
    xs, ys = np.meshgrid(INT8_VALUES, INT8_VALUES, indexing="ij")
    try:
        want = np.broadcast_to(np.asarray(evaluate(expression, {x: xs, y: ys}), np.int64), xs.shape)
    except NotEvaluable as e:
        raise NotSupported(f"an elementwise product the compiler cannot evaluate ({e})") from None
    scaled = multiply_by_quantized_multiplier_array(fx[xs + 128] * fy[ys + 128], multiplier, shift)
    got = np.clip(scaled + stage.zero_point, stage.low, stage.high)
    if not np.array_equal(got, want):
        raise NotSupported("an elementwise product whose arithmetic is not TFLite's MUL (checked on every pair)")
    channels = int(target.shape[-1]) if target.shape else 1
    rows = int(np.prod(target.shape)) // channels
    spec = LayerSpec("mul", _rows(sources[x], channels, rows, "none"), _rows(target, channels, rows, "none"),
                     (channels, 1, rows), (channels, 1, rows), (1, 1), (1, 1), (1, 1), factor_bytes(fx, fy),
                     np.zeros(1, np.int32), [(multiplier, shift)], 0, stage.zero_point, max(stage.low, -128),
                     min(stage.high, 127), False)
    spec.operand = _rows(sources[y], channels, rows, forms[y])
    return spec
