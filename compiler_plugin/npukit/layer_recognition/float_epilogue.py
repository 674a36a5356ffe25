"""The float requantization epilogues IREE produces for quantized models, read
as expression trees and matched structurally.

IREE lowers a QDQ convolution to an i8 x i8 -> i32 contraction followed by
an elementwise ``linalg.generic`` that dequantizes the accumulator, adds the
bias, applies the activation and quantizes again in f32::

    q = fptosi(clamp(roundeven(act((float(acc - corr) * s_in * s_w) + b) / s_out) + zp, lo, hi))

and a residual addition as two such dequantize/add/quantize chains. The
matchers here recognise those shapes (commuted operands included) and return
their parts: which block arguments and constants play which role.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npukit.layer_recognition.scalar_expression import Node, commuted
from npukit.quantization.requantization import as_f32


def _is(node: Node, op: str) -> bool:
    return node.op == op


def _const(node: Node) -> float | None:
    return float(node.value) if node.op == "const" else None


# cmpf predicates (arith.CmpFPredicate): ogt=2, oge=3, ugt=9, uge=10.
_GREATER = {2, 3, 9, 10}


@dataclass(frozen=True)
class Quantize:
    inner: Node
    scale: float
    zero_point: int
    low: int
    high: int


def match_quantize(node: Node) -> Quantize | None:
    """fptosi(min(max(roundeven(x / s) + zp, lo), hi)) to i8."""
    if not _is(node, "arith.fptosi"):
        return None
    clamp = node.operands[0]
    bounds: dict[str, float] = {}
    for _ in range(2):
        if clamp.op not in ("arith.minnumf", "arith.maxnumf", "arith.minimumf", "arith.maximumf"):
            break
        kind = "high" if "min" in clamp.op else "low"
        for x, c in commuted(clamp, clamp.op):
            if _const(c) is not None:
                bounds[kind] = _const(c)
                clamp = x
                break
        else:
            return None
    if set(bounds) != {"low", "high"}:
        return None
    for rounded, zp in commuted(clamp, "arith.addf"):
        if _const(zp) is None or not _is(rounded, "math.roundeven"):
            continue
        divided = rounded.operands[0]
        if _is(divided, "arith.divf") and _const(divided.operands[1]) is not None:
            zp_value = _const(zp)
            if zp_value != round(zp_value):
                return None
            return Quantize(divided.operands[0], _const(divided.operands[1]), int(zp_value),
                            int(bounds["low"]), int(bounds["high"]))
    return None


@dataclass(frozen=True)
class Activation:
    inner: Node
    kind: str  # "none", "relu" or "relu6"-like upper bound
    upper: float | None = None


def match_activation(node: Node) -> Activation:
    upper = None
    for x, c in commuted(node, "arith.minnumf"):
        if _const(c) is not None:
            upper, node = _const(c), x
            break
    if _is(node, "arith.select") and len(node.operands) == 3:
        cond, a, b = node.operands
        if (_is(cond, "arith.cmpf") and cond.value in _GREATER and cond.operands[0] == a
                and _const(cond.operands[1]) == 0.0 and _const(b) == 0.0):
            return Activation(a, "relu", upper)
    for x, c in commuted(node, "arith.maxnumf"):
        if _const(c) == 0.0:
            return Activation(x, "relu", upper)
    if upper is not None:
        return Activation(node, "unknown")
    return Activation(node, "none")


@dataclass(frozen=True)
class Dequantize:
    """float(q - zp) * scale, where q is an i8 value (``source``) or an i32
    accumulator minus a correction (``correction`` set)."""

    source: Node
    zero_point: int
    scales: tuple[Node, ...]


def _scale_chain(node: Node, depth: int = 2) -> tuple[Node, tuple[Node, ...]] | None:
    """x * a [* b]: the innermost sitofp and the factors."""
    if _is(node, "arith.sitofp"):
        return node, ()
    if depth == 0:
        return None
    for x, factor in commuted(node, "arith.mulf"):
        inner = _scale_chain(x, depth - 1)
        if inner is not None and factor.op in ("arg", "const"):
            return inner[0], inner[1] + (factor,)
    return None


def match_dequantize_int8(node: Node) -> Dequantize | None:
    """float(ext(q) - zp) * s with q an int8 value."""
    chain = _scale_chain(node, 1)
    if chain is None or len(chain[1]) != 1:
        return None
    sub = chain[0].operands[0]
    if _is(sub, "arith.subi") and _is(sub.operands[0], "arith.extsi") and _const(sub.operands[1]) is not None:
        return Dequantize(sub.operands[0].operands[0], int(_const(sub.operands[1])), chain[1])
    return None


@dataclass(frozen=True)
class Accumulator:
    """(float(acc - correction) * scales...) + bias."""

    accumulator: Node
    correction: Node | None
    scales: tuple[Node, ...]
    bias: Node | None


def match_accumulator(node: Node) -> Accumulator | None:
    bias = None
    for x, b in commuted(node, "arith.addf"):
        if b.op == "arg":
            bias, node = b, x
            break
    chain = _scale_chain(node)
    if chain is None or not chain[1]:
        return None
    value = chain[0].operands[0]
    if _is(value, "arith.subi"):
        return Accumulator(value.operands[0], value.operands[1], chain[1], bias)
    return Accumulator(value, None, chain[1], bias)


@dataclass(frozen=True)
class RequantizedContraction:
    accumulator: Accumulator
    activation: Activation
    output: Quantize


def _activated_output(node: Node) -> tuple[Quantize, Activation] | None:
    """quantize(act(x)) with a known activation."""
    quantize = match_quantize(node)
    if quantize is None:
        return None
    activation = match_activation(quantize.inner)
    return None if activation.kind == "unknown" else (quantize, activation)


def match_requantized(node: Node) -> RequantizedContraction | None:
    output = _activated_output(node)
    accumulator = match_accumulator(output[1].inner) if output else None
    if accumulator is None:
        return None
    return RequantizedContraction(accumulator, output[1], output[0])


@dataclass(frozen=True)
class ResidualAdd:
    """quantize(act(dequantize(requantized contraction) + dequantize(residual))).
    The residual is an int8 input (``residual.source`` a block argument) or,
    where IREE fused another layer's output stage into this dispatch, that
    layer's requantized int32 accumulators (``residual_requantized``)."""

    contraction: RequantizedContraction
    contraction_scale: Node
    contraction_zero_point: int
    residual: Dequantize
    activation: Activation
    output: Quantize
    residual_requantized: RequantizedContraction | None = None


