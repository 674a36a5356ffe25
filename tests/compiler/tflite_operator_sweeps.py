"""Seeded sweeps over the TFLite operators the frontend lowers besides the
contractions (those are in kernels/layer_sweeps.py): resizing, pooling,
activations, elementwise arithmetic, softmax, reductions and the 16-bit and
float transpose convolutions. Each sweep is one .tflite model of independent
single-operator branches with the parameters real models use and the odd
ones they sometimes have: sizes that do not divide, both paddings, fused
activations, extreme zero points, broadcasting, int8, int16 and float32."""

from __future__ import annotations

import numpy as np

from support.tflite_builder import DENSE, SPARSE_CSR, Branch, SparseEncoding, Spec

SAME, VALID = 0, 1
NONE, RELU, RELU_N1_TO_1, RELU6 = 0, 1, 2, 3


def _q(rng, shape, dtype=np.int8, zero_point: int | None = None, scale: float | None = None) -> Spec:
    if dtype == np.float32:
        return Spec(tuple(shape), np.float32)
    if zero_point is None:
        zero_point = 0 if dtype == np.int16 else int(rng.integers(-128, 128))
    scale = np.float32(rng.uniform(0.005, 0.1) if scale is None else scale)
    return Spec(tuple(shape), dtype, scale, zero_point)


def _same_as(spec: Spec, shape) -> Spec:
    return Spec(tuple(shape), spec.dtype, spec.scale, spec.zero_point)


def _size(values) -> Spec:
    return Spec.constant(np.array(values, np.int32))


def resampling_sweep(seed: int = 20) -> list[Branch]:
    rng = np.random.default_rng(seed)
    branches = []
    cases = [
        # (h, w, c) in, (h, w) out, align_corners, half_pixel_centers
        ((4, 5, 3), (8, 10), False, False), ((4, 5, 3), (8, 10), False, True), ((4, 5, 3), (8, 10), True, False),
        ((5, 7, 2), (3, 4), False, False), ((5, 7, 2), (3, 4), False, True), ((3, 3, 4), (7, 5), True, False),
        ((6, 2, 1), (13, 9), False, True), ((2, 2, 5), (1, 1), True, False),
    ]
    for op in ("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"):
        for dtype in (np.int8, np.int16, np.float32):
            for (h, w, c), (oh, ow), align, half in cases:
                if op == "RESIZE_BILINEAR" and align and half:
                    continue
                x = _q(rng, (1, h, w, c), dtype)
                branches.append(Branch(op, [x, _size([oh, ow])], [_same_as(x, (1, oh, ow, c))],
                                       dict(alignCorners=align, halfPixelCenters=half)))
    return branches


def pooling_sweep(seed: int = 21) -> list[Branch]:
    rng = np.random.default_rng(seed)
    branches = []
    cases = [
        # op, (h, w, c), filter, stride, padding, activation
        ("AVERAGE_POOL_2D", (9, 7, 5), (3, 3), (2, 2), SAME, NONE),
        ("AVERAGE_POOL_2D", (9, 7, 5), (3, 3), (2, 2), VALID, RELU6),
        ("AVERAGE_POOL_2D", (5, 5, 16), (5, 5), (1, 1), VALID, NONE),  # global
        ("AVERAGE_POOL_2D", (6, 4, 3), (2, 3), (2, 1), SAME, RELU),
        ("MAX_POOL_2D", (9, 7, 5), (3, 3), (2, 2), SAME, NONE),
        ("MAX_POOL_2D", (8, 8, 6), (2, 2), (2, 2), VALID, RELU),
        ("MAX_POOL_2D", (7, 5, 3), (3, 2), (1, 2), SAME, RELU_N1_TO_1),
    ]
    for dtype in (np.int8, np.int16, np.float32):
        for op, (h, w, c), (fh, fw), (sh, sw), padding, activation in cases:
            oh = (h + sh - 1) // sh if padding == SAME else (h - fh + sh) // sh
            ow = (w + sw - 1) // sw if padding == SAME else (w - fw + sw) // sw
            x = _q(rng, (1, h, w, c), dtype)
            branches.append(Branch(op, [x], [_same_as(x, (1, oh, ow, c))],
                                   dict(padding=padding, strideH=sh, strideW=sw, filterHeight=fh, filterWidth=fw,
                                        fusedActivationFunction=activation)))
    return branches


