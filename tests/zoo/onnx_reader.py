"""What an .onnx file contains, read with the ``onnx`` package (shapes from
its shape inference): operators, quantization of weights and activations,
and the figures the catalogue derives from them."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

RECURRENT_OPERATORS = frozenset({"LSTM", "GRU", "RNN", "Loop", "Scan"})
_QUANTIZED_TYPES = {onnx.TensorProto.INT8: "int8", onnx.TensorProto.UINT8: "uint8",
                    onnx.TensorProto.INT16: "int16", onnx.TensorProto.UINT16: "uint16"}
_FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
                onnx.TensorProto.BFLOAT16}
# Contractions and the input position of their weights.
_WEIGHT_INPUT = {"Conv": 1, "ConvTranspose": 1, "MatMul": 1, "Gemm": 1, "ConvInteger": 1, "MatMulInteger": 1,
                 "QLinearConv": 3, "QLinearMatMul": 3}


class OnnxModel:
    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            model = onnx.load(str(self.path))
        except Exception as error:  # onnx raises DecodeError and others
            raise ValueError(f"{self.path}: not a readable ONNX model ({error})") from error
        self.model = shape_inference.infer_shapes(model)
        graph = self.model.graph
        self.nodes = list(graph.node)
        self.initializers = {t.name: t for t in graph.initializer}
        for node in self.nodes:
            if node.op_type == "Constant":
                for attribute in node.attribute:
                    if attribute.name == "value":
                        self.initializers[node.output[0]] = attribute.t
        self.producers = {out: node for node in self.nodes for out in node.output}
        self.types: dict[str, tuple[int, tuple[int, ...]]] = {}
        for info in list(graph.input) + list(graph.value_info) + list(graph.output):
            tensor_type = info.type.tensor_type
            dims = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1
                         for d in tensor_type.shape.dim)
            self.types[info.name] = (tensor_type.elem_type, dims)
        for name, tensor in self.initializers.items():
            self.types[name] = (tensor.data_type, tuple(tensor.dims))
        self.inputs = [i.name for i in graph.input if i.name not in self.initializers]
        self.outputs = [o.name for o in graph.output]

    def shape(self, name: str) -> tuple[int, ...]:
        if name not in self.types:
            raise ValueError(f"{self.path}: no shape known for tensor {name!r} (shape inference failed)")
        return self.types[name][1]

    def constant(self, name: str) -> np.ndarray:
        return numpy_helper.to_array(self.initializers[name])

    @cached_property
    def operator_names(self) -> tuple[str, ...]:
        return tuple(sorted({n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
                             for n in self.nodes}))

    @property
    def recurrent(self) -> bool:
        return bool(RECURRENT_OPERATORS & set(self.operator_names))

    @property
    def oracle_limitations(self) -> tuple[str, ...]:
        return ()  # ONNX models' oracle is onnxruntime

    @cached_property
    def weight_bytes(self) -> int:
        return sum(self.constant(name).nbytes for name in self.initializers)

    def weight_source(self, name: str) -> str | None:
        """The initializer behind a weight input: itself, or what a
        DequantizeLinear (possibly behind a Transpose/Reshape) reads."""
        seen = 0
        while name not in self.initializers and name in self.producers and seen < 4:
            node = self.producers[name]
            if node.op_type not in ("DequantizeLinear", "Transpose", "Reshape", "Identity"):
                return None
            name, seen = node.input[0], seen + 1
        return name if name in self.initializers else None

    def weight_dequantizers(self) -> list[onnx.NodeProto]:
        """The DequantizeLinear nodes that read a contraction's weights."""
        found = []
        for node in self.nodes:
            if node.op_type in _WEIGHT_INPUT and len(node.input) > _WEIGHT_INPUT[node.op_type]:
                producer = self.producers.get(node.input[_WEIGHT_INPUT[node.op_type]])
                if producer is not None and producer.op_type == "DequantizeLinear" and producer.input[0] in self.initializers:
                    found.append(producer)
        return found

    @cached_property
    def arithmetic(self) -> str:
        """"int8", "int16x8", "float32" or "mixed": from the types that
        QuantizeLinear produces (activations) and whether every contraction's
        weights are quantized."""
        activations = {_QUANTIZED_TYPES.get(self.types[n.output[0]][0], "other")
                       for n in self.nodes if n.op_type == "QuantizeLinear" and n.output[0] in self.types}
        activations |= {_QUANTIZED_TYPES[self.types[i][0]] for i in self.inputs if self.types[i][0] in _QUANTIZED_TYPES}
        contractions = [n for n in self.nodes if n.op_type in _WEIGHT_INPUT and len(n.input) > _WEIGHT_INPUT[n.op_type]]
        float_weights = [n for n in contractions
                         if n.input[_WEIGHT_INPUT[n.op_type]] in self.initializers
                         and self.initializers[n.input[_WEIGHT_INPUT[n.op_type]]].data_type in _FLOAT_TYPES]
        quantized_weights = len(contractions) - len(float_weights)
        if not activations:
            return "float32" if quantized_weights == 0 or not any(
                n.op_type == "DequantizeLinear" for n in self.nodes) else "mixed"
        if float_weights:
            return "mixed"
        if activations == {"int8"}:
            return "int8"
        if activations == {"int16"}:
            return "int16x8"
        return "mixed"

    @cached_property
    def macs(self) -> int:
        return sum(self.node_macs(node) for node in self.nodes)

    def node_macs(self, node: onnx.NodeProto) -> int:
        """Multiply-accumulates of the contractions (Conv, ConvTranspose,
        MatMul, Gemm and their integer forms, LSTM/GRU/RNN); none for the
        rest."""
        op = node.op_type
        if op in ("Conv", "ConvInteger", "QLinearConv"):
            weights = self.shape(node.input[_WEIGHT_INPUT[op]])
            output = self.shape(node.output[0])
            return _elements(output) * _elements(weights[1:])
        if op == "ConvTranspose":
            weights = self.shape(node.input[1])  # [C, M/group, kh, kw]
            return _elements(self.shape(node.input[0])) * _elements(weights[1:])
        if op in ("MatMul", "MatMulInteger", "QLinearMatMul"):
            return _elements(self.shape(node.output[0])) * self.shape(node.input[0])[-1]
        if op == "Gemm":
            trans_a = next((a.i for a in node.attribute if a.name == "transA"), 0)
            a = self.shape(node.input[0])
            return _elements(self.shape(node.output[0])) * (a[0] if trans_a else a[-1])
        if op in ("LSTM", "GRU", "RNN"):
            steps_batch = _elements(self.shape(node.input[0])[:2])
            return steps_batch * (_elements(self.shape(node.input[1])) + _elements(self.shape(node.input[2])))
        return 0

    @cached_property
    def peak_activation_bytes(self) -> int:
        """As for .tflite: the largest sum of tensors alive at once in node
        order. In a QDQ model the float tensors stand for the int8 tensors a
        deployment keeps (one byte an element), and a QuantizeLinear or
        DequantizeLinear output is the same tensor as its input."""
        quantized = self.arithmetic in ("int8", "mixed") and any(n.op_type == "QuantizeLinear" for n in self.nodes)
        alias: dict[str, str] = {}
        for node in self.nodes:
            if node.op_type in ("QuantizeLinear", "DequantizeLinear") and node.input[0] not in self.initializers:
                alias[node.output[0]] = alias.get(node.input[0], node.input[0])

        def root(name: str) -> str:
            return alias.get(name, name)

        def size(name: str) -> int:
            elem_type, dims = self.types.get(name, (onnx.TensorProto.FLOAT, ()))
            itemsize = 1 if quantized and elem_type in _FLOAT_TYPES else \
                np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)).itemsize
            return _elements(dims) * itemsize

        # Tensors computed from constants only (dequantized weights) are weights.
        constant = set(self.initializers)
        for node in self.nodes:
            if all(not name or name in constant for name in node.input):
                constant.update(node.output)

        first: dict[str, int] = {root(i): 0 for i in self.inputs}
        last: dict[str, int] = {root(o): len(self.nodes) for o in self.outputs}
        sizes: dict[str, int] = {}
        for step, node in enumerate(self.nodes):
            for name in node.output:
                if name and name not in alias and name not in constant:
                    first.setdefault(name, step)
                    last[name] = max(last.get(name, step), step)
                    sizes[name] = size(name)
            for name in node.input:
                if name and name not in constant:
                    key = root(name)
                    first.setdefault(key, 0)
                    last[key] = max(last.get(key, step), step)
        for name in self.inputs:
            sizes.setdefault(root(name), size(name))
        return max((sum(sizes.get(t, 0) for t in first if first[t] <= step <= last[t])
                    for step in range(len(self.nodes) + 1)), default=0)


def _elements(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1
