"""Checks of a TFLite graph's data flow before any operator is lowered.

The reader has checked that every index is in range; this checks what the
indices mean: every tensor an operator reads is a model input, a constant, a
variable or the output of an earlier operator (so no dangling or cyclic
reference), no tensor is written twice or written over a model input or a
constant, every model output is computed, and each operator has the inputs,
outputs and options table its kind takes (operator_signatures). Operators
npukit lowers must compute with types it computes with (constants of other
types are refused by the lowerings that read them).
"""

from __future__ import annotations

from npukit.errors import ModelError
from npukit.frontends.message_text import short
from npukit.frontends.tflite.flatbuffer_reader import Operator, Tensor, TfliteGraph
from npukit.frontends.tflite.mlir_builder import COMPUTED_TYPES
from npukit.frontends.tflite.operator_signatures import check_operator

#: The operators that take or give a resource variable's handle.
RESOURCE_OPERATORS = frozenset({"VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"})


def _tensor(t: Tensor) -> str:
    return f"tensor {t.index} '{short(t.name)}'"


def _where(graph: TfliteGraph, op: Operator) -> str:
    output = f", output '{short(graph.tensors[op.outputs[0]].name)}'" if op.outputs else ""
    return f"operator {op.index} ({op.opcode}{output})"


def check_graph(graph: TfliteGraph, lowered: "set[str] | frozenset[str]" = frozenset()) -> None:
    """Refuses (ModelError) a graph whose data flow is broken; ``lowered``: the operators that have a lowering."""
    path = graph.path

    def fail(op: Operator):
        return lambda reason: ModelError(f"{path}: {_where(graph, op)}: {reason}")

    available = set(graph.inputs)
    available.update(t.index for t in graph.tensors if t.data is not None or t.is_variable or t.elements == 0)
    written: dict[int, int] = {}
    for op in graph.operators:
        check_operator(op, fail(op))
        if op.opcode in lowered:
            for i in (*op.inputs, *op.outputs):
                t = graph.tensors[i] if i >= 0 else None
                if t is not None and t.dtype == "resource" and op.opcode in RESOURCE_OPERATORS:
                    continue  # a variable's handle: resource_variables.py follows it at import
                if t is not None and t.data is None and t.dtype not in COMPUTED_TYPES:
                    raise fail(op)(f"{_tensor(t)} is {t.dtype}, a type npukit's TFLite importer does not compute "
                                   f"with ({', '.join(sorted(COMPUTED_TYPES))} are)")
        for i in op.inputs:
            if i >= 0 and i not in available:
                t = graph.tensors[i]
                later = [o.index for o in graph.operators if i in o.outputs and o.index >= op.index]
                reason = f"written later by operator {later[0]} (a cycle)" if later else "never written"
                raise fail(op)(f"reads {_tensor(t)}, which is not a model input or a constant and is {reason}")
        for i in op.outputs:
            t = graph.tensors[i]
            if t.is_variable:
                available.add(i)
                continue  # state: operators update it in place
            if i in written:
                raise fail(op)(f"writes {_tensor(t)}, which operator {written[i]} writes too")
            if i in graph.inputs:
                raise fail(op)(f"writes {_tensor(t)}, which is a model input")
            if t.data is not None:
                raise fail(op)(f"writes {_tensor(t)}, which is a constant")
            written[i] = op.index
            available.add(i)
    for i in graph.outputs:
        if i not in available:
            raise ModelError(f"{path}: model output {_tensor(graph.tensors[i])} is never computed")
