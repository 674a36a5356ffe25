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
    dense_array, dense_constant, split_top_level, tensor_type


@dataclass(frozen=True)
class BindingSite:
    """A binding of a dispatch at its call site: the resource's lifetime
    ('constant', 'transient', 'external' ...) and, for constants, the bytes
    from the binding's start."""

    lifetime: str
    data: bytes | None


@dataclass
class ConstantPool:
    """A global an initializer fills from one ``#util.composite`` constant:
    the global's name, the initializer, the ``util.buffer.constant`` op and
    the composite's elements (their text, in order, laid out densely)."""

    global_name: str
    initializer: ir.Operation
    constant_op: ir.Operation
    size: int
    elements: list[str]
    store: ir.Operation  # the util.global.store of the pool's resource

    def element_sizes(self) -> list[int]:
        """Each element's bytes, from its type (``dense<...> : tensor<64x64xi8>``), without reading its values."""
        sizes = []
        for element in self.elements:
            shape, dtype = tensor_type(element.rsplit(" : ", 1)[-1])
            sizes.append(int(np.prod(shape, dtype=np.int64)) * np.dtype(DTYPES[dtype]).itemsize)
        return sizes

    def data(self) -> bytes:
        context = self.constant_op.context
        return b"".join(dense_array(ir.Attribute.parse(e, context)).tobytes() for e in self.elements)


def composite_elements(attr: ir.Attribute) -> tuple[int, list[str]]:
    """A ``#util.composite``'s size in bytes and its elements' text."""
    text = str(attr)
    if not text.startswith("#util.composite<"):
        raise ValueError("not a composite")
    total = int(text[len("#util.composite<"):].split("x", 1)[0])
    return total, split_top_level(text[text.index("[") + 1:text.rindex("]")])


def constant_pools(module: ir.Operation) -> list[ConstantPool]:
    """The globals initializers fill from one composite constant. The same
    initializer may also set up other globals (a model's variable tensors:
    their resources, offsets and timepoints; a tensor IREE folded to a
    constant and fills on the device, a second constant resource); the
    pool's global is the one whose constant resource comes from the
    composite, and an initializer where that is not one global has none."""
    found: list[ConstantPool] = []
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name != "util.initializer":
            continue
        constants, stores = [], []

        def visit(inner: ir.Operation) -> ir.WalkResult:
            if inner.name == "util.buffer.constant":
                constants.append(inner)
            elif inner.name == "util.global.store" and _resource_lifetime(inner.operands[0]) == "constant":
                stores.append(inner)
            return ir.WalkResult.ADVANCE

        op.walk(visit)
        if len(constants) != 1:
            continue
        fed = [s for s in stores if _derives_from(s.operands[0], constants[0])]
        if len(fed) != 1:
            continue
        try:
            size, elements = composite_elements(constants[0].attributes["value"])
        except ValueError:
            continue
        found.append(ConstantPool(ir.FlatSymbolRefAttr(fed[0].attributes["global"]).value, op, constants[0], size,
                                  elements, fed[0]))
    return found


def _derives_from(value: ir.Value, source: ir.Operation) -> bool:
    """Whether ``value`` may be computed from ``source``'s result (``sources``)."""
    return any(op == source for op, _ in sources(value))


def sources(value: ir.Value) -> list[tuple[ir.Operation, int | None]]:
    """The operations ``value`` may be computed from, followed back through
    their operands, each with the result followed (None: all of them): an
    await's result from the resource it awaits (its operands are the awaited
    resources, in the results' order, then their sizes and the timepoint), a
    block argument from every operand of every branch in its region (more
    than may reach it: a value that might come from an operation counts as
    coming from it)."""
    seen: set = set()
    found: list[tuple[ir.Operation, int | None]] = []
    pending = [value]
    while pending:
        v = pending.pop()
        owner = defining_op(v)
        key = owner if isinstance(owner, ir.Block) else (owner, ir.OpResult(v).result_number)
        if key in seen:
            continue
        seen.add(key)
        if isinstance(owner, ir.Block):
            for block in owner.region.blocks:
                terminator = list(block.operations)[-1].operation if len(block.operations) else None
                if terminator is not None and terminator.name in ("cf.br", "cf.cond_br"):
                    found.append((terminator, None))
                    pending.extend(terminator.operands)
            continue
        if owner.name == "stream.timepoint.await":
            found.append((owner, key[1]))
            pending.append(owner.operands[key[1]])
        else:
            found.append((owner, None))
            pending.extend(owner.operands)
    return found


def _stored_constants(module: ir.Operation) -> dict[str, bytes]:
    """Global name -> bytes, for the constant pools (``constant_pools``)."""
    found: dict[str, bytes] = {}
    for pool in constant_pools(module):
        try:
            data = pool.data()
        except (ValueError, UnreadableDispatch):
            continue  # a pool npukit cannot lay out: its dispatches' constants stay unknown
        if len(data) == pool.size:
            found[pool.global_name] = data
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
