"""An ONNX QDQ model whose branches reach each path of the layer kernels'
float output stage (s8_output.h): convolutions 3x3 and 1x1 (the pairs of
output pixels), a fully connected MatMul, depthwise 3x3 stride 1 (the DSP
cores' word pairs), stride 2 and 5x5 (the plain loop), channel-last
depthwise 3x3 and 5x5 (the DSP cores' four channels at a time, from a
second input in NHWC), and a convolution whose output is added to the
input, then ReLU (the float ADD). Every branch reads one of the two int8
inputs and ends in a QuantizeLinear that is one of the model's outputs.

Scales are either drawn at random (per output channel for the weights) or
powers of two ("ties"): the float requantization is then exact and many
values lie exactly half way between two output steps, where rounding half
to even and half away from zero differ.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IN_C, IN_H, IN_W = 8, 10, 12


class _Graph:
    def __init__(self, rng: np.random.Generator, x_scale: float, x_zp: int):
        self.rng = rng
        self.nodes: list = []
        self.inits: dict[str, np.ndarray] = {}
        self.outputs: list = []
        self.x_scale = x_scale
        self.init("x_scale", np.float32(x_scale))
        self.init("x_zp", np.int8(x_zp))
        self.node("DequantizeLinear", ["x", "x_scale", "x_zp"], "x_f")

    def init(self, name: str, value) -> str:
        self.inits[name] = np.asarray(value)
        return name

    def node(self, op: str, inputs: list[str], output: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op, inputs, [output], **attrs))
        return output

    def quantized_weights(self, name: str, shape: tuple[int, ...], ties: bool, axis: int = 0) -> tuple[str, np.ndarray]:
        """Int8 weights with a scale per output channel (along ``axis``), and the scales."""
        channels = shape[axis]
        scale = (np.full(channels, 2.0 ** -5) if ties else self.rng.uniform(0.002, 0.02, channels)).astype(np.float32)
        self.init(f"{name}_q", self.rng.integers(-127, 128, size=shape, dtype=np.int8))
        self.init(f"{name}_scale", scale)
        self.init(f"{name}_zp", np.zeros(channels, np.int8))
        weights = self.node("DequantizeLinear", [f"{name}_q", f"{name}_scale", f"{name}_zp"], f"{name}_f", axis=axis)
        return weights, scale

    def bias(self, name: str, w_scale: np.ndarray) -> str:
        scale = (np.float32(self.x_scale) * w_scale).astype(np.float32)
        self.init(f"{name}_q", self.rng.integers(-(1 << 14), 1 << 14, size=len(w_scale), dtype=np.int32))
        self.init(f"{name}_scale", scale)
        self.init(f"{name}_zp", np.zeros(len(w_scale), np.int32))
        return self.node("DequantizeLinear", [f"{name}_q", f"{name}_scale", f"{name}_zp"], f"{name}_f", axis=0)

    def quantize(self, name: str, value: str, scale: float, zp: int, shape: list[int] | None) -> str:
        """QuantizeLinear of ``value``, a model output of ``shape`` unless None."""
        self.init(f"{name}_scale", np.float32(scale))
        self.init(f"{name}_zp", np.int8(zp))
        q = self.node("QuantizeLinear", [value, f"{name}_scale", f"{name}_zp"], name)
        if shape is not None:
            self.outputs.append((q, shape))
        return q

    def output_scale(self, taps: int, w_scale: np.ndarray, ties: bool) -> float:
        """A scale that spreads the outputs over int8: 2^-4 with ties (an
        accumulator step of 2^-8, one in 16 exactly half way)."""
        if ties:
            return 2.0 ** -4
        spread = np.sqrt(taps) * 74.0 * 73.0 * self.x_scale * float(np.mean(w_scale))
        return float(np.float32(spread / 40.0))


def qdq_layer_sweep_model(path: Path, ties: bool, seed: int = 0) -> Path:
    """The sweep with random (``ties`` False) or power-of-two scales."""
    rng = np.random.default_rng(seed)
    g = _Graph(rng, 2.0 ** -3 if ties else 0.05, -5)

    def conv(name: str, out_c: int, kernel: int, group: int = 1, stride: int = 1, pad: int = 0,
             activation: str = "none", output: bool = True, channels_last: bool = False) -> str:
        """A convolution of the input; ``channels_last``: of the NHWC input,
        its output transposed back to NHWC (the layer then runs channel-last)."""
        in_c = IN_C // group
        w, w_scale = g.quantized_weights(f"{name}_w", (out_c, in_c, kernel, kernel), ties)
        b = g.bias(f"{name}_b", w_scale)
        x = g.node("Transpose", ["x_nhwc_f"], f"{name}_in", perm=[0, 3, 1, 2]) if channels_last else "x_f"
        y = g.node("Conv", [x, w, b], f"{name}_conv", kernel_shape=[kernel, kernel], group=group,
                   strides=[stride, stride], pads=[pad] * 4)
        scale = g.output_scale(in_c * kernel * kernel, w_scale, ties)
        if activation == "relu":
            y = g.node("Relu", [y], f"{name}_relu")
        size = [(n + 2 * pad - kernel) // stride + 1 for n in (IN_H, IN_W)]
        shape = [1, out_c, *size]
        if channels_last:
            y = g.node("Transpose", [y], f"{name}_out", perm=[0, 2, 3, 1])
            shape = [1, *size, out_c]
        return g.quantize(name, y, scale, int(rng.integers(-20, 21)) if activation == "none" else -128,
                          shape if output else None)

    conv("conv3x3_relu", 16, 3, pad=1, activation="relu")
    conv("conv3x3_stride2", 8, 3, stride=2)
    conv("conv1x1", 12, 1, activation="relu")
    conv("depthwise3x3_relu", IN_C, 3, group=IN_C, pad=1, activation="relu")
    conv("depthwise3x3_stride2", IN_C, 3, group=IN_C, stride=2, pad=1)
    conv("depthwise5x5", IN_C, 5, group=IN_C, pad=2)
    # Channel-last depthwise layers (the DSP cores' four channels at a time).
    g.node("DequantizeLinear", ["x_nhwc", "x_scale", "x_zp"], "x_nhwc_f")
    conv("depthwise3x3_channel_last", IN_C, 3, group=IN_C, pad=1, activation="relu", channels_last=True)
    conv("depthwise5x5_channel_last", IN_C, 5, group=IN_C, pad=2, channels_last=True)
    # A residual block's addition: conv(x) + x, quantized.
    y = conv("residual_conv", IN_C, 3, pad=1, output=False)
    y_f = g.node("DequantizeLinear", [y, "residual_conv_scale", "residual_conv_zp"], "residual_conv_f")
    total = g.node("Relu", [g.node("Add", [y_f, "x_f"], "residual_sum")], "residual_relu")
    g.quantize("residual_add", total, 2.0 ** -3 if ties else float(np.float32(g.x_scale * 1.5)), 3,
               [1, IN_C, IN_H, IN_W])
    # A fully connected layer over the flattened input.
    g.init("flat_shape", np.array([1, IN_C * IN_H * IN_W], np.int64))
    flat = g.node("DequantizeLinear", [g.node("Reshape", ["x", "flat_shape"], "x_flat"), "x_scale", "x_zp"], "flat")
    w, w_scale = g.quantized_weights("fc_w", (IN_C * IN_H * IN_W, 10), ties, axis=1)
    fc = g.node("Add", [g.node("MatMul", [flat, w], "fc_mm"), g.bias("fc_b", w_scale)], "fc_sum")
    g.quantize("fc", fc, g.output_scale(IN_C * IN_H * IN_W, w_scale, ties), 7, [1, 10])

    graph = helper.make_graph(
        g.nodes, "qdq_layer_sweep", [helper.make_tensor_value_info("x", TensorProto.INT8, [1, IN_C, IN_H, IN_W]),
                                     helper.make_tensor_value_info("x_nhwc", TensorProto.INT8, [1, IN_H, IN_W, IN_C])],
        [helper.make_tensor_value_info(name, TensorProto.INT8, shape) for name, shape in g.outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in g.inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path
