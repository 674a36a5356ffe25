"""ONNX convolutions with one output position along an axis: the input they never read is dropped.

IREE 3.13 cannot compile a convolution whose output has one position along a
spatial axis while its (padded) input along that axis is longer than the one
window it reads: its code generation fails with "'linalg.generic' op inferred
input/output operand #1 has shape's dimension #2 to be 4, but found 3"
(measured: a width-2 input padded by 1 with kernel 3 and stride 2, a width-4
input with kernel 3 and stride 2 and no padding, 1-D and 2-D alike; outputs
of two or more positions compile). Strided 1-D encoders at the end of a
short window (Silero VAD's) hit it. The positions beyond the window are never
read, so dropping them is exact: the end padding is cut first, then the input
itself is sliced to the window.
"""

from __future__ import annotations

import numpy as np

from npukit.frontends.onnx_reflect_pad import static_shapes


def _attribute(node, name, default):
    from onnx import helper

    found = next((a for a in node.attribute if a.name == name), None)
    return default if found is None else helper.get_attribute_value(found)


def _window_cuts(node, shapes, weights) -> tuple[list[int], list[int]] | None:
    """(new pads, input length to keep per spatial axis, 0 for no slice), or None when nothing is unread."""
    shape = shapes.get(node.input[0])
    kernel = _attribute(node, "kernel_shape", None) or (list(weights[node.input[1]])[2:]
                                                        if node.input[1] in weights else None)
    if shape is None or kernel is None or _attribute(node, "auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        return None
    spatial = shape[2:]
    if len(spatial) != len(kernel) or any(d is None for d in spatial):
        return None
    rank = len(kernel)
    strides = list(_attribute(node, "strides", [1] * rank))
    dilations = list(_attribute(node, "dilations", [1] * rank))
    pads = list(_attribute(node, "pads", [0] * 2 * rank))
    keep = [0] * rank
    changed = False
    for axis in range(rank):
        span = dilations[axis] * (kernel[axis] - 1) + 1
        padded = spatial[axis] + pads[axis] + pads[axis + rank]
        if padded < span or (padded - span) // strides[axis] != 0 or padded == span:
            continue  # more than one output position, or nothing unread
        excess = padded - span
        cut = min(excess, pads[axis + rank])
        pads[axis + rank] -= cut
        if excess > cut:
            keep[axis] = spatial[axis] - (excess - cut)
        changed = True
    return (pads, keep) if changed else None


def drop_unread_convolution_input(model) -> int:
    """Rewrites ``model`` (shapes inferred) in place; returns how many convolutions changed."""
    from onnx import helper, numpy_helper

    graph = model.graph
    shapes = static_shapes(graph)
    weights = {i.name: i.dims for i in graph.initializer}
    nodes = []
    changed = 0
    for node in graph.node:
        cuts = _window_cuts(node, shapes, weights) if node.op_type == "Conv" and len(node.input) >= 2 else None
        if cuts is None:
            nodes.append(node)
            continue
        changed += 1
        pads, keep = cuts
        base = node.name or node.output[0]
        if any(keep):
            axes = [2 + a for a, k in enumerate(keep) if k]
            names = [f"{base}/window_{what}" for what in ("starts", "ends", "axes")]
            for name, values in zip(names, ([0] * len(axes), [k for k in keep if k], axes)):
                graph.initializer.append(numpy_helper.from_array(np.asarray(values, np.int64), name))
            window = f"{base}/window"
            nodes.append(helper.make_node("Slice", [node.input[0], *names], [window], name=window))
            node.input[0] = window
        for attribute in node.attribute:
            if attribute.name == "pads":
                del attribute.ints[:]
                attribute.ints.extend(pads)
        nodes.append(node)
    if changed:
        del graph.node[:]
        graph.node.extend(nodes)
    return changed
