"""The integer output stages the TFLite frontend emits, read back from an
epilogue's expression tree (the frontend writes them with
npukit.quantization.fixed_point; IREE keeps them, folding the constants of
per-tensor parameters):

- requantization: ``clamp(zp + MBQM(acc + bias, M, shift), lo, hi)`` with
  TFLite's double rounding (a saturating left shift, the rounding doubling
  high multiply, a rounding right shift), bias and parameters per channel
  (block arguments read along the channel dimension) or constants;
- a fully connected layer's: ``clamp(zp + round(double(acc + bias) * s), lo, hi)``;
- TFLite's int8 ADD of two such values or of one and an int8 tensor.

Each matcher accounts for every node of the tree it accepts. Where IREE's
integer range analysis has proved a value's sign it simplifies the code
(an unsigned extension or division, a rounding nudge or threshold folded to
a constant); the matchers accept those forms too, and the layer's
parameters are then checked by evaluating the whole expression
(integer_parameters), so a form read wrongly is refused, not used.
"""

from __future__ import annotations

from dataclasses import dataclass

from npukit.layer_recognition.scalar_expression import Node, commuted, walk

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def _ops(node: Node, name: str, count: int | None = None) -> tuple[Node, ...] | None:
    if node.op != name or (count is not None and len(node.operands) != count):
        return None
    return node.operands


def _is_const(node: Node, value) -> bool:
    return node.op == "const" and node.value == value


def _extended(node: Node) -> Node | None:
    """The operand of a sign (or, for a value known not negative, zero) extension."""
    inner = _ops(node, "arith.extsi", 1) or _ops(node, "arith.extui", 1)
    return inner[0] if inner else None


def _parameter(node: Node, width64: bool = False) -> Node | None:
    """A parameter operand: a constant, or a block argument (extended to i64
    when ``width64``)."""
    if node.op == "const":
        return node
    if width64:
        inner = _extended(node)
        return inner if inner is not None and inner.op == "arg" else None
    return node if node.op == "arg" else None


@dataclass(frozen=True)
class Clamp:
    """``unsigned_below_zero``: the minimum is unsigned (minui) and the lower
    bound negative, a clamp only for values that are never negative."""

    inner: Node
    low: int
    high: int
    unsigned_below_zero: bool = False


def match_clamp(node: Node) -> Clamp | None:
    """minsi(maxsi(x, lo), hi) with constant bounds (either nesting order).
    Where IREE's range analysis has proved the value it bounds not negative
    it writes the outer minimum unsigned (minui): the same clamp for the
    values it then sees. With a lower bound that is not negative that holds
    for every value; with a negative one (an ADD whose output zero point
    keeps its sum positive), only for values that are never negative, which
    the caller must prove (``unsigned_below_zero``)."""
    bounds: dict[str, int] = {}
    unsigned = False
    for _ in range(2):
        for kind, name in (("high", "arith.minsi"), ("high", "arith.minui"), ("low", "arith.maxsi")):
            for x, c in commuted(node, name):
                if c.op == "const" and kind not in bounds:
                    bounds[kind] = int(c.value)
                    unsigned = unsigned or name == "arith.minui"
                    node = x
                    break
            else:
                continue
            break
    if set(bounds) != {"low", "high"}:
        return None
    return Clamp(node, bounds["low"], bounds["high"], unsigned and bounds["low"] < 0)


def _saturated_32(node: Node) -> Node | None:
    """trunci(clamp(x : i64, INT32_MIN, INT32_MAX)) -> x."""
    inner = _ops(node, "arith.trunci", 1)
    clamp = match_clamp(inner[0]) if inner else None
    if clamp is None or clamp.unsigned_below_zero or (clamp.low, clamp.high) != (INT32_MIN, INT32_MAX):
        return None
    return clamp.inner


@dataclass(frozen=True)
class Multiplier:
    """TFLite's MBQM of ``value``: multiplier and left/right shifts as
    constants or block arguments (None: no shift)."""

    value: Node
    multiplier: Node
    left: Node | None
    right: Node | None


def _rounding_right_shift(node: Node) -> tuple[Node, Node] | None:
    """RDBPOT(y, e): (y, e)."""
    for shifted, carry in commuted(node, "arith.addi"):
        parts = _ops(shifted, "arith.shrsi", 2)
        up = _ops(carry, "arith.extui", 1)
        compare = _ops(up[0], "arith.cmpi", 2) if up else None
        if parts is None or compare is None or up[0].value != 4:  # sgt
            continue
        y, exponent = parts
        remainder, threshold = compare
        masked = _ops(remainder, "arith.andi", 2)
        if masked is None:
            continue
        mask = next((m for v, m in commuted(remainder, "arith.andi") if v == y), None)
        if mask is None or not _is_mask(mask, exponent):
            continue
        if _is_threshold(threshold, y, mask, exponent):
            return y, exponent
    return None


