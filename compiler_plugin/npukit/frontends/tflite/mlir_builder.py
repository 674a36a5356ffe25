"""Building the MLIR that IREE's pipeline takes in: one ``func.func`` of
tensors, with linalg, tensor and arith operations, through the MLIR Python
bindings.

The frontends describe each operator's arithmetic as explicit loops
(``linalg.generic`` with indexing maps) and scalar integer code, so IREE
compiles exactly the arithmetic of the reference kernel; this module holds
the plumbing they share: types, constants, shapes, reshapes, padding and the
generic op builder.
"""

from __future__ import annotations

import io
from typing import Callable, Sequence

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, func, linalg, math, tensor, util

_ELEMENT_TYPES = {
    "int8": lambda: ir.IntegerType.get_signless(8),
    "int16": lambda: ir.IntegerType.get_signless(16),
    "int32": lambda: ir.IntegerType.get_signless(32),
    "int64": lambda: ir.IntegerType.get_signless(64),
    "uint8": lambda: ir.IntegerType.get_signless(8),
    "bool": lambda: ir.IntegerType.get_signless(1),
    "float32": lambda: ir.F32Type.get(),
    "float64": lambda: ir.F64Type.get(),
}
#: The tensor types the lowerings compute with (TFLite's type names).
COMPUTED_TYPES = frozenset(_ELEMENT_TYPES)

_NUMPY_NAMES = {np.dtype(np.int8): "int8", np.dtype(np.int16): "int16", np.dtype(np.int32): "int32",
                np.dtype(np.int64): "int64", np.dtype(np.uint8): "uint8", np.dtype(np.bool_): "bool",
                np.dtype(np.float32): "float32", np.dtype(np.float64): "float64"}

PARALLEL = "parallel"
REDUCTION = "reduction"


def element_type(dtype: str) -> ir.Type:
    """The MLIR element type of a tensor type name (signless integers)."""
    return _ELEMENT_TYPES[dtype]()


def float_max(a: ir.Value, b: ir.Value) -> ir.Value:
    """max(a, b) of floats as a compare and a select: no C library call on
    cores without a floating-point unit (LLVM turns maximumf into fmaximum)."""
    return arith.SelectOp(arith.CmpFOp(arith.CmpFPredicate.OGT, a, b).result, a, b).result


def float_min(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.SelectOp(arith.CmpFOp(arith.CmpFPredicate.OLT, a, b).result, a, b).result


def f32_constant(value: float) -> ir.Value:
    f32 = ir.F32Type.get()
    return arith.ConstantOp(f32, ir.FloatAttr.get(f32, value)).result


def float_clamp(value: ir.Value, low: float, high: float) -> ir.Value:
    """``value`` bounded below by ``low`` and above by ``high`` (an infinite bound is no bound)."""
    if low != -float("inf"):
        value = float_max(value, f32_constant(low))
    if high != float("inf"):
        value = float_min(value, f32_constant(high))
    return value


def round_half_away_f32(value: ir.Value) -> ir.Value:
    """roundf(value) as i32, and INT32_MIN where it does not fit (NaN,
    infinities, |value| >= 2^31), as TFLite's float-to-int conversion gives
    on x86. Compares and conversions only: no C library call."""
    f32, i32 = ir.F32Type.get(), ir.IntegerType.get_signless(32)
    constant = lambda v: arith.ConstantOp(f32, ir.FloatAttr.get(f32, v)).result  # noqa: E731
    inside = arith.CmpFOp(arith.CmpFPredicate.OLT, math.AbsFOp(value).result, constant(2147483648.0)).result
    safe = arith.SelectOp(inside, value, constant(0.0)).result
    whole = arith.FPToSIOp(i32, safe).result
    fraction = arith.SubFOp(safe, arith.SIToFPOp(f32, whole).result).result
    up = arith.ExtUIOp(i32, arith.CmpFOp(arith.CmpFPredicate.OGE, fraction, constant(0.5)).result).result
    down = arith.ExtUIOp(i32, arith.CmpFOp(arith.CmpFPredicate.OLE, fraction, constant(-0.5)).result).result
    rounded = arith.SubIOp(arith.AddIOp(whole, up).result, down).result
    return arith.SelectOp(inside, rounded, arith.ConstantOp(i32, ir.IntegerAttr.get(i32, -(1 << 31))).result).result


def dtype_name(array: np.ndarray) -> str:
    return _NUMPY_NAMES[np.asarray(array).dtype]


def tensor_type(shape: Sequence[int], dtype: str) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape), element_type(dtype))


