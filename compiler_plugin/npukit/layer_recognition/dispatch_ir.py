"""A dispatch as IREE formed it, read from its ``stream.executable``: the
tensors it reads and writes (binding, byte offset, shape, window), its linalg
operations and the constants its body uses.

This is what the NPU's operator predicates look at. Everything is read from
the IR as IREE produces it at the 'stream' boundary; a dispatch whose tensors
are not at compile-time offsets (dynamic shapes, offsets from push constants)
is described with the reason it cannot be read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from iree.compiler import ir

DTYPES = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "f16": np.float16,
          "f32": np.float32, "f64": np.float64}


class UnreadableDispatch(Exception):
    """The dispatch uses something the NPU's analysis cannot describe (the
    message says what); it stays on the CPU."""


@dataclass(frozen=True)
class SystemTensor:
    """A tensor in system memory as a dispatch sees it: a window
    (``offsets``/``sizes``, every ``strides``-th element; None: every one) of
    the ``shape`` tensor at ``offset`` bytes into binding ``binding``."""

    binding: int
    offset: int
    shape: tuple[int, ...]
    dtype: str
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    strides: tuple[int, ...] | None = None

    @property
    def element_bytes(self) -> int:
        return np.dtype(DTYPES[self.dtype]).itemsize

    @property
    def is_whole(self) -> bool:
        return all(o == 0 for o in self.offsets) and self.sizes == self.shape and self.strides is None

    @property
    def window(self) -> tuple[slice, ...]:
        """The elements read, as numpy slices of the whole tensor."""
        steps = self.strides or (1,) * len(self.sizes)
        return tuple(slice(o, o + (n - 1) * st + 1, st) for o, n, st in zip(self.offsets, self.sizes, steps))

    @property
    def extent(self) -> int:
        """Bytes from the binding's start to the end of the tensor."""
        return self.offset + int(np.prod(self.shape)) * self.element_bytes


@dataclass
class DispatchBody:
    name: str
    binding_count: int
    # Tensors loaded and stored, by the SSA value of the load result / stored value.
    loads: dict[ir.Value, SystemTensor] = field(default_factory=dict)
    stores: list[tuple[ir.Value, SystemTensor]] = field(default_factory=list)
    linalg: list[ir.Operation] = field(default_factory=list)
    function: ir.Operation | None = None


def defining_op(value: ir.Value) -> ir.Operation | ir.Block:
    """The operation that defines |value| (the block, for a block argument)."""
    owner = value.owner
    return owner.operation if hasattr(owner, "operation") else owner


def constant_int(value: ir.Value) -> int | None:
    """The value of an integer ``arith.constant``, else None."""
    op = defining_op(value)
    if not isinstance(op, ir.Operation) or op.name != "arith.constant":
        return None
    try:
        return ir.IntegerAttr(op.attributes["value"]).value
    except ValueError:
        return None


def _static_list(op: ir.Operation, name: str) -> tuple[int, ...]:
    values = [int(v) for v in ir.DenseI64ArrayAttr(op.attributes[name])]
    if any(v == ir.ShapedType.get_dynamic_size() for v in values):
        raise UnreadableDispatch(f"'{op.name}' has a dynamic {name.removeprefix('static_')}")
    return tuple(values)


def tensor_type(type_text: str) -> tuple[tuple[int, ...], str]:
    """Shape and element type of ``!iree_tensor_ext.dispatch.tensor<readonly:tensor<4x5xi8>>``,
    ``tensor<4xf32>`` or ``vector<16xi8>``."""
    if "#iree_encoding" in type_text or "encoding_info" in type_text:
        raise UnreadableDispatch("a tensor with a data-tiling encoding (IREE's --iree-opt-data-tiling packs it in "
                                 "its own layout)")
    inner = type_text.split("<")[-1].rstrip(">")
    *dims, dtype = inner.split("x") if "x" in inner else ("", inner)
    if dims == [""]:
        dims = []
    if any(not d.isdigit() for d in dims):
        raise UnreadableDispatch(f"a tensor of dynamic shape ({type_text})")
    if dtype not in DTYPES:
        raise UnreadableDispatch(f"a tensor of element type {dtype}")
    return tuple(int(d) for d in dims), dtype