def activation_sweep(seed: int = 22) -> list[Branch]:
    rng = np.random.default_rng(seed)
    shape = (1, 7, 37)
    branches = []
    for scale in (0.02, 0.1, 0.004):  # (16-bit LOGISTIC and TANH are refused: see docs/tflite-frontend.md)
        # The output quantization TFLite requires: [0, 1) and [-1, 1) over the int8 range.
        branches.append(Branch("LOGISTIC", [_q(rng, shape, scale=scale)], [_q(rng, shape, np.int8, -128, 1 / 256)]))
        branches.append(Branch("TANH", [_q(rng, shape, scale=scale)], [_q(rng, shape, np.int8, 0, 1 / 128)]))
    branches.append(Branch("LOGISTIC", [_q(rng, shape, np.float32)], [_q(rng, shape, np.float32)]))
    branches.append(Branch("TANH", [_q(rng, shape, np.float32)], [_q(rng, shape, np.float32)]))
    for dtype in (np.int8, np.int16, np.float32):
        for op in ("RELU", "RELU6") + (() if dtype == np.int16 else ("RELU_N1_TO_1", "RELU_0_TO_1")):
            branches.append(Branch(op, [_q(rng, shape, dtype)], [_q(rng, shape, dtype)]))
        for alpha in (0.1, 0.3, 1.7):
            branches.append(Branch("LEAKY_RELU", [_q(rng, shape, dtype)], [_q(rng, shape, dtype)], dict(alpha=alpha)))
    branches.append(Branch("HARD_SWISH", [_q(rng, shape, np.int8, scale=0.05)], [_q(rng, shape, np.int8, scale=0.03)]))
    branches.append(Branch("HARD_SWISH", [_q(rng, shape, np.int8, -100, 0.01)], [_q(rng, shape, np.int8, 20, 0.02)]))
    for source, target in ((np.float32, np.int8), (np.float32, np.int16), (np.int8, np.int8), (np.int16, np.int8),
                           (np.int8, np.int16), (np.int16, np.int16)):
        branches.append(Branch("QUANTIZE", [_q(rng, shape, source)], [_q(rng, shape, target)]))
    for source in (np.int8, np.int16):
        branches.append(Branch("DEQUANTIZE", [_q(rng, shape, source)], [_q(rng, shape, np.float32)]))
    branches.append(Branch("ABS", [_q(rng, shape, np.float32)], [_q(rng, shape, np.float32)]))
    # Quantized ABS: one scale (no rescaling; the clamp saturates |x - zp| + zp),
    # a larger and a smaller output scale, zero points at both ends.
    for dtype, zero_points, scales in ((np.int8, ((-128, -128), (127, -128), (5, -3), (-128, 0)),
                                        ((0.05, 0.05), (0.05, 0.05), (0.02, 0.07), (0.09, 0.01))),
                                       (np.int16, ((0, 0), (0, 0)), ((0.001, 0.001), (0.0004, 0.0011)))):
        for (zp_in, zp_out), (scale_in, scale_out) in zip(zero_points, scales):
            branches.append(Branch("ABS", [_q(rng, shape, dtype, zp_in, scale_in)],
                                   [_q(rng, shape, dtype, zp_out, scale_out)]))
    return branches


def binary_sweep(seed: int = 23) -> list[Branch]:
    rng = np.random.default_rng(seed)
    branches = []
    shapes = [((1, 5, 6, 7), (1, 5, 6, 7)), ((1, 5, 6, 7), (1, 1, 1, 7)), ((1, 4, 1, 3), (1, 1, 5, 3)), ((2, 9), ())]
    for op in ("ADD", "SUB", "MUL"):
        for dtype in (np.int8, np.int16, np.float32):
            for (a, b), activation in zip(shapes, (NONE, RELU, RELU6, NONE)):
                out = np.broadcast_shapes(a, b)
                options = dict(fusedActivationFunction=activation)
                if op != "MUL":
                    options["potScaleInt16"] = False
                branches.append(Branch(op, [_q(rng, a, dtype), _q(rng, b, dtype)], [_q(rng, out, dtype)], options))
    for op in ("MAXIMUM", "MINIMUM"):
        for dtype in (np.int8, np.float32):
            a = _q(rng, (1, 3, 4, 5), dtype)
            branches.append(Branch(op, [a, _same_as(a, (1, 1, 4, 5))], [_same_as(a, (1, 3, 4, 5))]))
    return branches


