"""TFLite's integer requantization in the CPU code of quantized dispatches.

IREE computes a quantized model's requantizations in f32 (float_epilogue.py shows
the shapes). TFLite's kernels, TFLite Micro, CMSIS-NN and the mynpu device
compute them in fixed point, and the two disagree by one step whenever a
value lands near a rounding boundary; a residual network then carries that
step on. This pass rewrites, in every dispatch's ``linalg.generic`` bodies:

- a requantized accumulator ``quantize(act(float(acc - corr) * s... + b))``
  into ``clamp(MBQM(acc - corr + bias, M[c], shift[c]) + zp)`` with the
  integer bias and per-channel multipliers TFLite derives (for a fully
  connected layer, TFLite's kernel's double scale with one rounding);
- a quantized addition ``quantize(act(dequantize(a) + dequantize(b)))`` into
  TFLite's int8 ADD (both operands shifted left by 20 and scaled, summed and
  scaled again), whatever computes ``a`` and ``b`` in the same body;
- an average (a reduction summing ``dequantize(q)`` and a division by the
  count with the same scale and zero point in and out) into TFLite's int8
  AVERAGE_POOL_2D: the sum of the int8 values divided with ties away from
  zero.

Anything else (softmax, float layers) is left as IREE wrote it. Compile-time
values come from the dispatch's constants and its constant bindings; a
requantization whose scales or bias are not known at compile time stays in
f32.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, tensor

from npukit.quantization.fixed_point import FixedPoint, split_shift
from npukit.quantization.fixed_point_reference import double_scale_parts
from npukit.layer_recognition import float_epilogue as ep
from npukit.layer_recognition.scalar_expression import Node, expression_of
from npukit.layer_recognition.constant_pool import binding_sites, constant_reader
from npukit.layer_recognition.dispatch_ir import UnreadableDispatch, defining_op, generic_inputs_count, map_dims, \
    read_dispatch
from npukit.layer_recognition.float_average import NotAnAverage, match_average
from npukit.quantization.requantization import ADD_LEFT_SHIFT, accumulator_scale, addition_multipliers, as_f32, \
    integer_bias, quantize_multiplier


class _KeepFloat(Exception):
    """This epilogue stays in f32 (the message says why)."""


@dataclass
class _Factor:
    """A compile-time value: a scalar, or one per index of ``dim``."""

    values: np.ndarray
    dim: int | None = None



def _int_width(type_: ir.Type) -> int | None:
    try:
        return ir.IntegerType(type_).width
    except ValueError:
        return None



class _GenericBody:
    """One ``linalg.generic``: its block arguments, what is known of its
    inputs at compile time, and integer code emitted before its yield."""

    def __init__(self, generic: ir.Operation, constant_of) -> None:
        self.generic = generic
        self.block = generic.regions[0].blocks[0]
        self.args = list(self.block.arguments)
        self.inputs_count = generic_inputs_count(generic)
        self.inputs = list(generic.operands)[:self.inputs_count]
        self.maps = [map_dims(m) for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
        self.constant_of = constant_of
        self.terminator = list(self.block.operations)[-1]
        self._indices: dict[int, ir.Value] = {}
        self._tables: list[ir.Operation] = []
        self.fixed: FixedPoint | None = None

    def replace_result(self, build) -> None:
        """Makes ``build()`` (emitted before the yield, with ``self.fixed``
        set) the body's result; if it raises _KeepFloat, what it emitted is
        removed again and the body stays as it was."""
        with ir.InsertionPoint(self.terminator), self.terminator.location:
            self.fixed = FixedPoint()
            try:
                value = build()
            except _KeepFloat:
                self.discard()
                raise
            self.terminator.operands[0] = value
        _erase_dead(self.block)

    def discard(self) -> None:
        """Removes what an abandoned rewrite emitted."""
        _erase_dead(self.block)
        for table in self._tables:
            if not list(table.results[0].uses):
                table.erase()
        self._tables.clear()
        self._indices.clear()

    # Compile-time values -----------------------------------------------------

    def factor(self, node: Node) -> _Factor:
        if node.op == "const":
            return _Factor(np.array(float(node.value)))
        if node.op != "arg" or node.value >= self.inputs_count:
            raise _KeepFloat("a scale or bias computed at run time")
        dims = self.maps[node.value]
        data = self.constant_of(self.inputs[node.value])
        if data is None or len(dims) > 1 or None in dims:
            raise _KeepFloat("a scale or bias that is not a per-channel constant")
        data = np.asarray(data).reshape(-1)
        return _Factor(data, dims[0] if dims else None) if dims and data.size > 1 else _Factor(data.reshape(()))

    # Emission ----------------------------------------------------------------

    def arg(self, index: int) -> ir.Value:
        return self.args[index]

    def _index(self, dim: int | None) -> ir.Value:
        if dim not in self._indices:
            self._indices[dim] = linalg.IndexOp(dim).result
        return self._indices[dim]

    def per_channel(self, values: np.ndarray, dim: int | None) -> int | ir.Value:
        """A constant, or an i32 table indexed by the loop dimension ``dim``."""
        values = np.asarray(values, np.int64)
        if values.ndim == 0 or np.all(values == values.flat[0]):
            return int(values.flat[0])
        table_type = ir.RankedTensorType.get([values.size], self.fixed.i32)
        with ir.InsertionPoint(self.generic):
            table_op = arith.ConstantOp(table_type, ir.DenseElementsAttr.get(values.astype(np.int32),
                                                                             type=table_type))
        self._tables.append(table_op.operation)
        return tensor.ExtractOp(table_op.result, [self._index(dim)]).result


def _channel_dim(factors: list[_Factor]) -> int | None:
    dims = {f.dim for f in factors if f.dim is not None}
    if len(dims) > 1:
        raise _KeepFloat("per-channel values along different dimensions")
    return dims.pop() if dims else None


def _broadcast(factors: list[_Factor]) -> list[np.ndarray]:
    size = max((f.values.size for f in factors), default=1)
    for f in factors:
        if f.values.size not in (1, size):
            raise _KeepFloat("per-channel values of different lengths")
    return [np.broadcast_to(f.values.reshape(-1) if f.values.size > 1 else f.values.reshape(()), (size,))
            for f in factors]


def _requantize(body: _GenericBody, x: ir.Value, scales: np.ndarray, dim: int | None,
                once: bool = False) -> ir.Value:
    """MBQM(x, M, shift) for each channel's real scale; ``once``: TFLite's
    fully connected scaling, the double product rounded once."""
    if once:
        parts = np.array([double_scale_parts(float(s)) for s in np.asarray(scales, np.float64).reshape(-1)],
                         np.int64)
        high, shift = body.per_channel(parts[:, 0], dim), body.per_channel(parts[:, 2], dim)
        low = body.per_channel(parts[:, 1].astype(np.uint32).view(np.int32), dim)
        low = low & 0xFFFFFFFF if isinstance(low, int) else arith.ExtUIOp(body.fixed.i64, low).result
        return body.fixed.scale_rounded_once(x, high, low, shift)
    pairs = [quantize_multiplier(float(s)) for s in scales]
    multiplier = body.per_channel(np.array([m for m, _ in pairs]), dim)
    shifts = [split_shift(s) for _, s in pairs]
    left = body.per_channel(np.array([l for l, _ in shifts]), dim)
    right = body.per_channel(np.array([r for _, r in shifts]), dim)
    return body.fixed.multiply_by_quantized_multiplier(x, multiplier, left, right)


def _emit_int8(body: _GenericBody, node: Node) -> ir.Value:
    """An int8-valued node (an i8/i16 argument or a quantization) as i32."""
    if node.op == "arg":
        value = body.arg(node.value)
        if _int_width(value.type) not in (8, 16):
            raise _KeepFloat("an operand that is not an 8-bit integer")
        return body.fixed.extend(value)
    if node.op == "arith.extsi":
        return _emit_int8(body, node.operands[0])
    return _emit_quantized(body, node)


def _emit_quantized(body: _GenericBody, node: Node) -> ir.Value:
    quantize = ep.match_quantize(node)
    if quantize is None:
        raise _KeepFloat("not a quantization")
    activation = ep.match_activation(quantize.inner)
    if activation.kind == "unknown":
        raise _KeepFloat("an activation that is not ReLU or a clamp")
    low, high = ep.activation_range(activation, quantize)
    fixed = body.fixed
    accumulator = ep.match_accumulator(activation.inner)
    if accumulator is not None and accumulator.accumulator.op == "arg":
        value = _emit_accumulator(body, accumulator, quantize)
    else:
        value = _emit_addition(body, activation.inner, quantize)
    return fixed.clamp(fixed.add(value, quantize.zero_point), low, high)


def _is_fully_connected(body: _GenericBody, arg: int) -> bool:
    """Whether the accumulator comes from a contraction in this dispatch
    whose result has at most two dimensions (batch, units): a fully
    connected layer, which TFLite requantizes with one rounding. Accumulators
    loaded from memory are another dispatch's convolution (IREE keeps a fully
    connected layer's requantization in its own dispatch)."""
    if arg >= body.inputs_count or _is_reduction(body.generic):
        return False
    producer = defining_op(body.inputs[arg])
    if not isinstance(producer, ir.Operation) or producer.name != "linalg.generic" or not _is_reduction(producer):
        return False
    return len(map_dims(list(ir.ArrayAttr(producer.attributes["indexing_maps"]))[-1])) <= 2


