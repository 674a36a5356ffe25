"""A canonical form of an ONNX graph: tensors and nodes renamed after what
computes them, nodes in a topological order that depends only on the graph.

tf2onnx numbers the names it invents with a process-wide counter whose
course follows Python's (randomized) set order, and onnxruntime's
quantizer derives its names and node order from those: two conversions of the
same Keras model give the same graph under different names and orders.
Renaming every tensor after a hash of its computation (and of constants'
bytes) makes equal graphs equal bytes.
"""

from __future__ import annotations

import hashlib
import heapq

import onnx


def _digest(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "little") + part)
    return digest.hexdigest()


def canonical_onnx(data: bytes) -> bytes:
    model = onnx.load_from_string(data)
    graph = model.graph
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for n in graph.node for a in n.attribute):
        raise ValueError("canonical_onnx handles graphs without subgraphs (If/Loop/Scan) only")

    kept = {i.name for i in graph.input} | {o.name for o in graph.output}
    digests: dict[str, str] = {"": ""}
    for initializer in graph.initializer:
        copy = onnx.TensorProto()
        copy.CopyFrom(initializer)
        copy.name = ""
        digests[initializer.name] = _digest(b"constant", copy.SerializeToString(deterministic=True))
    for value in graph.input:
        digests.setdefault(value.name, _digest(b"input", value.name.encode()))
    node_digest: list[str] = []
    for node in graph.node:
        attributes = []
        for attribute in sorted(node.attribute, key=lambda a: a.name):
            attributes.append(attribute.SerializeToString(deterministic=True))
        base = _digest(node.op_type.encode(), node.domain.encode(), *attributes,
                       *(digests[name].encode() for name in node.input))
        node_digest.append(base)
        for position, name in enumerate(node.output):
            if name:
                digests[name] = _digest(base.encode(), str(position).encode())

    names: dict[str, str] = {"": ""}
    used: set[str] = set()

    def name_for(tensor: str, prefix: str) -> str:
        if tensor in names:
            return names[tensor]
        if tensor in kept:
            new = tensor
        else:
            stem = f"{prefix}{digests[tensor][:16]}"
            new, index = stem, 1
            while new in used:
                new, index = f"{stem}_{index}", index + 1
        names[tensor] = new
        used.add(new)
        return new

    # Topological order, ties broken by the nodes' digests.
    producers = {out: i for i, node in enumerate(graph.node) for out in node.output if out}
    waiting = [sum(1 for name in set(node.input) if name in producers) for node in graph.node]
    consumers: dict[int, list[int]] = {}
    for i, node in enumerate(graph.node):
        for name in set(node.input):
            if name in producers:
                consumers.setdefault(producers[name], []).append(i)
    ready = [(node_digest[i], i) for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(i)
        for j in consumers.get(i, []):
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, (node_digest[j], j))
    if len(order) != len(graph.node):
        raise ValueError("the ONNX graph has a cycle")

    initializers = sorted(graph.initializer, key=lambda t: (digests[t.name], t.name))
    for tensor in initializers:  # equal constants become one
        names[tensor.name] = tensor.name if tensor.name in kept else f"c_{digests[tensor.name][:16]}"
        used.add(names[tensor.name])
    nodes = []
    for i in order:
        node = onnx.NodeProto()
        node.CopyFrom(graph.node[i])
        node.name = f"n_{node_digest[i][:16]}"
        node.doc_string = ""
        del node.input[:]
        node.input.extend(names.get(name) or name_for(name, "t_") for name in graph.node[i].input)
        del node.output[:]
        node.output.extend(name_for(name, "t_") for name in graph.node[i].output)
        nodes.append(node)

    del graph.node[:]
    graph.node.extend(nodes)
    renamed = []
    seen: set[str] = set()
    for tensor in initializers:
        copy = onnx.TensorProto()
        copy.CopyFrom(tensor)
        copy.name = names[tensor.name]
        if copy.name not in seen:
            seen.add(copy.name)
            renamed.append(copy)
    del graph.initializer[:]
    graph.initializer.extend(renamed)
    del graph.value_info[:]
    graph.doc_string = ""  # tf2onnx names the traced function, numbered per process
    return model.SerializeToString(deterministic=True)