def _is_mask(mask: Node, exponent: Node) -> bool:
    """(-1 << e) ^ -1, or its folded value 2^e - 1."""
    if exponent.op == "const":
        return _is_const(mask, (1 << int(exponent.value)) - 1)
    for shifted, ones in commuted(mask, "arith.xori"):
        parts = _ops(shifted, "arith.shli", 2)
        if parts and _is_const(ones, -1) and _is_const(parts[0], -1) and parts[1] == exponent:
            return True
    return False


def _is_negative_flag(node: Node, y: Node) -> bool:
    """extui(y < 0)."""
    inner = _ops(node, "arith.extui", 1)
    compare = _ops(inner[0], "arith.cmpi", 2) if inner else None
    return compare is not None and inner[0].value == 2 and compare[0] == y and _is_const(compare[1], 0)


def _is_threshold(node: Node, y: Node, mask: Node, exponent: Node) -> bool:
    """(mask >> 1) + (y < 0), with the half folded where e is constant (and
    the sign flag too, where y's sign is known)."""
    if exponent.op == "const":
        half = ((1 << int(exponent.value)) - 1) >> 1
        if node.op == "const":
            return node.value in (half, half + 1)
        if half == 0:
            return _is_negative_flag(node, y)
        return any(_is_const(c, half) and _is_negative_flag(f, y) for f, c in commuted(node, "arith.addi"))
    for halved, flag in commuted(node, "arith.addi"):
        parts = _ops(halved, "arith.shrsi", 2)
        if parts and parts[0] == mask and _is_const(parts[1], 1) and _is_negative_flag(flag, y):
            return True
    return False


def _doubling_high_multiply(node: Node) -> tuple[Node, Node] | None:
    """SRDHM(x, m) for a multiplier that cannot be INT32_MIN: (x, m)."""
    inner = _ops(node, "arith.trunci", 1)
    divided = (_ops(inner[0], "arith.divsi", 2) or _ops(inner[0], "arith.divui", 2)) if inner else None
    if divided is None or not _is_const(divided[1], 1 << 31):
        return None
    for product, nudge in commuted(divided[0], "arith.addi"):
        if not (_is_nudge(nudge, product) or _is_const(nudge, 1 << 30) or _is_const(nudge, 1 - (1 << 30))):
            continue
        for x, m in commuted(product, "arith.muli"):
            wide = _extended(x)
            multiplier = _parameter(m, width64=True)
            if wide is not None and multiplier is not None and x.type == "i64":
                return wide, multiplier
    return None


def _is_nudge(node: Node, product: Node) -> bool:
    """product >= 0 ? 2^30 : 1 - 2^30."""
    select = _ops(node, "arith.select", 3)
    if select is None or not _is_const(select[1], 1 << 30) or not _is_const(select[2], 1 - (1 << 30)):
        return False
    compare = _ops(select[0], "arith.cmpi", 2)
    return compare is not None and select[0].value == 5 and compare[0] == product and _is_const(compare[1], 0)


def _saturating_left_shift(node: Node) -> tuple[Node, Node] | None:
    """sat32(ext(x) << s): (x, s)."""
    shifted = _saturated_32(node)
    parts = _ops(shifted, "arith.shli", 2) if shifted else None
    if parts is None:
        return None
    wide = _extended(parts[0])
    shift = _parameter(parts[1], width64=True)
    if wide is None or shift is None:
        return None
    return wide, shift


def match_multiplier(node: Node) -> Multiplier | None:
    """MBQM(x, M, shift) in FixedPoint's form."""
    right = None
    shifted = _rounding_right_shift(node)
    if shifted is not None:
        node, right = shifted
        if _parameter(right) is None:
            return None
    product = _doubling_high_multiply(node)
    if product is None:
        return None
    value, multiplier = product
    left = None
    widened = _saturating_left_shift(value)
    if widened is not None:
        value, left = widened
    return Multiplier(value, multiplier, left, right)


@dataclass(frozen=True)
class Requantization:
    """zp + MBQM(accumulator + bias), or zp + round(double(acc + bias) *
    scale) with the double given as (high, low, shift) parts, clamped."""

    accumulator: Node
    bias: Node | None
    multiplier: Multiplier | None
    scale_parts: tuple[Node, Node, Node] | None
    zero_point: int
    low: int
    high: int


def _offset(node: Node) -> tuple[Node, int]:
    """x + c (or x - c) with a constant c: (x, c); else (node, 0)."""
    for x, c in commuted(node, "arith.addi"):
        if c.op == "const":
            return x, int(c.value)
    parts = _ops(node, "arith.subi", 2)
    if parts and parts[1].op == "const":
        return parts[0], -int(parts[1].value)
    return node, 0


def _biased(node: Node) -> tuple[Node, Node | None]:
    """acc + bias with the bias a constant or an argument: (acc, bias)."""
    for acc, bias in commuted(node, "arith.addi"):
        if acc.op == "arg" and _parameter(bias) is not None:
            return acc, bias
    return node, None


