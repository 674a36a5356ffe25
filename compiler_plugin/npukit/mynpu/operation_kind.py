"""The kind of operation a dispatch is, for costs and plots: ``conv`` (a
convolution with a window), ``pointwise`` (1x1), ``depthwise``, ``dense``
(fully connected) or ``other`` (no int8 contraction).

A recognised layer's kind comes from its ``LayerSpec``. A dispatch whose
contraction the recogniser refused (an epilogue it does not read, weights
known only at run time) still has a kind, read off the int8 contraction's
indexing maps, so that its CPU cost uses the right figure.
"""

from __future__ import annotations

from iree.compiler import ir

from npukit.layer_recognition.contraction_geometry import is_int8_contraction
from npukit.layer_recognition.layer_spec import LayerSpec

KINDS = ("conv", "pointwise", "depthwise", "dense", "other")
#: The labels of the plots and reports (the paper's subgraph types).
LABELS = {"conv": "CONV", "pointwise": "POINTWISE", "depthwise": "DEPTH", "dense": "DENSE", "other": "OTHER"}


def spec_kind(spec: LayerSpec) -> str:
    if spec.kind == "depthwise":
        return "depthwise"
    if spec.kind == "fully_connected":
        return "dense"
    if spec.kind == "conv":
        return "pointwise" if spec.kernel == (1, 1) else "conv"
    return "other"


def _dims(attr: ir.Attribute) -> list[set[int]]:
    """Each result of an affine map: the loop dimensions it uses."""
    results = []
    for expr in ir.AffineMapAttr(attr).value.results:
        text = str(expr)
        results.append({int(tok[1:]) for tok in text.replace("*", " ").replace("+", " ").split()
                        if tok.startswith("d") and tok[1:].isdigit()})
    return results


def contraction_kind(executable: ir.Operation) -> str:
    """The kind of a ``stream.executable``'s int8 contraction, from its
    indexing maps alone ('other' without exactly one)."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "linalg.generic" and is_int8_contraction(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    executable.walk(visit)
    if len(found) != 1:
        return "other"
    op = found[0]
    iterators = ["reduction" if "reduction" in str(t) else "parallel"
                 for t in ir.ArrayAttr(op.attributes["iterator_types"])]
    in_map, filter_map, out_map = (_dims(m) for m in ir.ArrayAttr(op.attributes["indexing_maps"]))
    in_dims = set().union(*in_map)
    filter_dims = set().union(*filter_map)
    if any(iterators[d] == "parallel" and d in in_dims for d in filter_dims):
        return "depthwise"  # a channel the input, the filter and the output share
    if any(len(r) > 1 and any(iterators[d] == "reduction" for d in r) for r in in_map):
        return "conv"  # a kernel window slides over the input
    out_shape = ir.ShapedType(op.operands[2].type).shape
    pixels = 1
    for r, size in zip(out_map, out_shape):
        if not r & filter_dims:
            pixels *= size
    return "pointwise" if pixels > 1 else "dense"
