"""A ``linalg.generic`` body as an expression tree, and its evaluation.

The epilogue matchers (float_epilogue, integer_epilogue) read the tree
structurally; ``evaluate`` computes it on numpy arrays with MLIR's integer
and float semantics, so a matched epilogue can be checked against the
arithmetic its parameters describe, value by value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from iree.compiler import ir

from npukit.layer_recognition.dispatch_ir import UnreadableDispatch, defining_op, dense_array, tensor_type


# Every int8 value, the inputs the recognisers evaluate a dispatch's body on; the float element types (a body
# with any is refused where the recognisers compare integer arithmetic).
INT8_VALUES = np.arange(-128, 128, dtype=np.int64)
FLOAT_TYPES = ("f16", "bf16", "f32", "f64")


@dataclass(frozen=True)
class Node:
    """``op`` is 'arg' (``value`` = block argument index), 'const' (``value`` =
    the scalar) or an operation name with ``operands`` (``value``: a
    comparison's predicate); ``type`` is the result type ('i32', 'f32')."""

    op: str
    operands: tuple["Node", ...] = ()
    value: object = None
    type: str = ""


def expression_of(generic: ir.Operation, result: int = 0) -> Node:
    """The expression the generic's body yields as its ``result``-th value."""
    block = generic.regions[0].blocks[0]
    args = list(block.arguments)
    memo: dict = {}

    def build(value: ir.Value) -> Node:
        for i, a in enumerate(args):
            if a == value:
                return Node("arg", value=i, type=str(a.type))
        owner = defining_op(value)
        if isinstance(owner, ir.Operation):
            key = owner
            if key in memo:
                return memo[key]
            type_ = str(owner.results[0].type) if len(owner.results) else ""
            if owner.name == "arith.constant":
                attr = owner.attributes["value"]
                for cls in (ir.FloatAttr, ir.IntegerAttr):
                    try:
                        node = Node("const", value=cls(attr).value, type=type_)
                        break
                    except ValueError:
                        continue
                else:
                    node = _constant_tensor(attr, type_) or Node("unknown", value=str(owner), type=type_)
            else:
                predicate = None
                if "predicate" in owner.attributes:
                    predicate = ir.IntegerAttr(owner.attributes["predicate"]).value
                node = Node(owner.name, tuple(build(v) for v in owner.operands), predicate, type_)
            memo[key] = node
            return node
        return Node("unknown", value=str(value))

    terminator = list(block.operations)[-1]
    if terminator.operation.name != "linalg.yield" or len(terminator.operands) <= result:
        return Node("unknown")
    return build(terminator.operands[result])


def _constant_tensor(attr: ir.Attribute, type_: str) -> Node | None:
    """A dense integer tensor constant (a lookup table the body extracts from)
    as a "const_tensor" node: its values as a flat tuple, its type text."""
    try:
        values = dense_array(attr)
    except (ValueError, UnreadableDispatch):
        return None
    if values.dtype.kind not in "iub":
        return None
    return Node("const_tensor", value=tuple(int(v) for v in values.reshape(-1)), type=type_)


def walk(node: Node):
    """Every node of the tree (shared subtrees once)."""
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        stack.extend(n.operands)


def commuted(node: Node, op: str):
    """Both orders of a commutative binary node's operands."""
    if node.op != op or len(node.operands) != 2:
        return []
    a, b = node.operands
    return [(a, b), (b, a)]


def constant(node: Node):
    """A constant node's value, else None."""
    return node.value if node.op == "const" else None


# Evaluation ----------------------------------------------------------------------

class NotEvaluable(Exception):
    """The expression has an operation the evaluator does not know."""


def _width(type_: str) -> int | None:
    if type_ == "index":
        return 64  # the evaluator's index type: 64 bits, as on the hosts and for the values it holds
    return int(type_[1:]) if type_.startswith("i") and type_[1:].isdigit() else None


def _wrap(values: np.ndarray, width: int) -> np.ndarray:
    values = np.asarray(values, np.int64)
    if width >= 64:
        return values
    if width == 1:
        return values & 1
    mask = (1 << width) - 1
    u = values & mask
    return np.where(u >= 1 << (width - 1), u - (1 << width), u)


def _unsigned(values: np.ndarray, width: int) -> np.ndarray:
    values = np.asarray(values, np.int64)
    return values & ((1 << width) - 1) if width < 64 else values


_FLOATS = {"f32": np.float32, "f64": np.float64}


def evaluate(node: Node, args: dict[int, np.ndarray]) -> np.ndarray:
    """The expression on numpy arrays (integers as int64 holding the value of
    their width, floats as float32/float64), broadcasting the arguments."""
    memo: dict[int, np.ndarray] = {}

    def ev(n: Node) -> np.ndarray:
        key = id(n)
        if key in memo:
            return memo[key]
        result = _evaluate_one(n, [ev(o) for o in n.operands], args)
        memo[key] = result
        return result

    return ev(node)


def _evaluate_one(n: Node, x: list[np.ndarray], args: dict[int, np.ndarray]) -> np.ndarray:
    op, width = n.op, _width(n.type)
    if op == "arg":
        if n.value not in args:
            raise NotEvaluable(f"block argument {n.value} has no value")
        value = np.asarray(args[n.value])
        return value.astype(_FLOATS[n.type]) if n.type in _FLOATS else np.asarray(value, np.int64)
    if op == "const":
        return np.asarray(n.value, _FLOATS[n.type]) if n.type in _FLOATS else np.asarray(int(n.value), np.int64)
    if op == "const_tensor":
        shape, _ = tensor_type(n.type)
        return np.asarray(n.value, np.int64).reshape(shape)
    if op == "tensor.extract":
        table, *indices = x
        if len(indices) != table.ndim:
            raise NotEvaluable("a tensor.extract of another rank than its tensor")
        indices = np.broadcast_arrays(*indices) if indices else []
        if any(((i < 0) | (i >= size)).any() for i, size in zip(indices, table.shape)):
            raise NotEvaluable("a tensor.extract outside its tensor")
        return table[tuple(indices)] if indices else table[()]
    if op == "arith.index_cast":
        return _wrap(x[0], width)
    in_width = _width(n.operands[0].type) if n.operands else None
    if op in ("arith.addi", "arith.subi", "arith.muli"):
        a, b = x
        value = a + b if op == "arith.addi" else a - b if op == "arith.subi" else a * b
        return _wrap(value, width)
    if op == "arith.divsi":
        a, b = x
        quotient = np.abs(a) // np.where(b == 0, 1, np.abs(b))
        return _wrap(np.where((a < 0) != (b < 0), -quotient, quotient), width)
    if op == "arith.divui":
        a, b = _unsigned(x[0], width), _unsigned(x[1], width)
        return _wrap(a // np.where(b == 0, 1, b), width)
    if op in ("arith.remsi", "arith.remui"):
        a, b = x if op == "arith.remsi" else (_unsigned(x[0], width), _unsigned(x[1], width))
        remainder = np.abs(a) % np.where(b == 0, 1, np.abs(b))
        return _wrap(np.where(a < 0, -remainder, remainder), width)
    if op in ("arith.maxui", "arith.minui"):
        a, b = _unsigned(x[0], width), _unsigned(x[1], width)
        return _wrap(np.maximum(a, b) if op == "arith.maxui" else np.minimum(a, b), width)
    if op in ("arith.maxsi", "arith.minsi"):
        return np.maximum(*x) if op == "arith.maxsi" else np.minimum(*x)
    if op == "arith.andi":
        return _wrap(x[0] & x[1], width)
    if op == "arith.ori":
        return _wrap(x[0] | x[1], width)
    if op == "arith.xori":
        return _wrap(x[0] ^ x[1], width)
    if op == "arith.shli":
        return _wrap(x[0] << np.clip(x[1], 0, 63), width)
    if op == "arith.shrsi":
        return x[0] >> np.clip(x[1], 0, 63)
    if op == "arith.shrui":
        return _wrap(_unsigned(x[0], width) >> np.clip(x[1], 0, 63), width)
    if op == "arith.extsi":
        return x[0]
    if op == "arith.extui":
        return _unsigned(x[0], in_width)
    if op == "arith.trunci":
        return _wrap(x[0], width)
    if op == "arith.select":
        return np.where(x[0] != 0, x[1], x[2])
    if op == "arith.cmpi":
        a, b = x
        if n.value in (6, 7, 8, 9):
            a, b = _unsigned(a, in_width), _unsigned(b, in_width)
        compare = {0: a == b, 1: a != b, 2: a < b, 3: a <= b, 4: a > b, 5: a >= b, 6: a < b, 7: a <= b, 8: a > b,
                   9: a >= b}[n.value]
        return np.asarray(compare, np.int64)
    if op == "math.absi":  # the absolute value wraps: |minimum| is the minimum
        return _wrap(np.abs(x[0]), width)
    if op == "math.ctlz":
        u = _unsigned(x[0], width)
        return np.asarray([width - int(v).bit_length() for v in np.ravel(u)], np.int64).reshape(np.shape(u))
    if op == "arith.sitofp":
        return np.asarray(x[0], _FLOATS[n.type])
    if op == "arith.fptosi":
        return _wrap(np.trunc(x[0]).astype(np.int64), width)
    if op in ("arith.addf", "arith.subf", "arith.mulf", "arith.divf"):
        a, b = x
        with np.errstate(all="ignore"):
            value = a + b if op == "arith.addf" else a - b if op == "arith.subf" else a * b if op == "arith.mulf" \
                else a / b
        return np.asarray(value, _FLOATS[n.type])
    if op in ("arith.maximumf", "arith.maxnumf"):
        return np.maximum(*x) if op == "arith.maximumf" else np.fmax(*x)
    if op in ("arith.minimumf", "arith.minnumf"):
        return np.minimum(*x) if op == "arith.minimumf" else np.fmin(*x)
    if op == "math.absf":
        return np.abs(x[0])
    if op == "arith.negf":
        return -x[0]
    if op == "arith.cmpf":
        a, b = x
        unordered = np.isnan(a) | np.isnan(b)
        table = {0: np.zeros_like(unordered), 1: a == b, 2: a > b, 3: a >= b, 4: a < b, 5: a <= b, 6: a != b,
                 7: ~unordered, 8: (a == b) | unordered, 9: (a > b) | unordered, 10: (a >= b) | unordered,
                 11: (a < b) | unordered, 12: (a <= b) | unordered, 13: (a != b) | unordered, 14: unordered,
                 15: np.ones_like(unordered)}
        return np.asarray(table[n.value] & (~unordered if n.value in range(1, 7) else True), np.int64)
    if op == "math.roundeven":
        return np.asarray(np.round(x[0]), _FLOATS[n.type])
    raise NotEvaluable(f"'{op}'")
