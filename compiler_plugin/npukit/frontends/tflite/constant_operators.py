"""Operators whose inputs are all constants, computed at import.

Models exported with float16 weights store each weight as a float16
constant and DEQUANTIZE it to float32 before the layer; models with sparse
weights store them sparse and DENSIFY them first (the reader has already
made a sparse constant dense: sparse_tensors.py). Both are computations on
constants: the operator is dropped and its output becomes a constant, so
the layers read their weights as constants, as they do in any other model.
float16 to float32 is exact. A DENSIFY or a float16 DEQUANTIZE of a tensor
an operator computes is left to the lowerings, which refuse it by name.
"""

from __future__ import annotations

import numpy as np

from npukit.frontends.tflite.flatbuffer_reader import Operator, Tensor, TfliteGraph
from npukit.frontends.tflite.lowering import LoweringContext, lowers


def _folded(op: Operator, tensors: list[Tensor]) -> np.ndarray | None:
    """The constant output of ``op``, or None when it is not computed at import."""
    if len(op.inputs) != 1 or len(op.outputs) != 1 or op.inputs[0] < 0:
        return None
    x, y = tensors[op.inputs[0]], tensors[op.outputs[0]]
    if x.data is None or x.shape != y.shape:
        return None
    if op.opcode == "DENSIFY" and x.dtype == y.dtype:
        return x.data.copy()
    if op.opcode == "DEQUANTIZE" and x.dtype == "float16" and y.dtype == "float32":
        return x.data.astype(np.float32)
    return None


def fold_constant_operators(graph: TfliteGraph) -> int:
    """Computes such operators into constants and drops them from ``graph``; returns how many."""
    kept = []
    for op in graph.operators:
        data = _folded(op, graph.tensors)
        if data is None:
            kept.append(op)
            continue
        graph.tensors[op.outputs[0]].data = data
    folded = len(graph.operators) - len(kept)
    graph.operators = kept
    return folded


@lowers("DENSIFY")
def densify(ctx: LoweringContext, op: Operator) -> None:
    """Reached only when the input is not a constant: folded operators never get here."""
    raise ctx.unsupported("a DENSIFY of a tensor computed at run time",
                          supported="of a constant (computed at import)")