def accumulates(match: RequantizedContraction, arg: int) -> bool:
    """Whether ``match`` requantizes block argument ``arg``'s accumulators."""
    acc = match.accumulator.accumulator
    return acc.op == "arg" and acc.value == arg


def match_residual_add(node: Node, contraction_arg: int) -> ResidualAdd | None:
    """The residual addition of the contraction's requantized result, the
    contraction's accumulators being block argument ``contraction_arg``."""
    output = _activated_output(node)
    if output is None:
        return None
    quantize, activation = output
    for a, b in commuted(activation.inner, "arith.addf"):
        first, second = match_dequantize_int8(a), match_dequantize_int8(b)
        if first is None or second is None:
            continue
        contraction = match_requantized(first.source)
        if contraction is None or not accumulates(contraction, contraction_arg):
            continue
        if second.source.op == "arg":
            return ResidualAdd(contraction, first.scales[0], first.zero_point, second, activation, quantize)
        computed = match_requantized(second.source)
        if computed is not None and computed.accumulator.accumulator.op == "arg":
            return ResidualAdd(contraction, first.scales[0], first.zero_point, second, activation, quantize,
                               computed)
    return None


def activation_range(act: Activation, out: Quantize) -> tuple[int, int]:
    """The int8 range the fused activation leaves: TFLite's activation_min/max."""
    low, high = max(-128, out.low), min(127, out.high)
    if act.kind == "relu":
        low = max(low, out.zero_point)
    if act.upper is not None:
        high = min(high, out.zero_point + int(round(act.upper / as_f32(out.scale))))
    return low, high


def scalar(node: Node) -> float | None:
    return _const(node)


def per_channel(node: Node, values: dict[int, np.ndarray]) -> np.ndarray | None:
    """A factor as an array: a constant, or the per-channel block argument's values."""
    if node.op == "const":
        return np.array(float(node.value))
    if node.op == "arg":
        return values.get(node.value)
    return None
