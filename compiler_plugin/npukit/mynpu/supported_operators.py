"""Which recognised layers the mynpu NPU runs: predicates on a ``LayerSpec``
and the hardware configuration (in the manner of Vela's supported
operators). Recognising the layer in a dispatch is
npukit.layer_recognition's work; what the NPU adds here is what its
instructions cannot do. Every refusal is a NotSupported whose message is the
reason shown in the placement report."""

from __future__ import annotations

import numpy as np

from npukit.layer_recognition.elementwise_product import factors_of
from npukit.layer_recognition.int8_pool import shared_requantization
from npukit.layer_recognition.layer_spec import LayerSpec, NotSupported
from npukit.layer_recognition.scalar_expression import INT8_VALUES
from npukit.mynpu.options import MynpuOptions

#: The LayerSpec kinds OP_POOL runs (npukit.layer_recognition.int8_pool).
POOL_KINDS = ("average_pool", "max_pool", "mean")
#: OP_POOL's largest window side (KERNEL_H, KERNEL_W).
MAX_POOL_SIDE = 255
#: The largest IFM_H, IFM_W, IFM_C (and OFM's).
MAX_DIMENSION = 65535


def check_npu_supported(spec: LayerSpec, options: MynpuOptions) -> None:
    """NotSupported with the reason when the NPU cannot run ``spec``."""
    if spec.kind == "table":
        if not options.table:
            raise NotSupported("the hardware configuration has no OP_TABLE (--mynpu-table=off)")
        return
    if spec.kind in POOL_KINDS:
        check_pool_supported(spec, options)
        return
    if spec.kind == "mul":
        if not options.mul:
            raise NotSupported("the hardware configuration has no OP_E_MUL (--mynpu-mul=off)")
        if spec.ofm_chw[0] > MAX_DIMENSION:
            raise NotSupported(f"a product of {spec.ofm_chw[0]} channels (IFM_C takes 1 .. {MAX_DIMENSION})")
        product_factors(spec)
        return
    if spec.kind not in ("conv", "depthwise", "fully_connected"):
        raise NotSupported(f"the NPU runs convolutions, depthwise convolutions, fully connected layers, int8 "
                           f"tables, pools, means and products, not this {spec.operation}")
    if spec.padded and spec.kind == "fully_connected":
        raise NotSupported("a padded fully connected layer")
    if spec.padded and max(spec.padding[0], spec.padding[2]) > 255:
        raise NotSupported(f"input padding of {max(spec.padding[0], spec.padding[2])} (PAD_TOP and PAD_LEFT take "
                           "0 .. 255)")
    if spec.padded and not -128 <= spec.pad_value <= 127:
        raise NotSupported(f"an input padded with {spec.pad_value}, outside int8")
    if spec.add is not None and spec.add.accumulators is not None:
        raise NotSupported("a residual addition of another layer's int32 accumulator, requantized in this "
                           "dispatch (the NPU adds int8 tensors)")
    if spec.kind == "depthwise" and options.depthwise == "cpu":
        raise NotSupported("the hardware configuration has no OP_DEPTH_CONV (--mynpu-depthwise=cpu)")



def pool_window(spec: LayerSpec) -> tuple[tuple[int, int], tuple[int, int]]:
    """The input plane and window OP_POOL runs ``spec`` with: its own, or for
    a global pool (one window over the whole input, which IREE may flatten
    into one dimension of more values than a window side takes) the plane
    as the squarest rectangle of sides within OP_POOL's range: a window
    over every value of a dense plane sums and compares the same values
    whatever the rectangle. NotSupported when neither fits."""
    _, ih, iw = spec.ifm_chw
    kh, kw = spec.kernel
    if max(kh, kw) <= MAX_POOL_SIDE:
        return (ih, iw), (kh, kw)
    n = ih * iw
    if spec.ofm_chw[1:] == (1, 1) and (kh, kw) == (ih, iw):
        sides = [(a, n // a) for a in range(1, n + 1) if n % a == 0 and max(a, n // a) <= MAX_POOL_SIDE]
        if sides:
            a, b = min(sides, key=lambda s: abs(s[0] - s[1]))
            return (a, b), (a, b)
    raise NotSupported(f"a pool window of {kh}x{kw} (OP_POOL's window sides take 1 .. {MAX_POOL_SIDE})")


def check_pool_supported(spec: LayerSpec, options: MynpuOptions) -> None:
    """NotSupported with the reason when OP_POOL cannot run the pool ``spec``."""
    if not options.pool:
        raise NotSupported("the hardware configuration has no OP_POOL (--mynpu-pool=off)")
    if spec.stride[0] > MAX_POOL_SIDE or spec.stride[1] > MAX_POOL_SIDE:
        raise NotSupported(f"a pool stride of {spec.stride} (OP_POOL takes 1 .. {MAX_POOL_SIDE})")
    for t in (spec.ifm, spec.ofm):
        if t.tensor.strides is not None:
            raise NotSupported("a pool reading or writing its tensor with element strides")
        if t.layout not in ("HWC", "any"):
            raise NotSupported(f"a pool of a {t.layout} tensor (the NPU pools channel-last tensors)")
    pool_window(spec)
    if spec.kind == "mean":
        mean_registers(spec)


def mean_registers(spec: LayerSpec) -> dict[str, int]:
    """OP_POOL's mean (variant 2) registers for the mean ``spec``: one
    requantization for every channel, its bias the input zero point times
    the window's count (TFLite's MEAN: sum - zx * n). NotSupported otherwise."""
    shared = shared_requantization(spec)
    if shared is None:
        raise NotSupported("a mean whose channels requantize differently (OP_POOL has one requantization)")
    (bias, multiplier, shift), count = shared, spec.kernel[0] * spec.kernel[1]
    if bias % count or not -128 <= -bias // count <= 127:
        raise NotSupported(f"a mean whose sum is offset by {bias}, not an int8 input zero point times its "
                           f"{count} values")
    return {"IFM_ZP": -bias // count, "OUT_MULT": multiplier, "OUT_SHIFT": shift, "OFM_ZP": spec.ofm_zp}


def product_factors(spec: LayerSpec) -> list[tuple[np.ndarray | None, int]]:
    """How OP_E_MUL computes each factor of the product ``spec`` (x's, then
    y's): (None, zp) for the value less a zero point in int8 (TFLite's
    x - zx), as OP_E_MUL subtracts IFM_ZP; (table, zp) for any other
    function of the int8 value (a fused LOGISTIC gate), looked up by
    OP_TABLE first: table[v + 128] - zp, the table int8. NotSupported when a
    factor has no such form."""
    forms = []
    for factor in factors_of(spec.weights):
        c = int(factor[0]) + 128  # factor = value + c: zp = -c
        if np.array_equal(factor, INT8_VALUES + c) and -128 <= -c <= 127:
            forms.append((None, -c))
            continue
        # table = factor - c within int8 and zp = -c within int8.
        low, high = max(int(factor.max()) - 127, -127), min(int(factor.min()) + 128, 128)
        if low > high:
            raise NotSupported(f"a product factor spanning {int(factor.min())}..{int(factor.max())} (OP_E_MUL "
                               "takes an int8 value less an int8 zero point, after an OP_TABLE lookup or not)")
        c = min(max(0, low), high)
        forms.append(((factor - c).astype(np.int8), -c))
    return forms
