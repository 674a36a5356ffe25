"""ONNX ``If`` nodes whose condition is a constant: the branch taken, in place of the node.

IREE 3.13 lowers few forms of ``If`` (Silero VAD's branches on its sample
rate fail with "failed to legalize operation 'torch.operator'"). Once a
condition is known at import (a constant, or computed from constants such
as an input fixed with --input-value), the node is the same as the nodes of
the branch it takes: they are moved into the enclosing graph, and Identity
nodes give the branch's outputs the If's output names. ONNX forbids a
branch to reuse a name of its enclosing graph, so the moved nodes keep
theirs. Repeated with constant folding until nothing changes, as an inlined
branch may hold further Ifs on the same constants.
"""

from __future__ import annotations


def _condition(node, constants) -> bool | None:
    import numpy as np

    value = constants.get(node.input[0]) if node.input else None
    if value is None or np.asarray(value).size != 1:
        return None
    return bool(np.asarray(value).reshape(()))


def inline_constant_branches(model) -> int:
    """Replaces every If of ``model``'s main graph whose condition is an initializer; returns how many."""
    from onnx import helper, numpy_helper

    graph = model.graph
    constants = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    nodes, inlined = [], 0
    for node in graph.node:
        taken = _condition(node, constants) if node.op_type == "If" and node.domain in ("", "ai.onnx") else None
        if taken is None:
            nodes.append(node)
            continue
        branch = next(a.g for a in node.attribute if a.name == ("then_branch" if taken else "else_branch"))
        graph.initializer.extend(branch.initializer)
        nodes.extend(branch.node)
        for inner, outer in zip(branch.output, node.output):
            if outer:
                nodes.append(helper.make_node("Identity", [inner.name], [outer], name=f"{node.name or outer}/taken"))
        inlined += 1
    if inlined:
        del graph.node[:]
        graph.node.extend(nodes)
    return inlined