def softmax_sweep(seed: int = 24) -> list[Branch]:
    rng = np.random.default_rng(seed)
    branches = []
    for shape, beta, scale in (((1, 10), 1.0, 0.1), ((1, 12), 1.0, 0.02), ((3, 37), 0.5, 0.25), ((2, 4, 3), 2.0, 0.06),
                               ((1, 1000), 1.0, 0.08)):
        branches.append(Branch("SOFTMAX", [_q(rng, shape, np.int8, scale=scale)],
                               [_q(rng, shape, np.int8, -128, 1 / 256)], dict(beta=beta)))
        branches.append(Branch("SOFTMAX", [_q(rng, shape, np.float32)], [_q(rng, shape, np.float32)], dict(beta=beta)))
        branches.append(Branch("SOFTMAX", [_q(rng, shape, np.int16, scale=scale / 200)],
                               [_q(rng, shape, np.int16, 0, 1 / 32768)], dict(beta=beta)))
    return branches


def reduction_sweep(seed: int = 25) -> list[Branch]:
    rng = np.random.default_rng(seed)
    branches = []
    for dtype in (np.int8, np.int16, np.float32):
        for (h, w, c), axes, keep in (((5, 5, 16), (1, 2), True), ((7, 3, 9), (1, 2), False), ((4, 6, 5), (2,), True),
                                      ((1, 1, 10), (1, 2), True)):
            shape = [1, h, w, c]
            out = [1 if a in axes else d for a, d in enumerate(shape)] if keep else \
                [d for a, d in enumerate(shape) if a not in axes]
            branches.append(Branch("MEAN", [_q(rng, shape, dtype), Spec.constant(np.array(axes, np.int32))],
                                   [_q(rng, out, dtype)], dict(keepDims=keep)))
    branches.append(Branch("SUM", [_q(rng, (1, 4, 6, 5), np.float32), Spec.constant(np.array([1, 2], np.int32))],
                           [_q(rng, (1, 5), np.float32)], dict(keepDims=False)))
    for op in ("REDUCE_MAX", "REDUCE_MIN"):
        for dtype in (np.int8, np.int16, np.float32):
            for shape, axes, keep in (((1, 5, 4, 6), (1, 2), False), ((1, 3, 7, 2), (2, -1), True)):
                out = [1 if a in [x % 4 for x in axes] else d for a, d in enumerate(shape)]
                if not keep:
                    out = [d for a, d in enumerate(shape) if a not in [x % 4 for x in axes]]
                x = _q(rng, shape, dtype)
                branches.append(Branch(op, [x, Spec.constant(np.array(axes, np.int32))], [_same_as(x, out)],
                                       dict(keepDims=keep)))
    return branches


