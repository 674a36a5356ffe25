"""Keeps the quantized tensor a model hands from one layer to a pool or a
residual addition, instead of IREE's int32 accumulators.

A quantized model's layer ends in its requantization: the int32
accumulators become the int8 (or int16) tensor the next operator reads
(TFLite and ONNX QDQ semantics alike). IREE's elementwise fusion pulls that
requantization forward into the consumer where the consumer is

- a reduction that is not a contraction (an average or max pool, a MEAN):
  the pool cannot share the layer's dispatch, so the layer's dispatch stores its
  int32 accumulators, four times the tensor the model has, and the pool's
  dispatch requantizes them;
- an elementwise operation reading two layers' outputs (a residual ADD):
  both requantizations fuse into it, the ADD joins one of the two layers'
  dispatches, and the other layer's int32 accumulators are stored for it.

At the 'global-optimization' boundary, before IREE forms its dispatches,
this pass passes such a layer output through ``util.optimization_barrier``
(marked ``npukit.layer_boundary``, removed at 'flow' by
npukit.passes.layer_boundaries): the layer's dispatch then requantizes and
stores the int8 tensor, and the consumer reads it. Of an ADD's layer
outputs the one computed last stays unmarked, so the ADD fuses into that
layer's dispatch with an int8 residual (the form the layer recogniser reads
as a convolution + ADD); the others are stored as int8 and stay live until
the ADD, as in the model. The arithmetic is unchanged: the stored tensor is
the value the fused code computed in between.

A layer output here: an integer tensor of at most 16 bits computed by
elementwise operations (``linalg.generic`` with parallel iterators only,
``iree_linalg_ext.quantize_affine`` / ``dequantize_affine``) from the
integer result of a contraction (a ``linalg.generic`` with a reduction
iterator whose body multiplies its inputs). Only a layer output with one
user is marked (a value with several users is stored by IREE anyway), and
only where it reaches its consumer through such elementwise operations with
one user each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iree.compiler import ir

from npukit.passes.layer_boundaries import MARK

_QUANTIZE_OPS = ("iree_linalg_ext.quantize_affine", "iree_linalg_ext.dequantize_affine")
# How many elementwise steps a value is followed towards its consumer or its source.
_MAX_DEPTH = 12


def _op(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation if hasattr(owner, "operation") else owner


def _iterators(op: ir.Operation) -> list[str]:
    if op.name != "linalg.generic" or "iterator_types" not in op.attributes:
        return []
    return [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]


def _is_elementwise(op: ir.Operation) -> bool:
    iterators = _iterators(op)
    return op.name in _QUANTIZE_OPS or (bool(iterators) and all("parallel" in i for i in iterators))


def _multiplies(op: ir.Operation) -> bool:
    """The body multiplies two values (a contraction's product)."""
    return any(inner.operation.name in ("arith.muli", "arith.mulf")
               for inner in op.regions[0].blocks[0].operations)


def _is_reduction(op: ir.Operation) -> bool:
    return any("reduction" in i for i in _iterators(op))


def _is_contraction(op: ir.Operation) -> bool:
    return _is_reduction(op) and _multiplies(op)


def _integer_width(value: ir.Value) -> int | None:
    if not isinstance(value.type, ir.RankedTensorType):
        return None
    element = value.type.element_type
    return element.width if isinstance(element, ir.IntegerType) else None


def _users(value: ir.Value) -> list[ir.Operation]:
    return [use.owner.operation if hasattr(use.owner, "operation") else use.owner for use in value.uses]


@dataclass
class KeepQuantizedHandoffs:
    """The 'global-optimization' hook; ``marked`` counts the layer outputs
    it passed through a barrier, by the consumer they were kept for (a
    "pool" or an "addition")."""

    marked: dict[str, int] = field(default_factory=lambda: {"pool": 0, "addition": 0})

    def __call__(self, module: ir.Operation) -> None:
        functions: list[ir.Operation] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name in ("util.func", "func.func"):
                functions.append(op)
                return ir.WalkResult.SKIP
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        for function in functions:
            for region in function.regions:
                for block in region.blocks:
                    self._block(block)

    def _block(self, block: ir.Block) -> None:
        order = {}
        for position, op in enumerate(block.operations):
            order[op.operation] = position
        reaches: dict[ir.Operation, bool] = {}

        def is_layer_output(value: ir.Value) -> bool:
            op = _op(value)
            return op is not None and op in order and _is_elementwise(op) and _reaches_contraction(op, reaches)

        marks: dict[ir.Operation, str] = {}
        for op in list(block.operations):
            op = op.operation
            if not op.results or op.name not in ("linalg.generic", *_QUANTIZE_OPS):
                continue
            result = op.results[0]
            width = _integer_width(result)
            if width is None or width > 16 or not is_layer_output(result):
                continue
            consumer = _fusing_consumer(result)
            if consumer is None:
                continue
            if _is_reduction(consumer) and not _multiplies(consumer):
                marks[op] = "pool"
            elif _is_elementwise(consumer) and any(
                    order.get(_op(source), -1) > order[op] and is_layer_output(source)
                    for source in (_source_before_elementwise(v) for v in consumer.operands) if source is not None):
                # The consumer also reads a layer output computed later: the ADD fuses into that layer's dispatch.
                marks[op] = "addition"
        for op, kind in sorted(marks.items(), key=lambda item: order[item[0]]):
            _barrier(op)
            self.marked[kind] += 1


def _reaches_contraction(op: ir.Operation, known: dict[ir.Operation, bool]) -> bool:
    """An elementwise ``op`` computes from a contraction's integer result
    (``known``: the answers so far, by operation; SSA values form no cycle)."""
    if op in known:
        return known[op]
    found = False
    for operand in op.operands:
        source = _op(operand)
        if source is None:
            continue
        if _is_contraction(source):
            width = _integer_width(operand)
            found = width is not None and width >= 32
        elif _is_elementwise(source):
            found = _reaches_contraction(source, known)
        if found:
            break
    known[op] = found
    return found


def _fusing_consumer(value: ir.Value) -> ir.Operation | None:
    """The operation IREE's elementwise fusion would pull ``value``'s
    computation into: past single-user dequantizations (and other
    one-input elementwise steps), the first that is not one; None where a
    value on the way has several users."""
    for _ in range(_MAX_DEPTH):
        users = _users(value)
        if len(users) != 1:
            return None
        user = users[0]
        if user.name == "iree_linalg_ext.dequantize_affine" or (
                _is_elementwise(user) and user.name == "linalg.generic" and len(_tensor_inputs(user)) == 1):
            value = user.results[0]
            continue
        return user
    return None


def _tensor_inputs(op: ir.Operation) -> list[ir.Value]:
    """A generic's inputs that are computed tensors (not constants)."""
    inputs = list(op.operands)[:len(op.operands) - len(op.results)]
    return [v for v in inputs if isinstance(v.type, ir.RankedTensorType) and v.type.rank > 0
            and _op(v) is not None and _op(v).name not in ("arith.constant", "util.global.load")]


def _source_before_elementwise(value: ir.Value) -> ir.Value | None:
    """Back from an operand of an elementwise consumer through
    dequantizations and one-input elementwise steps: the quantized tensor
    it reads."""
    for _ in range(_MAX_DEPTH):
        op = _op(value)
        if op is None:
            return None
        if op.name == "iree_linalg_ext.dequantize_affine":
            value = op.operands[0]
        elif op.name == "linalg.generic" and _is_elementwise(op) and len(_tensor_inputs(op)) == 1 \
                and _integer_width(value) not in (8, 16):
            value = _tensor_inputs(op)[0]
        else:
            return value
    return None


def _barrier(op: ir.Operation) -> None:
    """Passes ``op``'s result through a marked ``util.optimization_barrier``."""
    value = op.results[0]
    users = [(use.owner, use.operand_number) for use in value.uses]
    with ir.InsertionPoint.after(op):
        barrier = ir.Operation.create("util.optimization_barrier", results=[value.type], operands=[value],
                                      attributes={MARK: ir.UnitAttr.get()}, loc=op.location)
    for owner, number in users:
        owner = owner.operation if hasattr(owner, "operation") else owner
        owner.operands[number] = barrier.result
