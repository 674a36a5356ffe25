"""An int8 average or max pool, or a mean, over an int8 tensor (LayerSpec
kinds "average_pool", "max_pool" and "mean").

TFLite's int8 AVERAGE_POOL_2D and MAX_POOL_2D work on the stored integers
(input and output share one scale and zero point): an average pool sums the
window's int8 values and divides the sum by the window's size, rounding half
away from zero, then clamps it to the activation range; a max pool takes the
window's largest value and clamps it. TFLite's int8 MEAN over the same
windows (a global average in another quantization, a squeeze-and-excitation
block's) requantizes the window's sum instead: MBQM(sum - zx * n, M, shift)
+ zy, clamped. IREE's dispatch for either is a
``linalg.fill`` of the accumulator, a ``linalg.generic`` that reduces each
window (input map ``(d0 * sy + d3, d1 * sx + d4, d2)``), and for an average
or a clamp an elementwise ``linalg.generic`` on the reduced value.

The recogniser reads the window from the input map and the window operand's
shape, and checks the arithmetic on values rather than on the form of the
operations: the reduction's body on every int8 value against every partial
result a window can reach, the output stage on every value the reduction can
give (every sum of ``n`` int8 values for an average: (sum +- n / 2) / n,
truncated, then the clamp, or for a mean the requantization whose
multiplier, shifts and constant its form gives; every int8 value for a
max). A body that differs
anywhere is refused, not run.

The space: a window of 1 .. 256 elements without dilation (one or two
dimensions: a window of one row or column, or a whole plane flattened, is
one); input and output
channel-last (H, W, C, with a batch of 1 in front or not, any of them
dropped where it has one element, as IREE drops them), the input read
from memory directly (no padding in the dispatch: TFLite's SAME padding of an
average pool divides by a count per output pixel, which IREE reads from a
table, and refuses; a max pool's padding is a copy IREE makes in a dispatch
of its own, which the pool then reads as its input); the output int8,
stored once; an
average's accumulator int32. Anything else raises NotSupported with the
reason.
"""

from __future__ import annotations

import re

import numpy as np
from iree.compiler import ir

from npukit.layer_recognition.dispatch_ir import DispatchBody, constant_int, generic_inputs_count, tensor_type
from npukit.layer_recognition.layer_spec import LayerSpec, NotSupported, TensorLayout
from npukit.layer_recognition.integer_epilogue import match_requantization
from npukit.layer_recognition.scalar_expression import (
    FLOAT_TYPES, INT8_VALUES, Node, NotEvaluable, evaluate, expression_of, walk)
from npukit.quantization.fixed_point_reference import multiply_by_quantized_multiplier_array

MAX_WINDOW = 256  # an average's sums fit int16 (the DSP kernel's lanes)
_TERM = re.compile(r"^(?:d(\d+)(?: \* (\d+))?|(\d+))$")


def _results(generic: ir.Operation, operand: int) -> list[str]:
    maps = ir.ArrayAttr(generic.attributes["indexing_maps"])
    return [str(e) for e in ir.AffineMapAttr(maps[operand]).value.results]


def _affine_terms(text: str) -> dict[int, int] | None:
    """An affine index ``d0 * 2 + d3`` as {loop: coefficient} (a constant 0 as no term); None for any other."""
    terms: dict[int, int] = {}
    for term in text.split(" + "):
        m = _TERM.match(term.strip())
        if m is None or (m.group(3) is not None and int(m.group(3)) != 0):
            return None
        if m.group(1) is not None:
            terms[int(m.group(1))] = terms.get(int(m.group(1)), 0) + int(m.group(2) or 1)
    return terms