def wide_layers_sweep(seed: int = 26) -> list[Branch]:
    """Layers with 16-bit activations and int64 biases (CONV_2D,
    DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV), and TRANSPOSE_CONV
    in float32."""
    rng = np.random.default_rng(seed)
    branches = []

    def wide_weights(shape, channels, axis, x):
        scales = rng.uniform(0.002, 0.02, channels).astype(np.float32)
        weights = Spec.constant(rng.integers(-127, 128, shape, dtype=np.int8), scales, 0, axis)
        bias = Spec.constant(rng.integers(-(1 << 20), 1 << 20, channels).astype(np.int64),
                             (np.float32(x.scale) * scales).astype(np.float32), 0)
        return weights, bias

    for (h, w, c), oc, k, activation in (((6, 5, 3), 4, 3, RELU), ((4, 4, 8), 8, 1, NONE)):
        x = _q(rng, (1, h, w, c), np.int16)
        weights, bias = wide_weights((oc, k, k, c), oc, 0, x)
        branches.append(Branch("CONV_2D", [x, weights, bias], [_q(rng, (1, h, w, oc), np.int16)],
                               dict(padding=SAME, strideH=1, strideW=1, dilationHFactor=1, dilationWFactor=1,
                                    fusedActivationFunction=activation)))
        x = _q(rng, (1, h, w, c), np.int16)
        weights, bias = wide_weights((1, 3, 3, c), c, 3, x)
        branches.append(Branch("DEPTHWISE_CONV_2D", [x, weights, bias], [_q(rng, (1, h, w, c), np.int16)],
                               dict(padding=SAME, strideH=1, strideW=1, dilationHFactor=1, dilationWFactor=1,
                                    depthMultiplier=1, fusedActivationFunction=activation)))
    for depth, units in ((64, 10), (300, 7)):
        x = _q(rng, (1, depth), np.int16)
        weights, bias = wide_weights((units, depth), units, 0, x)
        branches.append(Branch("FULLY_CONNECTED", [x, weights, bias], [_q(rng, (1, units), np.int16)],
                               dict(fusedActivationFunction=RELU)))
    for dtype in (np.int16, np.float32):
        for ic, oc, (h, w), (kh, kw), (sh, sw), padding, activation in (
                (4, 3, (3, 4), (3, 3), (2, 2), SAME, NONE), (3, 5, (4, 3), (2, 2), (2, 2), VALID, RELU),
                (2, 4, (3, 3), (3, 3), (1, 1), SAME, NONE)):
            oh = h * sh if padding == SAME else (h - 1) * sh + kh
            ow = w * sw if padding == SAME else (w - 1) * sw + kw
            x = _q(rng, (1, h, w, ic), dtype)
            if dtype == np.float32:
                weights = Spec.constant(rng.uniform(-1, 1, (oc, kh, kw, ic)).astype(np.float32))
                bias = Spec.constant(rng.uniform(-1, 1, oc).astype(np.float32))
            else:
                scales = rng.uniform(0.002, 0.02, oc).astype(np.float32)
                weights = Spec.constant(rng.integers(-127, 128, (oc, kh, kw, ic), dtype=np.int8), scales, 0, 0)
                bias = Spec.constant(rng.integers(-(1 << 20), 1 << 20, oc).astype(np.int64),
                                     (np.float32(x.scale) * scales).astype(np.float32), 0)
            branches.append(Branch("TRANSPOSE_CONV", [_size([1, oh, ow, oc]), weights, x, bias],
                                   [_q(rng, (1, oh, ow, oc), dtype)],
                                   dict(padding=padding, strideH=sh, strideW=sw, fusedActivationFunction=activation)))
    return branches


def wide_depthwise_multiplier_sweep(seed: int = 27) -> list[Branch]:
    """DEPTHWISE_CONV_2D with channel multipliers M in {2, 3, 4, 8} with
    16-bit activations and int64 biases, and in float32 (the int8 ones are
    kernels/layer_sweeps.py's): output channel c * M + m reads input channel c."""
    rng = np.random.default_rng(seed)
    branches = []
    cases = [
        # (h, w, c), multiplier, kernel, stride, dilation, padding, activation
        ((6, 5, 3), 2, (3, 3), (1, 1), (1, 1), SAME, RELU), ((7, 7, 5), 3, (3, 3), (2, 2), (1, 1), VALID, NONE),
        ((8, 6, 2), 4, (3, 3), (1, 2), (2, 1), SAME, RELU6), ((5, 4, 8), 8, (2, 3), (2, 1), (1, 1), SAME, NONE),
    ]
    for dtype in (np.int16, np.float32):
        for (h, w, c), m, (kh, kw), (sh, sw), (dh, dw), padding, activation in cases:
            oc = c * m
            eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
            oh = (h + sh - 1) // sh if padding == SAME else (h - eh + sh) // sh
            ow = (w + sw - 1) // sw if padding == SAME else (w - ew + sw) // sw
            x = _q(rng, (1, h, w, c), dtype)
            if dtype == np.float32:
                weights = Spec.constant(rng.uniform(-1, 1, (1, kh, kw, oc)).astype(np.float32))
                bias = Spec.constant(rng.uniform(-1, 1, oc).astype(np.float32))
            else:
                scales = rng.uniform(0.002, 0.02, oc).astype(np.float32)
                weights = Spec.constant(rng.integers(-127, 128, (1, kh, kw, oc), dtype=np.int8), scales, 0, 3)
                bias = Spec.constant(rng.integers(-(1 << 20), 1 << 20, oc).astype(np.int64),
                                     (np.float32(x.scale) * scales).astype(np.float32), 0)
            branches.append(Branch("DEPTHWISE_CONV_2D", [x, weights, bias], [_q(rng, (1, oh, ow, oc), dtype)],
                                   dict(padding=padding, strideH=sh, strideW=sw, dilationHFactor=dh,
                                        dilationWFactor=dw, depthMultiplier=m, fusedActivationFunction=activation)))
    return branches