def _emit_accumulator(body: _GenericBody, acc: ep.Accumulator, quantize: ep.Quantize) -> ir.Value:
    fixed = body.fixed
    x = body.arg(acc.accumulator.value)
    if _int_width(x.type) != 32:
        raise _KeepFloat("an accumulator that is not int32")
    if acc.correction is not None:
        if acc.correction.op == "const":
            x = fixed.sub(x, int(acc.correction.value))
        elif acc.correction.op == "arg":
            x = fixed.sub(x, body.arg(acc.correction.value))
        else:
            raise _KeepFloat("a zero-point correction of unknown form")
    factors = [body.factor(f) for f in acc.scales]
    bias = body.factor(acc.bias) if acc.bias is not None else _Factor(np.array(0.0))
    dim = _channel_dim(factors + [bias])
    *scale_values, bias_values = _broadcast(factors + [bias])
    scale = np.ones(bias_values.shape) * accumulator_scale(scale_values)
    try:
        integer = integer_bias(bias_values, scale)
    except ValueError as e:
        raise _KeepFloat(str(e)) from None
    if np.any(integer != 0):
        x = fixed.add(x, body.per_channel(integer, dim))
    return _requantize(body, x, scale / as_f32(quantize.scale), dim,
                       once=_is_fully_connected(body, acc.accumulator.value))


