"""The live-activation lower bound of a model: at each operator, in the
file's order, the bytes of the non-constant tensors alive at once (each from
its producer, or the start for an input, to its last consumer, or the end for
an output), and the largest such sum.

No memory plan of that operator order can hold the activations in fewer bytes,
so the compile reports it beside the plan it makes (``npukit deploy`` shows
both). Variable tensors (recurrent state) are alive throughout. In a QDQ ONNX
model the float tensors stand for the int8 tensors a deployment keeps (one
byte an element) and a QuantizeLinear or DequantizeLinear of an activation is
the same tensor as its input.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class OperatorLiveness:
    name: str  # the operator's output tensor (what a user finds in the model)
    op: str  # its type: CONV_2D, Conv, ...
    live_bytes: int  # activations alive while it runs, its inputs and outputs included


@dataclass(frozen=True)
class ActivationLiveness:
    operators: list[OperatorLiveness]
    persistent_bytes: int  # variable tensors, alive throughout (included in each operator's figure)

    @property
    def lower_bound(self) -> int:
        return max((o.live_bytes for o in self.operators), default=self.persistent_bytes)

    def to_json(self) -> dict:
        return {
            "lower_bound": self.lower_bound,
            "persistent_bytes": self.persistent_bytes,
            "operators": [{"name": o.name, "op": o.op, "live_bytes": o.live_bytes} for o in self.operators],
        }


def _live_per_step(steps: list[tuple[str, str, list[str], list[str]]], inputs: list[str], outputs: list[str],
                   sizes: dict[str, int], persistent: int) -> ActivationLiveness:
    """|steps|: (name, op, activation inputs, activation outputs) in execution order."""
    first: dict[str, int] = {t: 0 for t in inputs}
    last: dict[str, int] = {t: len(steps) - 1 for t in outputs}
    for step, (_name, _op, ins, outs) in enumerate(steps):
        for t in outs:
            first.setdefault(t, step)
            last[t] = max(last.get(t, step), step)
        for t in ins:
            first.setdefault(t, 0)
            last[t] = max(last.get(t, step), step)
    found = []
    for step, (name, op, _ins, _outs) in enumerate(steps):
        live = sum(sizes.get(t, 0) for t in first if first[t] <= step <= last[t])
        found.append(OperatorLiveness(name, op, live + persistent))
    return ActivationLiveness(found, persistent)


def tflite_liveness(path: Path) -> ActivationLiveness:
    from npukit.frontends.tflite.flatbuffer_reader import read_tflite

    graph = read_tflite(path)
    tensors = graph.tensors

    def activation(index: int) -> bool:
        return index >= 0 and tensors[index].data is None and not tensors[index].is_variable

    def nbytes(index: int) -> int:
        return tensors[index].elements * np.dtype(tensors[index].dtype).itemsize

    steps = []
    for op in graph.operators:
        outs = [str(i) for i in op.outputs if activation(i)]
        name = tensors[op.outputs[0]].name if op.outputs else f"operator {op.index}"
        steps.append((name, op.opcode, [str(i) for i in op.inputs if activation(i)], outs))
    sizes = {str(t.index): nbytes(t.index) for t in tensors if activation(t.index)}
    persistent = sum(nbytes(t.index) for t in tensors if t.is_variable)
    return _live_per_step(steps, [str(i) for i in graph.inputs if activation(i)],
                          [str(i) for i in graph.outputs if activation(i)], sizes, persistent)


_FLOAT_TYPES = (1, 10, 11, 16)  # FLOAT, FLOAT16, DOUBLE, BFLOAT16


def onnx_liveness(path: Path) -> ActivationLiveness:
    import onnx
    from onnx import shape_inference

    model = shape_inference.infer_shapes(onnx.load(str(path)))
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    types: dict[str, tuple[int, tuple[int, ...]]] = {}
    for v in list(graph.input) + list(graph.value_info) + list(graph.output):
        t = v.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in t.shape.dim)
        types[v.name] = (t.elem_type, dims)
    quantized = any(n.op_type in ("QuantizeLinear", "QLinearConv", "QLinearMatMul") for n in graph.node)
    alias: dict[str, str] = {}
    constant = set(initializers)
    for node in graph.node:
        if all(not name or name in constant for name in node.input):
            constant.update(node.output)  # computed from constants only: weights
        elif node.op_type in ("QuantizeLinear", "DequantizeLinear"):
            alias[node.output[0]] = alias.get(node.input[0], node.input[0])

    def size(name: str) -> int:
        elem_type, dims = types.get(name, (1, ()))
        itemsize = 1 if quantized and elem_type in _FLOAT_TYPES else \
            np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)).itemsize
        return int(np.prod(dims, dtype=np.int64)) * itemsize if dims else itemsize

    def root(name: str) -> str:
        return alias.get(name, name)

    steps = []
    sizes: dict[str, int] = {}
    for node in graph.node:
        if node.output and node.output[0] in constant:
            continue
        ins = [root(n) for n in node.input if n and n not in constant]
        outs = [n for n in node.output if n and n not in alias]
        for n in outs:
            sizes[n] = size(n)
        steps.append((node.output[0] if node.output else node.name, node.op_type, ins,
                      outs if outs else [root(node.output[0])]))
    inputs = [i.name for i in graph.input if i.name not in initializers]
    for name in inputs:
        sizes.setdefault(name, size(name))
    return _live_per_step(steps, inputs, [root(o.name) for o in graph.output], sizes, 0)


def activation_liveness(path: Path) -> ActivationLiveness | None:
    """The model file's liveness, or None for a format without an operator graph here (MLIR)."""
    suffix = path.suffix.lower()
    if suffix == ".tflite":
        return tflite_liveness(path)
    if suffix == ".onnx":
        return onnx_liveness(path)
    return None