def affine_map(dims: int, results: Sequence["int | str | ir.AffineExpr"]) -> ir.AffineMap:
    """A map of ``dims`` loop dimensions to ``results``: loop indices (int),
    affine expressions, or text such as ``"d1 * 2 + d4"``."""
    exprs = []
    for r in results:
        if isinstance(r, int):
            exprs.append(ir.AffineDimExpr.get(r))
        elif isinstance(r, str):
            names = ", ".join(f"d{i}" for i in range(dims))
            exprs.append(ir.AffineMapAttr(ir.Attribute.parse(f"affine_map<({names}) -> ({r})>")).value.results[0])
        else:
            exprs.append(r)
    return ir.AffineMap.get(dims, 0, exprs)


class Value:
    """An SSA tensor value with its shape and element type name."""

    __slots__ = ("value", "shape", "dtype")

    def __init__(self, value: ir.Value, shape: Sequence[int], dtype: str) -> None:
        self.value = value
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def elements(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


class ModuleBuilder:
    """One module with one public function; ops are built at the current
    insertion point with the current location (``at``)."""

    def __init__(self) -> None:
        self.context = ir.Context()
        self.location = ir.Location.unknown(self.context)
        with self.context, self.location:
            self.module = ir.Module.create()
        self._block: ir.Block | None = None
        self._function: func.FuncOp | None = None
        self._globals: dict[str, tuple[tuple[int, ...], str]] = {}

    # Function ----------------------------------------------------------------

    def begin_function(self, name: str, inputs: Sequence[tuple[Sequence[int], str]]) -> list[Value]:
        with self.context, self.location, ir.InsertionPoint(self.module.body):
            types = [tensor_type(s, d) for s, d in inputs]
            self._function = func.FuncOp(name, ir.FunctionType.get(types, []))
            self._block = self._function.add_entry_block()
        return [Value(a, s, d) for a, (s, d) in zip(self._block.arguments, inputs)]

    def end_function(self, results: Sequence[Value]) -> None:
        with self.context, self.location, ir.InsertionPoint(self._block):
            func.ReturnOp([r.value for r in results])
            self._function.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
                [a.type for a in self._block.arguments], [r.value.type for r in results]))

    def at(self, name: str):
        """A context in which built ops get the location ``name`` (IREE's
        diagnostics then name the model's operator)."""
        builder = self

        class _At:
            def __enter__(self):
                self._ctx = builder.context.__enter__()
                self._loc = ir.Location.name(name, context=builder.context)
                self._loc.__enter__()
                self._ip = ir.InsertionPoint(builder._block)
                self._ip.__enter__()
                return builder

            def __exit__(self, *exc):
                self._ip.__exit__(*exc)
                self._loc.__exit__(*exc)
                self._ctx.__exit__(*exc)
                return False

        return _At()

    def verify(self) -> None:
        with self.context:
            self.module.operation.verify()

    def bytecode(self) -> bytes:
        buffer = io.BytesIO()
        self.module.operation.write_bytecode(buffer)
        return buffer.getvalue()

    # Constants and fresh tensors ------------------------------------------------

    def constant(self, array: np.ndarray, dtype: str | None = None) -> Value:
        array = np.asarray(array)
        if not array.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
            array = array.copy(order="C")
        dtype = dtype or dtype_name(array)
        if dtype == "uint8":
            array = array.view(np.int8)
        if dtype == "bool":
            array = array.astype(np.bool_)
        type_ = tensor_type(array.shape, dtype)
        if dtype == "bool":
            attr = ir.DenseElementsAttr.get(np.packbits(array.reshape(-1), bitorder="little"), type=type_,
                                            signless=True) if array.size > 1 else \
                ir.DenseElementsAttr.get_splat(type_, ir.IntegerAttr.get(element_type("bool"), int(array.reshape(-1)[0])))
        else:
            attr = ir.DenseElementsAttr.get(array, type=type_)
        return Value(arith.ConstantOp(type_, attr).result, array.shape, dtype)

    def scalar(self, value: "int | float", dtype: str) -> ir.Value:
        type_ = element_type(dtype)
        attr = ir.FloatAttr.get(type_, float(value)) if dtype.startswith("float") else \
            ir.IntegerAttr.get(type_, int(value))
        return arith.ConstantOp(type_, attr).result

    def empty(self, shape: Sequence[int], dtype: str) -> Value:
        return Value(tensor.EmptyOp(list(shape), element_type(dtype)).result, shape, dtype)

    def filled(self, shape: Sequence[int], dtype: str, value: "int | float") -> Value:
        init = self.empty(shape, dtype)
        result = linalg.fill(self.scalar(value, dtype), outs=[init.value])
        return Value(result, shape, dtype)

    # Generic ops --------------------------------------------------------------------

    def generic(self, inputs: Sequence[tuple[Value, ir.AffineMap]], outputs: Sequence[tuple[Value, ir.AffineMap]],
                iterators: Sequence[str], body: Callable[..., "ir.Value | Sequence[ir.Value]"]) -> list[Value]:
        """A ``linalg.generic``: ``body`` gets the block arguments (inputs,
        then outputs' current values) and returns the yielded values."""
        maps = [m for _, m in inputs] + [m for _, m in outputs]
        op = linalg.GenericOp([o.value.type for o, _ in outputs], [v.value for v, _ in inputs],
                              [o.value for o, _ in outputs],
                              ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                              ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{t}>") for t in iterators]))
        types = [element_type(v.dtype) for v, _ in inputs] + [element_type(o.dtype) for o, _ in outputs]
        block = op.regions[0].blocks.append(*types)
        with ir.InsertionPoint(block):
            yielded = body(*block.arguments)
            if isinstance(yielded, ir.Value):
                yielded = [yielded]
            linalg.YieldOp(list(yielded))
        return [Value(r, o.shape, o.dtype) for r, (o, _) in zip(op.results, outputs)]

    def elementwise(self, inputs: Sequence[Value], out_dtype: str, body: Callable[..., ir.Value],
                    shape: Sequence[int] | None = None) -> Value:
        """A result of ``shape`` (default: the first input's) computed element by
        element from inputs of that shape or broadcast to it (numpy rules)."""
        shape = tuple(shape if shape is not None else inputs[0].shape)
        rank = len(shape)
        operands = [self.broadcast_operand(v, shape) for v in inputs]
        out = self.empty(shape, out_dtype)
        return self.generic([(v, affine_map(rank, dims)) for v, dims in operands],
                            [(out, affine_map(rank, list(range(rank))))],
                            [PARALLEL] * rank, lambda *args: body(*args[:-1]))[0]

    def broadcast_operand(self, value: Value, shape: Sequence[int]) -> tuple[Value, list[int]]:
        """``value`` read over a loop nest of ``shape`` by numpy's broadcasting
        rules: the value with the dimensions it broadcasts along dropped, and
        the loop dimensions its remaining ones follow."""
        offset = len(shape) - value.rank
        if offset < 0:
            raise ValueError(f"cannot broadcast {list(value.shape)} to {list(shape)}")
        keep = []
        for i, d in enumerate(value.shape):
            if d == shape[offset + i]:
                keep.append(i)
            elif d != 1:
                raise ValueError(f"cannot broadcast {list(value.shape)} to {list(shape)}")
        if len(keep) < value.rank:
            value = self.reshape(value, [value.shape[i] for i in keep])
        return value, [offset + i for i in keep]

    # Shapes ---------------------------------------------------------------------------

    def reshape(self, value: Value, shape: Sequence[int]) -> Value:
        shape = tuple(int(d) for d in shape)
        if shape == value.shape:
            return value
        if int(np.prod(shape, dtype=np.int64)) != value.elements:
            raise ValueError(f"cannot reshape {list(value.shape)} to {list(shape)}")
        if not shape:  # one value, as a rank-0 tensor
            return self.to_scalar_tensor(value)
        if value.rank == 0:  # a rank-0 tensor as a tensor of ones' shape: an expansion with no groups
            result = tensor.ExpandShapeOp(tensor_type(shape, value.dtype), value.value, ir.ArrayAttr.get([]), [],
                                          list(shape)).result
            return Value(result, shape, value.dtype)
        flat = value
        if value.rank != 1:
            flat = Value(tensor.CollapseShapeOp(tensor_type([value.elements], value.dtype), value.value,
                                                ir.ArrayAttr.get([ir.ArrayAttr.get([
                                                    ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i)
                                                    for i in range(value.rank)])])).result,
                         [value.elements], value.dtype)
        if len(shape) == 1:
            return flat
        result = tensor.ExpandShapeOp(tensor_type(shape, value.dtype), flat.value,
                                      ir.ArrayAttr.get([ir.ArrayAttr.get([
                                          ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i)
                                          for i in range(len(shape))])]), [], list(shape)).result
        return Value(result, shape, value.dtype)

    def to_scalar_tensor(self, value: Value) -> Value:
        """A one-element tensor as a rank-0 tensor."""
        if value.rank == 0:
            return value
        result = tensor.CollapseShapeOp(tensor_type([], value.dtype), value.value, ir.ArrayAttr.get([])).result
        return Value(result, [], value.dtype)

    def transpose(self, value: Value, permutation: Sequence[int]) -> Value:
        permutation = [int(p) for p in permutation]
        if permutation == list(range(value.rank)):
            return value
        shape = [value.shape[p] for p in permutation]
        out = self.empty(shape, value.dtype)
        result = linalg.TransposeOp([out.value.type], value.value, out.value,
                                    ir.DenseI64ArrayAttr.get(permutation))
        block = result.regions[0].blocks.append(element_type(value.dtype), element_type(value.dtype))
        with ir.InsertionPoint(block):
            linalg.YieldOp([block.arguments[0]])
        return Value(result.results[0], shape, value.dtype)

    def pad(self, value: Value, low: Sequence[int], high: Sequence[int], fill: "int | float") -> Value:
        if not any(low) and not any(high):
            return value
        shape = [d + lo + hi for d, lo, hi in zip(value.shape, low, high)]
        index = ir.IndexType.get()
        op = tensor.PadOp(tensor_type(shape, value.dtype), value.value, [], [],
                          ir.DenseI64ArrayAttr.get([int(v) for v in low]),
                          ir.DenseI64ArrayAttr.get([int(v) for v in high]))
        block = op.regions[0].blocks.append(*([index] * value.rank))
        with ir.InsertionPoint(block):
            tensor.YieldOp(self.scalar(fill, value.dtype))
        return Value(op.result, shape, value.dtype)

    def slice(self, value: Value, offsets: Sequence[int], sizes: Sequence[int],
              strides: Sequence[int] | None = None) -> Value:
        strides = list(strides) if strides is not None else [1] * value.rank
        if list(offsets) == [0] * value.rank and tuple(sizes) == value.shape and strides == [1] * value.rank:
            return value
        result = tensor.ExtractSliceOp(tensor_type(sizes, value.dtype), value.value, [], [], [],
                                       ir.DenseI64ArrayAttr.get([int(o) for o in offsets]),
                                       ir.DenseI64ArrayAttr.get([int(s) for s in sizes]),
                                       ir.DenseI64ArrayAttr.get([int(s) for s in strides])).result
        return Value(result, sizes, value.dtype)

    def insert(self, value: Value, into: Value, offsets: Sequence[int], strides: Sequence[int]) -> Value:
        """``value`` written into ``into`` at ``offsets``, its elements ``strides`` apart."""
        result = tensor.InsertSliceOp(value.value, into.value, [], [], [],
                                      ir.DenseI64ArrayAttr.get([int(o) for o in offsets]),
                                      ir.DenseI64ArrayAttr.get([int(s) for s in value.shape]),
                                      ir.DenseI64ArrayAttr.get([int(s) for s in strides])).result
        return Value(result, into.shape, into.dtype)

    def concatenate(self, values: Sequence[Value], axis: int) -> Value:
        if len(values) == 1:
            return values[0]
        shape = list(values[0].shape)
        shape[axis] = sum(v.shape[axis] for v in values)
        result = tensor.ConcatOp(tensor_type(shape, values[0].dtype), axis, [v.value for v in values]).result
        return Value(result, shape, values[0].dtype)

    # State -------------------------------------------------------------------------------

    def state_global(self, name: str, initial: np.ndarray, dtype: str) -> None:
        """A mutable global holding a variable tensor (an LSTM's or SVDF's state)."""
        with self.context, self.location, ir.InsertionPoint.at_block_begin(self.module.body):
            type_ = tensor_type(initial.shape, dtype)
            attr = ir.DenseElementsAttr.get(np.ascontiguousarray(initial), type=type_)
            util.GlobalOp(name, type_, sym_visibility="private", is_mutable=True, initial_value=attr)
        self._globals[name] = (tuple(initial.shape), dtype)

    def load_global(self, name: str) -> Value:
        shape, dtype = self._globals[name]
        result = util.GlobalLoadOp(tensor_type(shape, dtype), ir.FlatSymbolRefAttr.get(name)).result
        return Value(result, shape, dtype)

    def store_global(self, name: str, value: Value) -> None:
        util.GlobalStoreOp(value.value, ir.FlatSymbolRefAttr.get(name))
