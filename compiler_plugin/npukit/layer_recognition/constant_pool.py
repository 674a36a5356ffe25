"""What each dispatch's bindings are at its one call site, and the bytes of
the constant ones.

At the 'stream' boundary IREE has packed a model's weights into constant
resources (``util.buffer.constant`` of a ``#util.composite`` stored into a
global by an initializer) and passes them to dispatches as bindings at
resource offsets. The NPU needs those weights at compile time to pack them in
its own layout, so this module follows each dispatch's binding back to the
composite and lays the composite out as bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from iree.compiler import ir

from npukit.layer_recognition.dispatch_ir import DTYPES, DispatchBody, UnreadableDispatch, constant_int, defining_op, \
    dense_array, dense_constant, split_top_level


@dataclass(frozen=True)
class BindingSite:
    """A binding of a dispatch at its call site: the resource's lifetime
    ('constant', 'transient', 'external' ...) and, for constants, the bytes
    from the binding's start."""

    lifetime: str
    data: bytes | None


def composite_bytes(attr: ir.Attribute) -> bytes:
    """The bytes of a ``#util.composite`` (its elements in order, densely)."""
    text = str(attr)
    if not text.startswith("#util.composite<"):
        raise ValueError("not a composite")
    total = int(text[len("#util.composite<"):].split("x", 1)[0])
    inner = text[text.index("[") + 1:text.rindex("]")]
    out = bytearray()
    for element in split_top_level(inner):
        out += dense_array(ir.Attribute.parse(element, attr.context)).tobytes()
    if len(out) != total:
        raise ValueError(f"composite of {total} bytes laid out as {len(out)}")
    return bytes(out)


def _stored_constants(module: ir.Operation) -> dict[str, bytes]:
    """Global name -> bytes, for globals an initializer fills from a composite
    constant. The same initializer may also set up other globals (a model's
    variable tensors: their resources, offsets and timepoints); the pool's
    global is the one that receives a constant resource."""
    found: dict[str, bytes] = {}
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name != "util.initializer":
            continue
        constants, stores = [], []

        def visit(inner: ir.Operation) -> ir.WalkResult:
            if inner.name == "util.buffer.constant":
                constants.append(inner)
            elif inner.name == "util.global.store" and _resource_lifetime(inner.operands[0]) == "constant":
                stores.append(ir.FlatSymbolRefAttr(inner.attributes["global"]).value)
            return ir.WalkResult.ADVANCE

        op.walk(visit)
        if len(constants) == 1 and len(stores) == 1:
            try:
                found[stores[0]] = composite_bytes(constants[0].attributes["value"])
            except (ValueError, UnreadableDispatch):
                continue  # a pool npukit cannot lay out: its dispatches' constants stay unknown
    return found


def _resource_lifetime(value: ir.Value) -> str:
    text = str(value.type)
    return text.split("<", 1)[1].rstrip(">") if "<" in text else text


def binding_sites(module: ir.Operation) -> dict[str, list[BindingSite] | str]:
    """Export name -> its bindings at its call site, or the reason they cannot
    be known (several call sites, run-time offsets)."""
    globals_data = _stored_constants(module)
    sites: dict[str, list] = {}

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name != "stream.cmd.dispatch":
            return ir.WalkResult.ADVANCE
        segments = [int(v) for v in ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])]
        operands = list(op.operands)
        start = segments[0] + segments[1]
        count = segments[2]
        resources = operands[start:start + count]
        offsets = operands[start + 2 * count:start + 3 * count]
        bindings: list[BindingSite] | str = []
        for resource, offset in zip(resources, offsets):
            lifetime = _resource_lifetime(resource)
            data = None
            if lifetime == "constant":
                data = _constant_resource(resource, globals_data)
                at = constant_int(offset)
                if data is None or at is None:
                    bindings = "its constants are not a compile-time constant pool"
                    break
                data = data[at:]
            bindings.append(BindingSite(lifetime, data))
        for ref in ir.ArrayAttr(op.attributes["entry_points"]):
            export = str(ref).rsplit("::@", 1)[-1]
            sites.setdefault(export, []).append(bindings)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    result: dict[str, list[BindingSite] | str] = {}
    for export, found in sites.items():
        result[export] = found[0] if len(found) == 1 else "it is dispatched from more than one place"
    return result


def _constant_resource(resource: ir.Value, globals_data: dict[str, bytes]) -> bytes | None:
    """Follows an execute region's block argument to the global it loads."""
    value = resource
    for _ in range(4):
        op = defining_op(value)
        if isinstance(op, ir.Block):
            region_op = op.owner.operation
            index = next(i for i, a in enumerate(op.arguments) if a == value)
            if region_op.name != "stream.cmd.execute" or index >= len(region_op.operands):
                return None  # a region whose arguments are not its operands in order: unknown
            value = region_op.operands[index]
            continue
        if op.name == "util.global.load":
            return globals_data.get(ir.FlatSymbolRefAttr(op.attributes["global"]).value)
        return None
    return None


def constant_reader(body: DispatchBody, site: list[BindingSite] | str | None):
    """``constant_of(value)``: a value's compile-time contents in a dispatch
    (an ``arith.constant``, or a load from a constant binding at its call
    site ``site``), else None."""

    def constant_of(value: ir.Value) -> np.ndarray | None:
        data = dense_constant(value)
        if data is not None:
            return data
        tensor = body.loads.get(value)
        if tensor is None or not isinstance(site, list) or site[tensor.binding].data is None:
            return None
        raw = site[tensor.binding].data
        count = int(np.prod(tensor.shape)) * tensor.element_bytes
        if tensor.offset + count > len(raw):
            return None
        full = np.frombuffer(raw[tensor.offset:tensor.offset + count], DTYPES[tensor.dtype]).reshape(tensor.shape)
        return full[tensor.window]

    return constant_of