def read_dispatch(executable: ir.Operation) -> DispatchBody:
    """Reads the one function of a ``stream.executable`` (raises UnreadableDispatch)."""
    inner_module = None
    export_name = None
    for op in executable.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "stream.executable.export":
            export_name = ir.StringAttr(op.attributes["sym_name"]).value
        elif op.name == "builtin.module":
            inner_module = op
    if inner_module is None or export_name is None:
        raise UnreadableDispatch("no exported function")
    funcs = [op.operation for op in inner_module.regions[0].blocks[0].operations
             if op.operation.name == "func.func"]
    if len(funcs) != 1:
        raise UnreadableDispatch("more than one function in the executable")
    func = funcs[0]
    block = func.regions[0].blocks[0]
    args = list(block.arguments)
    body = DispatchBody(export_name, len(args), function=func)
    subspans: dict[ir.Value, tuple[int, int, tuple[int, ...], str]] = {}

    def binding_index(value: ir.Value) -> int:
        for i, a in enumerate(args):
            if a == value:
                return i
        raise UnreadableDispatch("a subspan of something other than a binding")

    def read(op: ir.Operation) -> ir.WalkResult:
        name = op.name
        if name == "stream.binding.subspan":
            offset = constant_int(op.operands[1])
            if offset is None:
                raise UnreadableDispatch("a binding offset known only at run time")
            if len(op.operands) > 2:
                raise UnreadableDispatch("a tensor of dynamic shape")
            shape, dtype = tensor_type(str(op.results[0].type))
            subspans[op.results[0]] = (binding_index(op.operands[0]), offset, shape, dtype)
        elif name in ("iree_tensor_ext.dispatch.tensor.load", "iree_tensor_ext.dispatch.tensor.store"):
            source = op.operands[0] if name.endswith("load") else op.operands[1]
            if source not in subspans:
                raise UnreadableDispatch("a load or store not from a binding subspan")
            if len(op.operands) > (1 if name.endswith("load") else 2):
                raise UnreadableDispatch("a load or store with run-time offsets")
            binding, offset, shape, dtype = subspans[source]
            strides = _static_list(op, "static_strides")
            strided = any(s != 1 for s in strides)
            if strided and name.endswith("store"):
                raise UnreadableDispatch("a strided store")
            tensor = SystemTensor(binding, offset, shape, dtype, _static_list(op, "static_offsets"),
                                  _static_list(op, "static_sizes"), strides if strided else None)
            if name.endswith("load"):
                body.loads[op.results[0]] = tensor
            else:
                body.stores.append((op.operands[0], tensor))
        elif name.startswith("linalg.") and name != "linalg.yield":
            body.linalg.append(op)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    failure: list[UnreadableDispatch] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        try:
            return read(op)
        except UnreadableDispatch as e:  # exceptions must not cross the C++ walk
            failure.append(e)
            return ir.WalkResult.INTERRUPT

    func.walk(visit)
    if failure:
        raise failure[0]
    return body


def split_top_level(text: str) -> list[str]:
    """The comma-separated items of an attribute's text, not splitting inside
    nested <>, [] or () (``->`` is not a bracket)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<[(":
            depth += 1
        elif ch in ">])":
            if ch == ">" and i > 0 and text[i - 1] == "-":
                continue
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


def dense_array(attr: ir.Attribute) -> np.ndarray:
    """A dense elements attribute (splat or not) as a numpy array of its shape."""
    dense = ir.DenseElementsAttr(attr)
    shape, dtype = tensor_type(str(dense.type))
    if dense.is_splat:
        return np.full(shape, dense.get_splat_value().value, dtype=DTYPES[dtype])
    cls = ir.DenseFPElementsAttr if dtype.startswith("f") else ir.DenseIntElementsAttr
    return np.array(cls(dense), dtype=DTYPES[dtype]).reshape(shape)


def dense_constant(value: ir.Value) -> np.ndarray | None:
    """The value of an ``arith.constant`` (scalar or dense tensor), else None."""
    op = defining_op(value)
    if not isinstance(op, ir.Operation) or op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    for cls in (ir.FloatAttr, ir.IntegerAttr):
        try:
            return np.array(cls(attr).value)
        except ValueError:
            pass
    try:
        return dense_array(attr)
    except ValueError:
        return None


def map_dims(attr: ir.Attribute) -> list[int | None]:
    """The loop dimension of each result of an indexing map (None: not a plain dimension)."""
    results = [str(r) for r in ir.AffineMapAttr(attr).value.results]
    return [int(r[1:]) if r.startswith("d") and r[1:].isdigit() else None for r in results]


def generic_inputs_count(generic: ir.Operation) -> int:
    return int(list(ir.DenseI32ArrayAttr(generic.attributes["operandSegmentSizes"]))[0])