def _emit_addition(body: _GenericBody, node: Node, quantize: ep.Quantize) -> ir.Value:
    fixed = body.fixed
    if node.op != "arith.addf" or len(node.operands) != 2:
        raise _KeepFloat("the quantized value is neither an accumulator nor an addition of int8 values")
    operands = [ep.match_dequantize_int8(o) for o in node.operands]
    if None in operands:
        raise _KeepFloat("an addition of values that are not dequantized int8")
    scales = [ep.scalar(o.scales[0]) for o in operands]
    if None in scales:
        raise _KeepFloat("an addition with per-channel scales")
    multipliers = addition_multipliers(scales[0], scales[1], quantize.scale)
    total = None
    for operand, (multiplier, shift) in zip(operands, multipliers[:2]):
        centred = fixed.sub(_emit_int8(body, operand.source), operand.zero_point)
        shifted = arith.ShLIOp(centred, fixed.constant(ADD_LEFT_SHIFT)).result
        scaled = fixed.multiply_by_quantized_multiplier(shifted, multiplier, *split_shift(shift))
        total = scaled if total is None else fixed.add(total, scaled)
    multiplier, shift = multipliers[2]
    return fixed.multiply_by_quantized_multiplier(total, multiplier, *split_shift(shift))


# Rewriting -----------------------------------------------------------------------


