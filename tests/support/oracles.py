"""Reference implementations nobody on this project wrote."""

from __future__ import annotations

from pathlib import Path

import numpy as np


class TFLiteReference:
    """The TFLite interpreter (ai-edge-litert) on a .tflite model.

    ``kernels``: "default" is the interpreter as users get it (XNNPACK
    delegate: int8 layers requantize in float, rounding half to even);
    "reference" is TFLite's reference kernels, the integer fixed-point
    arithmetic TFLite Micro and CMSIS-NN implement (rounding half away from
    zero). ``num_threads`` (default: the interpreter's choice) pins the
    default kernels' threads, e.g. to 1 for timing comparisons.
    """

    KERNELS = ("default", "reference")

    def __init__(self, path: Path, kernels: str = "default", num_threads: int | None = None):
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        resolvers = {"default": OpResolverType.AUTO, "reference": OpResolverType.BUILTIN_REF}
        if kernels not in resolvers:
            raise ValueError(f"unknown TFLite kernels {kernels!r}; choose one of {', '.join(resolvers)}")
        self.interpreter = Interpreter(
            model_path=str(path), experimental_op_resolver_type=resolvers[kernels], num_threads=num_threads
        )
        self.interpreter.allocate_tensors()
        self.inputs = self.interpreter.get_input_details()
        self.outputs = self.interpreter.get_output_details()
        self.input = self.inputs[0]
        self.output = self.outputs[0]

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.input["shape"])

    def __call__(self, x: np.ndarray) -> np.ndarray:
        self.interpreter.set_tensor(self.input["index"], x)
        self.interpreter.invoke()
        return self.interpreter.get_tensor(self.output["index"]).copy()

    def run(self, xs: list[np.ndarray]) -> list[np.ndarray]:
        """All inputs in the model's order -> all outputs in its order."""
        if len(xs) != len(self.inputs):
            raise ValueError(f"the model takes {len(self.inputs)} inputs, got {len(xs)}")
        for detail, x in zip(self.inputs, xs):
            self.interpreter.set_tensor(detail["index"], x)
        self.interpreter.invoke()
        return [self.interpreter.get_tensor(detail["index"]).copy() for detail in self.outputs]


class OnnxRuntimeReference:
    """onnxruntime on an .onnx model, node by node as the graph says.

    Graph optimizations are off: with them, onnxruntime fuses QDQ node groups
    into its own integer kernels, whose results depend on the CPU's vector
    extensions (on an AVX2 host without VNNI, kws_int8's logits came out up to
    6 LSB away from the graph's float requantization, on 20 of 20 random
    inputs). Unfused, each node is the ONNX operator's definition on every
    CPU."""

    def __init__(self, path: Path):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self.session.get_inputs()]

    def __call__(self, *xs: np.ndarray) -> list[np.ndarray]:
        return self.session.run(None, dict(zip(self.input_names, xs)))


def assert_int8_close(got: np.ndarray, want: np.ndarray, lsb: int = 1) -> None:
    assert got.dtype == want.dtype == np.int8, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
    assert diff.max() <= lsb, f"int8 outputs differ by {diff.max()} LSB (allowed {lsb}):\n{got}\n{want}"


def assert_float_close(got: np.ndarray, want: np.ndarray, rel: float = 1e-4) -> None:
    """Equal within ``rel`` relative to the output's largest magnitude."""
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = float(np.abs(want).max()) or 1.0
    err = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) / scale
    assert err <= rel, f"float outputs differ by {err:.3g} relative (allowed {rel:.1g}):\n{got}\n{want}"
