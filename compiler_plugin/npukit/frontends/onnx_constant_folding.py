"""Small ONNX computations on constants, computed at import.

Exporters build a pad's amounts, a reshape's target or a slice's bounds out
of Constant, ConstantOfShape, Concat, Reshape and Slice nodes; ONNX's shape
inference does not evaluate them, so every shape behind them stays unknown
to npukit's graph rewrites (onnx_reflect_pad, onnx_unread_conv_input) even
when the input shapes are fixed. A node whose inputs are all constants and
whose outputs are small integer or boolean tensors (int32, int64 or bool,
at most FOLDED_ELEMENTS elements each: shape arithmetic and the conditions
of branches; never weights, whose
quantized forms IREE and npukit's recogniser must see as the model has
them) is computed here with ONNX's own reference implementation and
replaced by its values; so is a Shape or Size of a tensor whose shape is
known (a branch on a tensor's length, once the input shapes are fixed).
"""

from __future__ import annotations

from npukit.frontends.onnx_reflect_pad import static_shapes

#: The largest output (elements) computed at import; larger constant computations are left to IREE.
FOLDED_ELEMENTS = 4096

_SHAPE_TYPES = ("int32", "int64", "bool")

#: Operators never computed at import: random ones (a value per run) and those with subgraphs.
_NOT_FOLDED = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial",
               "Bernoulli", "If", "Loop", "Scan", "SequenceMap"}


def _constant_values(graph) -> dict:
    from onnx import numpy_helper

    values = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    inputs = {i.name for i in graph.input}
    return {name: value for name, value in values.items() if name not in inputs}  # an input may override it


def _known_shape(node, shapes) -> list | None:
    """A Shape or Size node's result when its input's shape is known (shape inference's, fixed input shapes)."""
    import numpy as np

    if node.op_type not in ("Shape", "Size") or node.domain not in ("", "ai.onnx"):
        return None
    shape = shapes.get(node.input[0])
    if shape is None or any(d is None for d in shape):
        return None
    if node.op_type == "Size":
        return [np.array(int(np.prod(shape)), np.int64)]
    attributes = {a.name: a.i for a in node.attribute}
    start, end = attributes.get("start", 0), attributes.get("end", len(shape))
    return [np.array(shape[start:end], np.int64)]


def fold_small_constants(model) -> int:
    """Computes small constant nodes of ``model``'s main graph in place; returns how many were computed."""
    import numpy as np
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    graph = model.graph
    values = _constant_values(graph)
    shapes = static_shapes(graph)
    outputs = {o.name for o in graph.output}
    opsets = list(model.opset_import)
    kept, folded, created = [], 0, set()
    for node in graph.node:
        foldable = (node.domain in ("", "ai.onnx") and node.op_type not in _NOT_FOLDED and node.output
                    and not outputs.intersection(node.output)
                    and all(not name or name in values for name in node.input))
        results = _known_shape(node, shapes)
        if results is None and foldable:
            try:
                single = helper.make_model(
                    helper.make_graph([node], "fold", [], [helper.make_value_info(o, helper.TypeProto())
                                                           for o in node.output]),
                    opset_imports=opsets)
                feeds = {name: values[name] for name in node.input if name}
                results = ReferenceEvaluator(single).run(None, feeds)
            except Exception:  # noqa: BLE001 - a node the reference cannot compute is left to IREE
                results = None
        if results is None or any(np.asarray(r).size > FOLDED_ELEMENTS or np.asarray(r).dtype not in _SHAPE_TYPES
                                  for r in results):
            kept.append(node)
            continue
        for name, result in zip(node.output, results):
            if name:
                values[name] = np.asarray(result)
                graph.initializer.append(numpy_helper.from_array(np.asarray(result), name))
                created.add(name)
        folded += 1
    if folded:
        used = {name for node in kept for name in node.input} | outputs | set(_names_read_by_bodies(kept))
        del graph.node[:]
        graph.node.extend(kept)
        for initializer in [i for i in graph.initializer if i.name in created and i.name not in used]:
            graph.initializer.remove(initializer)
    return folded


def _names_read_by_bodies(nodes):
    """Every name the nodes of If/Loop/Scan bodies read (a body may read its enclosing graph's values)."""
    import onnx

    for node in nodes:
        for attribute in node.attribute:
            bodies = [attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else list(attribute.graphs)
            for body in bodies:
                for inner in body.node:
                    yield from inner.input
                yield from _names_read_by_bodies(body.node)