def _erase_dead(block: ir.Block) -> None:
    """Removes the body's operations whose results nothing uses any more."""
    changed = True
    while changed:
        changed = False
        for op in reversed(list(block.operations)[:-1]):
            op = op.operation
            if op.results and all(not list(r.uses) for r in op.results):
                op.erase()
                changed = True


def _rewrite_elementwise(body: _GenericBody) -> bool:
    """An int8 result computed by quantization: the whole expression in
    integers (False: the result is not a quantization)."""
    expression = expression_of(body.generic)
    if expression.op != "arith.fptosi":
        return False
    body.replace_result(lambda: body.fixed.truncate(_emit_quantized(body, expression), 8))
    return True


def _rewrite_average(reduction: _GenericBody, consumer: _GenericBody) -> None:
    """The reduction sums the int8 values themselves (exactly, in f32: at most
    2^16 of them), the consumer divides the sum as TFLite's average pool does."""
    average = match_average(reduction.generic, consumer.generic)
    f32 = ir.F32Type.get(reduction.generic.context)
    reduction.replace_result(lambda: arith.AddFOp(
        reduction.arg(reduction.inputs_count),
        arith.SIToFPOp(f32, _emit_int8(reduction, average.summand)).result).result)

    def divided() -> ir.Value:
        fixed = consumer.fixed
        total = arith.FPToSIOp(fixed.i32, consumer.arg(average.sum_arg)).result
        low, high = ep.activation_range(average.activation, average.quantize)
        return fixed.truncate(fixed.clamp(fixed.rounding_divide(total, average.count), low, high), 8)

    consumer.replace_result(divided)


@dataclass
class DispatchArithmetic:
    """What the pass did to one dispatch."""

    integer: int = 0  # epilogues now in integer arithmetic
    kept_float: list[str] = field(default_factory=list)  # why others stayed in f32

    def describe(self) -> str:
        """'integer', 'none' (nothing quantized) or 'float: <why>'."""
        if self.kept_float:
            return "float: " + "; ".join(dict.fromkeys(self.kept_float))
        return "integer" if self.integer else "none"


def _generics(func: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "linalg.generic":
            found.append(op)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    func.walk(visit)
    return found


def _is_reduction(generic: ir.Operation) -> bool:
    return "reduction" in str(generic.attributes["iterator_types"])


def rewrite_dispatch(func: ir.Operation, constant_of) -> DispatchArithmetic:
    """Rewrites the requantizations of one dispatch function in place."""
    result = DispatchArithmetic()
    generics = _generics(func)
    done: set = set()
    for generic in generics:
        if not _is_reduction(generic) or not str(generic.results[0].type).endswith("xf32>"):
            continue
        users = [u.owner.operation for u in generic.results[0].uses]
        if len(users) != 1 or users[0] not in generics:
            continue
        try:
            _rewrite_average(_GenericBody(generic, constant_of), _GenericBody(users[0], constant_of))
        except (_KeepFloat, NotAnAverage) as e:
            result.kept_float.append(str(e))
            continue
        result.integer += 1
        done.update((generic, users[0]))
    for generic in generics:
        body = _GenericBody(generic, constant_of)
        if generic in done or _is_reduction(generic) or not body.args or str(body.args[-1].type) != "i8":
            continue
        try:
            result.integer += _rewrite_elementwise(body)
        except _KeepFloat as e:
            result.kept_float.append(str(e))
    return result


class IntegerRequantization:
    """The 'stream' pass: every dispatch's requantizations in TFLite's integer
    arithmetic. ``dispatches`` maps export names to what was done."""

    def __init__(self) -> None:
        self.dispatches: dict[str, DispatchArithmetic] = {}

    def __call__(self, module: ir.Operation) -> None:
        sites = binding_sites(module)
        for op in module.regions[0].blocks[0].operations:
            op = op.operation
            if op.name != "stream.executable":
                continue
            try:
                body = read_dispatch(op)
                name, constant_of = body.name, constant_reader(body, sites.get(body.name))
                func = body.function
            except UnreadableDispatch:
                continue
            self.dispatches[name] = rewrite_dispatch(func, constant_of)