def rounded_average(sums: np.ndarray, count: int) -> np.ndarray:
    """TFLite's int8 average: (sum + count / 2) / count for a positive sum, (sum - count / 2) / count
    otherwise, truncated towards zero."""
    adjusted = np.where(sums > 0, sums + count // 2, sums - count // 2)
    return np.sign(adjusted) * (np.abs(adjusted) // count)


def _clamp_bounds(got: np.ndarray, exact: np.ndarray, what: str) -> tuple[int, int]:
    """The activation range [low, high] with got == clamp(exact, low, high) everywhere, else NotSupported."""
    low, high = int(got.min()), int(got.max())
    if low < -128 or high > 127 or not np.array_equal(got, np.clip(exact, low, high)):
        raise NotSupported(f"a pool whose output stage is not TFLite's {what} (checked on every value it can take)")
    return low, high


def mean_output(sums: np.ndarray, bias: int, multiplier: int, shift: int, zero_point: int, low: int,
                high: int) -> np.ndarray:
    """TFLite's int8 MEAN of window sums: MBQM(sum + bias, multiplier, shift) + zero point, clamped."""
    scaled = multiply_by_quantized_multiplier_array(np.asarray(sums, np.int64) + bias, multiplier, shift)
    return np.clip(scaled + zero_point, low, high)


def shared_requantization(spec: LayerSpec) -> tuple[int, int, int] | None:
    """A mean's (bias, multiplier, shift) where every channel has the same
    (TFLite's MEAN is quantized per tensor, and both the pool kernel and
    OP_POOL take one requantization), else None."""
    if len(set(spec.multipliers)) != 1 or len(set(np.asarray(spec.bias).tolist())) != 1:
        return None
    multiplier, shift = spec.multipliers[0]
    return int(spec.bias[0]), multiplier, shift


def _mean_stage(expression, reached: np.ndarray, got: np.ndarray) -> tuple[int, int, int, int, int, int]:
    """(bias, multiplier, shift, zero point, low, high) of a window sum's
    output stage that is TFLite's MEAN: a requantization with a constant
    multiplier of the sum plus a constant, read from the expression's form
    (integer_epilogue.match_requantization), then checked on every sum the
    window can give. NotSupported otherwise."""
    stage = match_requantization(expression)
    if stage is None or stage.multiplier is None:
        raise NotSupported("a pool whose output stage is neither TFLite's average ((sum +- count / 2) / count, "
                           "clamped) nor a requantization of the sum (MEAN)")
    parts = []
    for node, name in ((stage.multiplier.multiplier, "multiplier"), (stage.multiplier.left, "left shift"),
                       (stage.multiplier.right, "right shift")):
        if node is not None and node.op != "const":
            raise NotSupported(f"a MEAN whose {name} is not a constant")
        parts.append(0 if node is None else int(node.value))
    multiplier, shift = parts[0], parts[1] - parts[2]
    accumulator = stage.accumulator if stage.bias is None else Node("arith.addi", (stage.accumulator, stage.bias),
                                                                    type="i32")
    try:  # the sum plus a constant
        centred = np.broadcast_to(np.asarray(evaluate(accumulator, {0: reached}), np.int64), reached.shape)
    except NotEvaluable as e:
        raise NotSupported(f"a MEAN whose requantized value the compiler cannot evaluate ({e})") from None
    bias = int(centred[0] - reached[0])
    low, high = max(stage.low, -128), min(stage.high, 127)
    if (not np.array_equal(centred, reached + bias) or not (0 <= multiplier < 2**31 and -31 <= shift <= 30)
            or low > high or abs(bias) > 2**29  # the kernel's sum + bias within 2^30
            or not np.array_equal(got, mean_output(reached, bias, multiplier, shift, stage.zero_point, low, high))):
        raise NotSupported("a pool whose output stage is not TFLite's MEAN, MBQM(sum + bias, multiplier, shift) "
                           "+ zero point, clamped (checked on every sum it can take)")
    return bias, multiplier, shift, stage.zero_point, low, high


def match_int8_pool(body: DispatchBody) -> LayerSpec:
    """The pool of an int8 pooling dispatch, or NotSupported with the reason."""
    names = [op.name for op in body.linalg]
    generics = [op for op in body.linalg if op.name == "linalg.generic"]
    if names.count("linalg.fill") != 1 or len(generics) not in (1, 2) or len(names) != len(generics) + 1:
        raise NotSupported("not a pool (a fill, a window reduction and at most one elementwise operation)")
    fill = next(op for op in body.linalg if op.name == "linalg.fill")
    reduction = generics[0]
    iterators = [str(a) for a in ir.ArrayAttr(reduction.attributes["iterator_types"])]
    parallel = sum("parallel" in i for i in iterators)
    reductions = len(iterators) - parallel
    kinds = ["#linalg.iterator_type<parallel>"] * parallel + ["#linalg.iterator_type<reduction>"] * reductions
    if reductions not in (1, 2) or iterators != kinds:
        raise NotSupported("a reduction that is not over a window of one or two dimensions")
    # The reduced tensor, a window operand that gives the window's shape (none where the reduction runs
    # over whole dimensions of the input, a global pool), the filled accumulator.
    acc = generic_inputs_count(reduction)
    if acc not in (1, 2) or reduction.operands[acc] != fill.results[0]:
        raise NotSupported("a window reduction that is not of one tensor into a filled accumulator")
    source = body.loads.get(reduction.operands[0])
    if source is None:
        raise NotSupported("a pool of a padded or computed input (the kernels pool a tensor in memory)")
    inputs = [_affine_terms(e) for e in _results(reduction, 0)]
    if any(t is None for t in inputs):
        raise NotSupported("a pool whose input index is not a loop or oh * stride + ky")
    if acc == 2:
        window_shape, _ = tensor_type(str(reduction.operands[1].type))
        if _results(reduction, 1) != [f"d{parallel + i}" for i in range(reductions)]:
            raise NotSupported("a pool whose window operand is not indexed by the window loops in order")
    else:
        whole = [n for n, terms in zip(source.sizes, inputs) if terms == {parallel: 1}]
        window_shape = tuple(whole) if reductions == 1 else ()
    if len(window_shape) != reductions:
        raise NotSupported("a pool whose window does not match its reduction")
    kh, kw = window_shape if reductions == 2 else (window_shape[0], 1)  # one row or column, or a plane: "H"
    count = kh * kw
    if not 1 <= count <= MAX_WINDOW:
        raise NotSupported(f"a pool over windows of {count} values (the kernels take 1 to {MAX_WINDOW})")

    # The window. IREE drops dimensions of size 1, so the loops are the output's (batch, oh, ow, channel) less
    # those, then the window's (one where the window is one row or column); each input index is a loop
    # (channel, batch), a window index alone (an output of one row or column, a whole plane) or oh * sy + ky
    # (likewise for columns).
    loops = [f"d{i}" for i in range(parallel)]
    if _results(reduction, acc) != loops:
        raise NotSupported("a pool whose output is not indexed by its loops in order")
    window = {parallel: "H", parallel + 1: "W"} if reductions == 2 else {parallel: "H"}
    roles_in: list[str | None] = []
    loop_role: dict[int, str] = {}
    stride = [1, 1]
    for terms in inputs:
        reductions = [d for d in terms if d >= parallel]
        if len(reductions) > 1 or any(c != 1 for d, c in terms.items() if d >= parallel):
            raise NotSupported("a pool whose window is dilated or mixes its rows and columns")
        if reductions:
            role = window[reductions[0]]
            outer = [d for d in terms if d < parallel]
            if len(outer) > 1:
                raise NotSupported("a pool whose window position mixes loops")
            if outer:
                loop_role[outer[0]] = role
                stride[role == "W"] = terms[outer[0]]
            roles_in.append(role)
        elif len(terms) == 1 and next(iter(terms.values())) == 1:
            roles_in.append("loop")
        elif not terms:
            roles_in.append(None)
        else:
            raise NotSupported("a pool whose input index is not a loop or oh * stride + ky")
    if sorted(r for r in roles_in if r in ("H", "W")) != sorted(window.values()):
        raise NotSupported("a pool whose window does not span one input dimension per window loop")
    if roles_in[-1] == "loop":  # channel-last: the innermost input dimension is the channel
        loop_role[next(iter(inputs[-1]))] = "C"
        roles_in[-1] = "C"
    roles_in = [None if r == "loop" else r for r in roles_in]  # a batch (checked to be 1 below)
    roles_out = tuple(loop_role.get(d) for d in range(parallel))

    # The reduction's arithmetic, on every int8 value and every partial result.
    step = expression_of(reduction)
    if any(n.type in FLOAT_TYPES for n in walk(step)) or any(n.op == "arg" and 0 < n.value < acc for n in walk(step)):
        raise NotSupported("a pool reduction in float or reading its window operand")
    init = constant_int(fill.operands[0])
    accumulator = str(reduction.results[0].type)
    if source.dtype != "i8" or init is None:
        raise NotSupported("a pool of a tensor that is not int8, or from an accumulator not filled with a constant")
    values, partial = np.meshgrid(INT8_VALUES, np.arange(-128 * count, 127 * count + 1), indexing="ij")
    pairs = np.meshgrid(INT8_VALUES, INT8_VALUES, indexing="ij")
    try:
        summed = np.array_equal(evaluate(step, {0: values, acc: partial}), partial + values)
        maxed = (np.array_equal(evaluate(step, {0: pairs[0], acc: pairs[1]}), np.maximum(*pairs))
                 and np.array_equal(evaluate(step, {0: INT8_VALUES, acc: np.full(256, init)}), INT8_VALUES))
    except NotEvaluable as e:
        raise NotSupported(f"a pool reduction the compiler cannot evaluate ({e})") from None
    if summed and init == 0 and accumulator.endswith("xi32>"):
        kind, reached = "average_pool", np.arange(-128 * count, 127 * count + 1)
    elif maxed and init <= -128:
        kind, reached = "max_pool", INT8_VALUES
    else:
        raise NotSupported("a window reduction that is neither a sum from 0 into int32 nor a maximum from -128")

    # The output stage on every value the reduction gives.
    result = reduction.results[0]
    if len(generics) == 2:
        stage = generics[1]
        operands = generic_inputs_count(stage)
        if operands != 1:
            raise NotSupported(f"a pool whose output stage reads {operands} operands, not only the window reduction (a "
                               "tensor the pooled value is combined with, such as a SUB or ADD fused after the pool, "
                               "or a count per output pixel)")
        if stage.operands[0] != result:
            raise NotSupported("a pool whose output stage does not read the window reduction")
        if any(m != loops for m in (_results(stage, 0), _results(stage, 1))):
            raise NotSupported("a pool whose output stage transposes or broadcasts")
        expression = expression_of(stage)
        if any(n.type in FLOAT_TYPES for n in walk(expression)):
            raise NotSupported("a pool whose output stage is in float")
        try:
            got = np.broadcast_to(np.asarray(evaluate(expression, {0: reached}), np.int64), reached.shape)
        except NotEvaluable as e:
            raise NotSupported(f"a pool output stage the compiler cannot evaluate ({e})") from None
        result = stage.results[0]
    elif kind == "max_pool":
        got = reached
    else:
        raise NotSupported("a window sum stored without its division (not an average)")
    stage_parameters = None
    if kind == "average_pool" and not np.array_equal(got, np.clip(rounded_average(reached, count), got.min(),
                                                                   got.max())):
        # Not the average: TFLite's MEAN (the sum requantized), or refused.
        kind, stage_parameters = "mean", _mean_stage(expression, reached, got)
        low, high = stage_parameters[-2:]
    elif kind == "average_pool":
        low, high = _clamp_bounds(got, rounded_average(reached, count), "average (sum +- count / 2) / count, clamped")
    else:
        low, high = _clamp_bounds(got, reached, "maximum, clamped")
    stored = [t for v, t in body.stores if v == result]
    if len(stored) != 1 or len(body.stores) != 1 or stored[0].dtype != "i8":
        raise NotSupported("a pool whose result is not stored once as int8")
    target = stored[0]
    if len(target.sizes) != parallel or len(source.sizes) != len(inputs):
        raise NotSupported("a pool whose tensors' ranks differ from its loops")

    def size(sizes, roles, role: str) -> int:
        return sizes[roles.index(role)] if role in roles else 1

    oh, ow, channels = (size(target.sizes, roles_out, r) for r in ("H", "W", "C"))
    ih, iw, in_channels = (size(source.sizes, roles_in, r) for r in ("H", "W", "C"))
    others = [n for n, r in zip(target.sizes, roles_out) if r is None] + \
        [n for n, r in zip(source.sizes, roles_in) if r is None]
    if any(n != 1 for n in others):
        raise NotSupported("a pool whose channels are not its input's innermost dimension, or of a batch of more "
                           "than one")
    if in_channels != channels or (oh - 1) * stride[0] + kh > ih or (ow - 1) * stride[1] + kw > iw:
        raise NotSupported("a pool whose output does not fit its input's windows")
    bias, multipliers, zero_point = np.zeros(0, np.int32), None, 0
    if stage_parameters is not None:  # per channel, as a layer's output stage
        b, multiplier, shift, zero_point, _, _ = stage_parameters
        bias, multipliers = np.full(channels, b, np.int32), [(multiplier, shift)] * channels
    return LayerSpec(kind, TensorLayout(source, tuple(roles_in)), TensorLayout(target, roles_out),
                     (channels, ih, iw), (channels, oh, ow), (kh, kw), tuple(stride), (1, 1), np.zeros(0, np.int8),
                     bias, multipliers, 0, zero_point, low, high, False)