def _rounded_once(node: Node) -> tuple[Node, tuple[Node, Node, Node]] | None:
    """FixedPoint.scale_rounded_once(x, high, low, shift): (x, (high, low,
    shift)). Read from its anchors, the product of |x| with the
    significand's two halves and the exponent's subtraction; the rest of the
    arithmetic is checked by evaluating it (integer_parameters)."""
    if _saturated_32(node) is None:
        return None
    split = None
    for n in walk(node):
        for product_high, carried in commuted(n, "arith.addi"):
            parts = _ops(carried, "arith.shrui", 2)
            if parts is None or not _is_const(parts[1], 32):
                continue
            high = next(((a, m) for a, m in commuted(product_high, "arith.muli")
                         if _parameter(m, width64=True) is not None), None)
            low = next(((a, m) for a, m in commuted(parts[0], "arith.muli")
                        if _parameter(m, width64=True) is not None and high is not None and a == high[0]), None)
            if high and low:
                split = (high[0], _parameter(high[1], width64=True), _parameter(low[1], width64=True))
                break
        if split:
            break
    if split is None:
        return None
    magnitude, high, low = split
    choice = _ops(magnitude, "arith.select", 3)
    if choice is None or _ops(choice[1], "arith.subi", 2) is None:
        return None
    wide = _ops(choice[2], "arith.extsi", 1)
    if wide is None:
        return None
    shift = None
    for n in walk(node):
        select = _ops(n, "arith.select", 3)
        difference = _ops(select[1], "arith.subi", 2) if select else None
        if difference and difference[0] == select[2] and _parameter(select[2], width64=True) is not None:
            shift = _parameter(select[2], width64=True)
            break
    if shift is None:
        return None
    return wide[0], (high, low, shift)


def match_requantization(node: Node) -> Requantization | None:
    """An int8/int16 output stage (trunci of the clamped value); its value
    takes any sign, so an unsigned minimum below a negative bound is not its
    clamp."""
    narrowed = _ops(node, "arith.trunci", 1)
    clamp = match_clamp(narrowed[0]) if narrowed else None
    if clamp is None or clamp.unsigned_below_zero:
        return None
    value, zero_point = _offset(clamp.inner)
    once = _rounded_once(value)
    if once is not None:
        accumulator, bias = _biased(once[0])
        return Requantization(accumulator, bias, None, once[1], zero_point, clamp.low, clamp.high)
    multiplier = match_multiplier(value)
    if multiplier is None:
        return None
    accumulator, bias = _biased(multiplier.value)
    return Requantization(accumulator, bias, multiplier, None, zero_point, clamp.low, clamp.high)


@dataclass(frozen=True)
class AddOperand:
    """One operand of TFLite's ADD: an int8 block argument (``tensor``) or a
    requantized accumulator computed in the body (``requantized``)."""

    tensor: Node | None
    requantized: Requantization | None
    zero_point: int
    multiplier: Multiplier


@dataclass(frozen=True)
class Addition:
    first: AddOperand
    second: AddOperand
    left_shift: int
    output: Multiplier
    zero_point: int
    low: int
    high: int
    nonnegative: bool = False  # the clamp holds only if zp + MBQM(a' + b') is never negative


def _add_operand(node: Node) -> AddOperand | None:
    """MBQM((ext(q) - zp) << left_shift) with q an int8 value."""
    scaled = match_multiplier(node)
    if scaled is None or scaled.left is not None:
        return None
    parts = _ops(scaled.value, "arith.shli", 2)
    if parts is None or parts[1].op != "const":
        return None
    centred, negative_zp = _offset(parts[0])
    source = _extended(centred)
    if source is None:
        return None
    if source.op == "arg":
        return AddOperand(source, None, -negative_zp, scaled)
    requantized = match_requantization(source)
    if requantized is None:
        return None
    return AddOperand(None, requantized, -negative_zp, scaled)


def match_addition(node: Node) -> Addition | None:
    """TFLite's int8 ADD: clamp(zp + MBQM(a' + b')), a' and b' add operands."""
    narrowed = _ops(node, "arith.trunci", 1)
    clamp = match_clamp(narrowed[0]) if narrowed else None
    if clamp is None:
        return None
    value, zero_point = _offset(clamp.inner)
    output = match_multiplier(value)
    if output is None or output.left is not None:
        return None
    for a, b in commuted(output.value, "arith.addi"):
        first, second = _add_operand(a), _add_operand(b)
        if first is None or second is None:
            continue
        shifts = {int(_ops(o.multiplier.value, "arith.shli", 2)[1].value) for o in (first, second)}
        if len(shifts) != 1:
            return None
        return Addition(first, second, shifts.pop(), output, zero_point, clamp.low, clamp.high,
                        clamp.unsigned_below_zero)
    return None
