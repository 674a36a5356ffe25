"""A layer's quantized output reaches a residual ADD or an average pool as
the int8 tensor the model hands on, not as IREE's int32 accumulators
(npukit.passes.quantized_handoffs), and the results do not change.

The model is an ONNX QDQ graph with the three hand-offs IREE fused
forward: two residual blocks whose shortcut is a convolution (one with the
shortcut before the main branch in the graph, as resnet8_int8 has it, one
with it after), and a global average pool of a convolution's output (as in
kws_int8). Oracles: IREE's own code for the same graph (the stock pipeline:
the same float arithmetic, so equal bit for bit) and onnxruntime; the mynpu
compile's NPU layers are checked against TFLite's reference kernels on the
shared models in tests/mynpu/test_compiler_target.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from iree.compiler.api import Session, Source
from onnx import TensorProto, helper, numpy_helper

import npukit
from npukit.driver import iree_capi
from npukit.driver.phases import PhasedPipeline
from npukit.frontends import import_model
from npukit.passes.layer_boundaries import RemoveLayerBoundaries
from npukit.passes.quantized_handoffs import KeepQuantizedHandoffs
from npukit.targets.cpu_presets import get_preset
from npukit.driver.compile_plan import cpu_flags
from support.oracles import OnnxRuntimeReference

IN_C, IN_H, IN_W = 8, 10, 12
X_SCALE, X_ZP = 0.05, -5


class _Graph:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: dict[str, np.ndarray] = {}
        self.outputs: list = []
        self.node("DequantizeLinear", ["x", self.init("x_scale", np.float32(X_SCALE)),
                                       self.init("x_zp", np.int8(X_ZP))], "x_f")

    def init(self, name: str, value) -> str:
        self.inits[name] = np.asarray(value)
        return name

    def node(self, op: str, inputs: list[str], output: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op, inputs, [output], **attrs))
        return output

    def conv(self, name: str, x: tuple[str, float, int], out_c: int, kernel: int, stride: int = 1,
             relu: bool = False) -> tuple[str, float, int]:
        """Conv of the float tensor ``x`` = (name, scale, channels) with int8
        per-channel weights and an int32 bias, quantized: (int8 name, scale,
        zero point)."""
        source, scale, in_c = x
        w_scale = self.rng.uniform(0.002, 0.02, out_c).astype(np.float32)
        self.init(f"{name}_w", self.rng.integers(-127, 128, (out_c, in_c, kernel, kernel), dtype=np.int8))
        self.init(f"{name}_ws", w_scale)
        self.init(f"{name}_wz", np.zeros(out_c, np.int8))
        w = self.node("DequantizeLinear", [f"{name}_w", f"{name}_ws", f"{name}_wz"], f"{name}_wf", axis=0)
        self.init(f"{name}_b", self.rng.integers(-(1 << 13), 1 << 13, out_c, dtype=np.int32))
        self.init(f"{name}_bs", (np.float32(scale) * w_scale).astype(np.float32))
        self.init(f"{name}_bz", np.zeros(out_c, np.int32))
        b = self.node("DequantizeLinear", [f"{name}_b", f"{name}_bs", f"{name}_bz"], f"{name}_bf", axis=0)
        pad = kernel // 2
        y = self.node("Conv", [source, w, b], f"{name}_y", kernel_shape=[kernel, kernel], strides=[stride] * 2,
                      pads=[pad] * 4)
        if relu:
            y = self.node("Relu", [y], f"{name}_relu")
        spread = np.sqrt(in_c * kernel * kernel) * 74.0 * 73.0 * scale * float(np.mean(w_scale)) / 40.0
        return self.quantize(name, y, float(np.float32(spread)), -128 if relu else int(self.rng.integers(-20, 21)))

    def quantize(self, name: str, y: str, scale: float, zp: int) -> tuple[str, float, int]:
        self.init(f"{name}_s", np.float32(scale))
        self.init(f"{name}_z", np.int8(zp))
        return self.node("QuantizeLinear", [y, f"{name}_s", f"{name}_z"], name), scale, zp

    def dequantize(self, q: tuple[str, float, int], channels: int) -> tuple[str, float, int]:
        name = q[0]
        return self.node("DequantizeLinear", [name, f"{name}_s", f"{name}_z"], f"{name}_f"), q[1], channels

    def output(self, q: tuple[str, float, int], shape: list[int]) -> None:
        self.outputs.append((q[0], shape))


def handoff_model(path: Path, seed: int = 0) -> Path:
    g = _Graph(seed)
    x = ("x_f", X_SCALE, IN_C)
    # Block A: the shortcut (1x1, stride 2) before the main branch.
    s = g.conv("a_shortcut", x, 16, 1, stride=2)
    m = g.conv("a_conv2", g.dequantize(g.conv("a_conv1", x, 16, 3, stride=2, relu=True), 16), 16, 3)
    a = g.node("Relu", [g.node("Add", [g.dequantize(s, 16)[0], g.dequantize(m, 16)[0]], "a_sum")], "a_relu")
    g.output(g.quantize("a_out", a, float(np.float32((s[1] + m[1]) * 0.75)), -128), [1, 16, 5, 6])
    # Block B: the main branch before the shortcut (1x1, stride 1).
    n = g.conv("b_conv2", g.dequantize(g.conv("b_conv1", x, IN_C, 3, relu=True), IN_C), IN_C, 3)
    t = g.conv("b_shortcut", x, IN_C, 1)
    b = g.node("Add", [g.dequantize(n, IN_C)[0], g.dequantize(t, IN_C)[0]], "b_sum")
    g.output(g.quantize("b_out", b, float(np.float32(n[1] + t[1])), 3), [1, IN_C, IN_H, IN_W])
    # A global average pool of a pointwise layer's output.
    p = g.conv("p_conv", x, 12, 1, relu=True)
    pooled = g.node("GlobalAveragePool", [g.dequantize(p, 12)[0]], "p_pool")
    g.output(g.quantize("p_out", pooled, p[1], p[2]), [1, 12, 1, 1])
    graph = helper.make_graph(
        g.nodes, "handoffs", [helper.make_tensor_value_info("x", TensorProto.INT8, [1, IN_C, IN_H, IN_W])],
        [helper.make_tensor_value_info(name, TensorProto.INT8, shape) for name, shape in g.outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in g.inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return handoff_model(tmp_path_factory.mktemp("handoffs") / "handoffs.onnx")


def _stored_int32(model: Path, handoffs: KeepQuantizedHandoffs | None) -> list[str]:
    """The shapes of the int32 tensors dispatches store, compiled to
    'stream' with or without the pass."""
    imported = import_model(model, None)
    iree_capi.ensure_global_command_line()
    session = Session()
    session.set_flags("--iree-hal-target-backends=llvm-cpu", *cpu_flags(get_preset("host"), set()))
    text: list[str] = []
    hooks = {"flow": [RemoveLayerBoundaries()], "stream": [lambda m: text.append(str(m))]}
    if handoffs is not None:
        hooks["global-optimization"] = [handoffs]
    PhasedPipeline(session, hooks=hooks).run(Source.wrap_buffer(session, imported.mlir), compile_to="stream")
    return sorted(set(re.findall(r"writeonly:tensor<([0-9x]+)xi32>", text[0])))


def test_dispatches_store_the_int8_tensors(model):
    # Without the pass IREE stores a shortcut's, a main branch's and the pooled layer's accumulators.
    assert _stored_int32(model, None) == ["12x120", "16x5x6", "8x120"]
    handoffs = KeepQuantizedHandoffs()
    assert _stored_int32(model, handoffs) == []
    assert handoffs.marked == {"pool": 1, "addition": 2}


def test_every_layer_takes_the_kernels(model, tmp_path):
    """Each convolution keeps its own output stage, the ADDs read an int8
    residual, the pool reads int8."""
    result = npukit.compile(model, out_dir=tmp_path / "tuned")
    operations = sorted(e["operation"] for e in result.manifest["cpu_kernels"].values() if "operation" in e)
    assert operations == ["convolution", "convolution + add", "convolution + relu", "convolution + relu",
                          "pointwise convolution", "pointwise convolution + add",
                          "pointwise convolution + relu"]
    pools = [d["name"] for d in result.manifest["dispatches"] if "_reduction_" in d["name"]]
    assert len(pools) == 1 and pools[0].endswith("_i8xf32"), pools


def test_mynpu_runs_every_layer(model, tmp_path):
    result = npukit.compile(model, target="mynpu", output="embedded", out_dir=tmp_path / "npu")
    rows = result.manifest["mynpu"]["dispatches"]
    assert sum(1 for r in rows if r["device"] == "mynpu") == 7, rows
    assert result.manifest["mynpu"]["summary"]["npu_mac_share"] > 0.99


def test_results_equal_irees_code_and_onnxruntime(model, tmp_path):
    tuned = npukit.load(npukit.compile(model, out_dir=tmp_path / "tuned"))
    stock = npukit.load(npukit.compile(model, cpu_pipeline="stock", out_dir=tmp_path / "stock"))
    ort = OnnxRuntimeReference(model)
    rng = np.random.default_rng(4)
    equal = 0
    for _ in range(10):
        x = rng.integers(-128, 128, (1, IN_C, IN_H, IN_W), dtype=np.int8)
        got, want, oracle = tuned(x), stock(x), ort(x)
        for g, w, o in zip(got, want, oracle):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
            # onnxruntime's float sums may round a layer's value across a half step (test_onnx_qdq_rounding).
            assert np.abs(np.asarray(g, np.int32) - o.astype(np.int32)).max() <= 1
            equal += np.array_equal(np.asarray(g), o)
    assert equal >= 27, f"{equal} of 30 outputs equal onnxruntime's"
