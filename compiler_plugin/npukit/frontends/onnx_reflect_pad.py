"""ONNX reflect padding as gathers, ahead of IREE's importer.

IREE 3.13 lowers ``Pad(mode=reflect)`` to a ``linalg.generic`` that reads its
input in reverse; its CPU code generation tiles that operation and then
fails to verify it when a pad is wider than a tile's remainder (measured: a
[1, 576] input padded by 64 on each side of its last axis fails with
"inferred input/output operand #0 has shape's dimension #0 to be greater
than or equal to 64, but found 57"; pads of 2-20 on 40x40 and 100x100 images
compile). Audio front ends (an STFT's reflect padding, as in Silero VAD)
hit it. A reflect pad of an axis whose size is known is the same as a
Gather of that axis with constant indices (``p, p-1, .., 1, 0, .., n-1,
n-2, .., n-1-q`` for pads p before and q after), which IREE compiles as an
indexed read; so each such Pad becomes one Gather per padded axis. A Pad
whose pads or axes are not constants, or whose padded axes have unknown
sizes, is left as it is.
"""

from __future__ import annotations

import numpy as np


def _constants(graph) -> dict:
    from onnx import numpy_helper

    values = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return values


def static_shapes(graph) -> dict[str, list[int | None]]:
    shapes = {}
    for value in (*graph.input, *graph.value_info, *graph.output):
        t = value.type.tensor_type
        if value.type.HasField("tensor_type") and t.HasField("shape"):
            shapes[value.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
    return shapes


def reflect_indices(size: int, before: int, after: int) -> np.ndarray:
    """The source index of every position of an axis of ``size`` reflect-padded by ``before`` and ``after``."""
    return np.concatenate([np.arange(before, 0, -1), np.arange(size), np.arange(size - 2, size - 2 - after, -1)])


def _padded_axes(node, constants, shapes) -> list[tuple[int, int, int, int]] | None:
    """(axis, size, before, after) of every padded axis when the Pad can become gathers, else None."""
    mode = next((a.s.decode() for a in node.attribute if a.name == "mode"), "constant")
    if mode != "reflect" or len(node.input) < 2 or node.input[1] not in constants:
        return None
    shape = shapes.get(node.input[0])
    if shape is None:
        return None
    pads = [int(p) for p in np.asarray(constants[node.input[1]]).reshape(-1)]
    rank = len(shape)
    if len(node.input) > 3 and node.input[3]:
        if node.input[3] not in constants:
            return None
        axes = [int(a) % rank for a in np.asarray(constants[node.input[3]]).reshape(-1)]
    else:
        axes = list(range(rank))
    if len(pads) != 2 * len(axes):
        return None
    padded = []
    for k, axis in enumerate(axes):
        before, after = pads[k], pads[k + len(axes)]
        if before == 0 and after == 0:
            continue
        size = shape[axis]
        if size is None or before < 0 or after < 0 or before >= size or after >= size:
            return None  # unknown size, cropping, or a pad ONNX itself refuses: left to IREE as it is
        padded.append((axis, size, before, after))
    return padded


def reflect_pads_as_gathers(model) -> int:
    """Rewrites ``model`` (shapes inferred) in place; returns how many Pads became gathers."""
    from onnx import helper, numpy_helper

    graph = model.graph
    constants = _constants(graph)
    shapes = static_shapes(graph)
    nodes = []
    rewritten = 0
    for node in graph.node:
        padded = _padded_axes(node, constants, shapes)
        if not padded:
            nodes.append(node)
            continue
        rewritten += 1
        base = node.name or node.output[0]
        current = node.input[0]
        for k, (axis, size, before, after) in enumerate(padded):
            indices = f"{base}/reflect_indices_{axis}"
            graph.initializer.append(numpy_helper.from_array(reflect_indices(size, before, after).astype(np.int64),
                                                             indices))
            out = node.output[0] if k == len(padded) - 1 else f"{base}/reflected_{axis}"
            nodes.append(helper.make_node("Gather", [current, indices], [out], axis=axis,
                                          name=f"{base}" if len(padded) == 1 else f"{base}/axis_{axis}"))
            current = out
    if rewritten:
        del graph.node[:]
        graph.node.extend(nodes)
    return rewritten
