"""Names the ONNX nodes a compiler error is about.

IREE's ONNX import lowers each node to ``torch.operator "onnx.<OpType>"``
located at the node's name; an operator IREE cannot lower stays in that form
and the error names it. This finds the graph nodes of that operator type.
"""

from __future__ import annotations

import re

from npukit.frontends.imported_model import ImportedModel

_ONNX_OP = re.compile(r"onnx\.([A-Za-z0-9_]+)")


def describe_onnx_op(imported: ImportedModel, error_text: str) -> str | None:
    if not imported.onnx_nodes:
        return None
    m = _ONNX_OP.search(error_text)
    if not m:
        return None
    op_type = m.group(1)
    nodes = [(name, outputs) for t, name, outputs in imported.onnx_nodes if t == op_type]
    if not nodes:
        return f"ONNX operator {op_type}"
    shown = []
    for name, outputs in nodes[:3]:
        label = f"'{name}'" if name else "(unnamed)"
        if outputs:
            label += f" -> {outputs[0]}"
        shown.append(label)
    more = f" and {len(nodes) - 3} more" if len(nodes) > 3 else ""
    return f"ONNX operator {op_type} at node {', '.join(shown)}{more}; IREE 3.13 has no lowering for it"
