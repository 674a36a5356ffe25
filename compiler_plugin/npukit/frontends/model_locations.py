"""Maps IREE's diagnostics back to the model's own operators.

IREE names an operation by its MLIR location. The TFLite frontend gives
every operation of an operator the location ``OPCODE:index:output-name``;
IREE's ONNX importer gives each node's operations the node's name. An error
about such an operation becomes one line naming the file and the operator:

    m.tflite: operator 3 (CONV_2D, output 'conv1'): <what IREE said>
    m.onnx: node 'spectrum' (DFT, output 'y'): IREE 3.13 has no lowering for the ONNX operator DFT (...)
"""

from __future__ import annotations

import re

from npukit.frontends.imported_model import ImportedModel
from npukit.frontends.model_format import ModelFormat
from npukit.frontends.message_text import short

_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_TFLITE_LOCATION = re.compile(r"^(CUSTOM:[^:]*|[A-Z][A-Z0-9_]*):(\d+)(?::(.*))?$")
_ONNX_OPERATOR = re.compile(r"onnx\.([A-Za-z0-9_]+)")
# A location prefix as MLIR prints it before a message: loc("name"): or loc(fused[...]):
_LOCATION_PREFIX = re.compile(r'^loc\((?:"(?:[^"\\]|\\.)*"|[^()"]|\([^()]*\))*\):\s*')


def _quoted(text: str) -> list[str]:
    return [m.group(1).replace('\\"', '"') for m in _QUOTED.finditer(text)]


def tflite_operator(text: str) -> str | None:
    """The first TFLite operator location in ``text``, as 'operator I (OPCODE, output 'NAME')'."""
    for q in _quoted(text):
        m = _TFLITE_LOCATION.match(q)
        if m:
            output = f", output '{short(m.group(3))}'" if m.group(3) else ""
            return f"operator {m.group(2)} ({m.group(1)}{output})"
    return None


def _node_label(op_type: str, name: str, outputs: list[str]) -> str:
    output = f", output '{short(outputs[0])}'" if outputs else ""
    return f"node '{short(name)}' ({op_type}{output})" if name else f"an unnamed {op_type} node{output}"


def onnx_node(imported: ImportedModel, text: str) -> str | None:
    """The first ONNX node whose name ``text`` quotes as a location."""
    by_name = {name: (t, outputs) for t, name, outputs in imported.onnx_nodes if name}
    for q in _quoted(text):
        if q in by_name:
            op_type, outputs = by_name[q]
            return _node_label(op_type, q, outputs)
    return None


def _onnx_nodes_of_type(imported: ImportedModel, op_type: str) -> str | None:
    nodes = [(name, outputs) for t, name, outputs in imported.onnx_nodes if t == op_type]
    if not nodes:
        return None
    more = f" (and {len(nodes) - 1} more {op_type} nodes)" if len(nodes) > 1 else ""
    name, outputs = nodes[0]
    return _node_label(op_type, name, outputs) + more


def strip_location(line: str) -> str:
    return _LOCATION_PREFIX.sub("", line.strip(), count=1)


def explain_compile_error(imported: ImportedModel, message: str, diagnostics: list[str]) -> str:
    """One line: the file, the model's operator the error is about when known, and the error."""
    text = "\n".join([message, *diagnostics])
    headline = strip_location(message.strip().splitlines()[0] if message.strip() else "IREE failed")
    where = None
    if imported.format is ModelFormat.TFLITE:
        where = tflite_operator(text)
    elif imported.onnx_nodes:
        m = _ONNX_OPERATOR.search(text)
        op_type = m.group(1) if m else None
        where = onnx_node(imported, text) or (_onnx_nodes_of_type(imported, op_type) if op_type else None)
        if op_type and "failed to legalize" in text:
            headline = f"IREE 3.13 has no lowering for the ONNX operator {op_type} in this form ({headline})"
        elif where is None and "crashed" in headline and "before phase 'input'" in headline:
            kinds = sorted({t for t, _, _ in imported.onnx_nodes})
            if len(kinds) <= 12:
                headline += f"; the model's ONNX operators: {', '.join(kinds)}"
    return f"{imported.path}: {where}: {headline}" if where else f"{imported.path}: {headline}"