def exported_forms_sweep(seed: int = 28) -> list[Branch]:
    """What exporters write into float and mobile models: PRELU with per-channel and per-pixel slopes,
    DEPTH_TO_SPACE and SPACE_TO_DEPTH, float16 weights (a DEQUANTIZE of a float16 constant) and weights
    stored sparse (a DENSIFY of a constant in TFLite's sparsity encoding: CSR levels, dense levels, a
    traversal order other than the dimensions', blocks)."""
    rng = np.random.default_rng(seed)
    branches = []
    x_shape = (1, 5, 6, 7)
    for alpha_shape in ((1, 1, 7), (7,), (5, 6, 7), (1,)):
        alpha = Spec.constant(rng.uniform(-0.5, 1.5, alpha_shape).astype(np.float32))
        branches.append(Branch("PRELU", [_q(rng, x_shape, np.float32), alpha], [_q(rng, x_shape, np.float32)]))
    branches.append(Branch("PRELU", [_q(rng, x_shape, np.float32), _q(rng, (1, 1, 7), np.float32)],
                           [_q(rng, x_shape, np.float32)]))
    for dtype in (np.int8, np.float32):
        for (h, w, c), b in (((3, 4, 8), 2), ((2, 3, 18), 3), ((1, 1, 4), 2)):
            x = _q(rng, (1, h, w, c), dtype)
            branches.append(Branch("DEPTH_TO_SPACE", [x], [_same_as(x, (1, h * b, w * b, c // (b * b)))],
                                   dict(blockSize=b)))
        for (h, w, c), b in (((6, 8, 3), 2), ((6, 9, 2), 3), ((2, 2, 1), 2)):
            x = _q(rng, (1, h, w, c), dtype)
            branches.append(Branch("SPACE_TO_DEPTH", [x], [_same_as(x, (1, h // b, w // b, c * b * b))],
                                   dict(blockSize=b)))
    for shape in ((3, 3, 4, 5), (16,)):
        weights = rng.uniform(-3, 3, shape).astype(np.float16)
        branches.append(Branch("DEQUANTIZE", [Spec.constant(weights)], [_q(rng, shape, np.float32)]))
    encodings = [
        ((8, 12), SparseEncoding([0, 1], [DENSE, SPARSE_CSR])),
        ((8, 12), SparseEncoding([0, 1], [SPARSE_CSR, SPARSE_CSR])),
        ((3, 4, 5), SparseEncoding([0, 2, 1], [SPARSE_CSR, SPARSE_CSR, SPARSE_CSR])),
        ((4, 3, 2, 6), SparseEncoding([0, 1, 2, 3], [DENSE, DENSE, DENSE, SPARSE_CSR])),
        ((8, 12), SparseEncoding([0, 1, 2], [DENSE, SPARSE_CSR, DENSE], block_map=[1], block_sizes=[4])),
        ((6, 8), SparseEncoding([0, 1, 2, 3], [DENSE, SPARSE_CSR, DENSE, DENSE], block_map=[0, 1],
                                block_sizes=[2, 4])),
    ]
    for dtype in (np.float32, np.int8):
        for shape, encoding in encodings:
            values = rng.uniform(-4, 4, shape) if dtype == np.float32 else rng.integers(-128, 128, shape)
            mask = rng.uniform(size=shape) < 0.35
            if encoding.block_map:  # whole blocks zero or not, as a block-sparse exporter writes them
                d, size = encoding.block_map[-1], encoding.block_sizes[-1]
                blocks = rng.uniform(size=shape[:d] + (shape[d] // size,) + shape[d + 1:]) < 0.4
                mask = np.repeat(blocks, size, axis=d)
            weights = np.where(mask, values, 0).astype(dtype)
            quantization = dict(scale=np.float32(0.05), zero_point=0) if dtype == np.int8 else {}
            stored = Spec.constant(weights, **quantization)
            stored.sparse = encoding
            branches.append(Branch("DENSIFY", [stored], [Spec(shape, dtype, **quantization)]))
    return branches


SWEEPS = {"resampling": resampling_sweep, "pooling": pooling_sweep, "activations": activation_sweep,
          "binary": binary_sweep, "softmax": softmax_sweep, "reductions": reduction_sweep,
          "wide_layers": wide_layers_sweep, "wide_depthwise_multiplier": wide_depthwise_multiplier_sweep,
          "exported_forms": exported_forms_sweep}
