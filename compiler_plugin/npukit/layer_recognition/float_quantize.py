"""A float32 tensor quantized to int8 (LayerSpec kind "quantize"): TFLite's
QUANTIZE of a float input, a model's first operation where it takes float.

TFLite quantizes a float x as zp + round(x / scale): the division in binary32,
rounded half away from zero; a quotient that does not fit int32 (NaN, an
infinity, |x / scale| >= 2^31) gives INT32_MIN, as on x86, to which the zero
point is added with int32 wrap-around; then the clamp to int8. The TFLite
frontend writes exactly that into one elementwise ``linalg.generic``
(frontends/tflite/mlir_builder.round_half_away_f32): the division, the
truncation, the fraction compared with +-0.5, the clamp. The kernel
(kernels/s8_quantize.c) performs the same binary32 operations in the same
order, so it computes what the dispatch computes on every input.

The recogniser reads the divisor (the one ``arith.divf`` of the input by a
constant, the ``arith.mulf`` by its reciprocal IREE makes of a division
by a power of two, or none for a scale of 1), finds the zero point and the clamp by evaluating the body on whole
multiples of the scale, and then compares the body with the kernel's formula
on every input where the result can change and around it: a few units in the
last place either side of each half-integer multiple of the scale within the
clamp (and two beyond it), whole multiples, zeros, infinities, NaN, the edges
of int32 and a spread of other values. A body that differs anywhere is
refused, not run.

The space: one ``linalg.generic``, every loop parallel, one float32 input and
one int8 output, both whole and contiguous with the same shape and the
identity map. Anything else raises NotSupported with the reason.
"""

from __future__ import annotations

import numpy as np

from npukit.layer_recognition.dispatch_ir import DispatchBody
from npukit.layer_recognition.layer_spec import LayerSpec, NotSupported
from npukit.layer_recognition.scalar_expression import Node, NotEvaluable, evaluate, expression_of, walk
from npukit.layer_recognition.table_lookup import elementwise_one_to_one, flat

F32 = np.float32
INT32_MIN = -(1 << 31)


def quantized(x: np.ndarray, scale: float, zero_point: int, low: int, high: int) -> np.ndarray:
    """The kernel's formula (s8_quantize.c) in numpy's binary32 arithmetic."""
    x = np.asarray(x, F32)
    with np.errstate(all="ignore"):
        r = x / F32(scale)
        inside = np.abs(r) < F32(2.0 ** 31)
        safe = np.where(inside, r, F32(0))
        whole = np.trunc(safe).astype(np.int64)
        fraction = safe - whole.astype(F32)
    q = whole + (fraction >= F32(0.5)) - (fraction <= F32(-0.5))
    q = np.where(inside, q, INT32_MIN)
    wrapped = (q + zero_point + (1 << 31)) % (1 << 32) - (1 << 31)
    return np.clip(wrapped, low, high)


def _probes(scale: float, zero_point: int, low: int, high: int) -> np.ndarray:
    """The inputs the formula is checked on (see the module's docstring)."""
    ks = np.arange(low - zero_point - 2, high - zero_point + 3, dtype=np.float64)
    centres = np.concatenate([(ks + 0.5) * scale, (ks - 0.5) * scale, ks * scale]).astype(F32)
    near = [centres]
    up, down = centres.copy(), centres.copy()
    for _ in range(4):
        up, down = np.nextafter(up, F32(np.inf)), np.nextafter(down, F32(-np.inf))
        near += [up, down]
    rng = np.random.default_rng(0)
    spread = [rng.uniform(-300, 300, 20000) * scale, np.exp(rng.uniform(-80, 80, 4000)) * rng.choice([-1, 1], 4000)]
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** 31 * scale, -(2.0 ** 31) * scale, 3e38, -3e38, 1e-45]
    with np.errstate(over="ignore"):
        values = np.concatenate(near + [np.asarray(v, F32) for v in spread] + [np.asarray(edges, F32)])
    return np.concatenate([values, np.nextafter(values[-10:-4], F32(0))])


def match_float_quantize(body: DispatchBody) -> LayerSpec:
    """The quantization of a float-to-int8 dispatch, or NotSupported with the reason."""
    generic, source, target = elementwise_one_to_one(body)
    if source.dtype != "f32" or target.dtype != "i8":
        raise NotSupported(f"an elementwise operation of {source.dtype} to {target.dtype}, not float32 to int8")
    expression = expression_of(generic)
    scalings = [n for n in walk(expression) if n.op in ("arith.divf", "arith.mulf")]
    if not scalings:  # a scale of 1: the division folded away
        scalings = [Node("arith.divf", (Node("arg", value=0), Node("const", value=1.0)))]
    if len(scalings) != 1 or scalings[0].operands[0].op != "arg" or scalings[0].operands[1].op != "const":
        raise NotSupported("a float-to-int8 operation that is not one division of the input by a constant")
    factor = float(F32(scalings[0].operands[1].value))
    if scalings[0].op == "arith.mulf":
        # IREE makes a division by a power of two a multiplication by its reciprocal, the same value for
        # every input: the scale is that power of two.
        if not (np.isfinite(factor) and factor > 0 and np.frexp(factor)[0] == 0.5):
            raise NotSupported(f"a float-to-int8 operation that multiplies by {factor}, not a power of two")
        factor = 1.0 / factor
    scale = factor
    if not (np.isfinite(scale) and scale > 0):
        raise NotSupported(f"a quantization by the scale {scale}")
    try:
        ks = np.arange(-300, 301)
        at_whole = np.asarray(evaluate(expression, {0: (ks * np.float64(scale)).astype(F32)}), np.int64)
        low, high = int(at_whole.min()), int(at_whole.max())
        inner = (at_whole > low) & (at_whole < high)
        if low < -128 or high > 127 or not inner.any():
            raise NotSupported("a float-to-int8 operation that is not a quantization (its range)")
        zero_point = int(at_whole[inner][0] - ks[inner][0])
        probes = _probes(scale, zero_point, low, high)
        got = np.broadcast_to(np.asarray(evaluate(expression, {0: probes}), np.int64), probes.shape)
    except NotEvaluable as e:
        raise NotSupported(f"a float-to-int8 operation the compiler cannot evaluate ({e})") from None
    if not np.array_equal(got, quantized(probes, scale, zero_point, low, high)):
        raise NotSupported("a float-to-int8 operation that is not TFLite's QUANTIZE (zp + x / scale rounded half "
                           "away from zero, clamped; checked around every rounding boundary)")
    n = int(np.prod(target.shape))
    spec = LayerSpec("quantize", flat(source), flat(target), (1, 1, n), (1, 1, n), (1, 1), (1, 1), (1, 1),
                     np.zeros(0, np.int8), np.zeros(0, np.int32), None, 0, zero_point, low, high, False)
    spec.float_scale = scale
    return spec
