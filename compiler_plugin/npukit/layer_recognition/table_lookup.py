"""An int8 elementwise operation as a 256-entry table (LayerSpec kind "table").

A dispatch that maps each int8 element of one tensor to an int8 element of
another by a function of that element alone (TFLite's int8 LEAKY_RELU,
HARD_SWISH, ABS, TANH, LOGISTIC, a requantizing QUANTIZE or RELU: integer
arithmetic on the value, or a lookup in a constant table) has only 256
possible inputs. The recogniser evaluates the dispatch's own body on all of
them (scalar_expression.evaluate, MLIR's integer semantics), so the table
holds exactly what IREE's code would compute, and the CPU kernels look each
element up (kernels/s8_table.c).

The space: one ``linalg.generic``, every loop parallel, one input read from
memory and one output stored, both int8, whole and contiguous, with the
same shape and the same identity indexing map (no broadcast, no transpose);
a body of integer operations and lookups in integer constant tensors (no
float operation: the compiler's float arithmetic need not be the
target's), computed from the input element alone. Anything else raises
NotSupported with the reason.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from iree.compiler import ir

from npukit.layer_recognition.dispatch_ir import DispatchBody, SystemTensor, generic_inputs_count, map_dims
from npukit.layer_recognition.layer_spec import LayerSpec, NotSupported, TensorLayout
from npukit.layer_recognition.scalar_expression import (
    FLOAT_TYPES, INT8_VALUES, NotEvaluable, evaluate, expression_of, walk)



def flat(layout_tensor) -> TensorLayout:
    """A whole contiguous tensor as one row of elements."""
    n = int(np.prod(layout_tensor.shape))
    return TensorLayout(replace(layout_tensor, shape=(n,), offsets=(0,), sizes=(n,), strides=None), ("W",))


def elementwise_generic(body: DispatchBody, inputs: int) -> tuple[ir.Operation, list[str]]:
    """The dispatch's one ``linalg.generic`` and its iterator types, every loop parallel, of ``inputs``
    tensors; otherwise NotSupported with the reason."""
    if len(body.linalg) != 1 or body.linalg[0].name != "linalg.generic":
        raise NotSupported("not one elementwise operation")
    generic = body.linalg[0]
    iterators = [str(a) for a in ir.ArrayAttr(generic.attributes["iterator_types"])]
    if not all("parallel" in i for i in iterators):
        raise NotSupported("an elementwise operation with a reduction")
    if generic_inputs_count(generic) != inputs:
        raise NotSupported(f"an elementwise operation of {generic_inputs_count(generic)} tensors, not {inputs}")
    return generic, iterators


def elementwise_one_to_one(body: DispatchBody) -> tuple[ir.Operation, SystemTensor, SystemTensor]:
    """The dispatch's one elementwise ``linalg.generic``, the one tensor it reads and the one it stores: whole,
    contiguous, of one shape, both indexed by the identity (no broadcast, no transpose); otherwise
    NotSupported with the reason."""
    generic, iterators = elementwise_generic(body, 1)
    source = body.loads.get(generic.operands[0])
    stored = [t for v, t in body.stores if v == generic.results[0]]
    if source is None or len(stored) != 1 or len(body.stores) != 1:
        raise NotSupported("an elementwise operation whose input or output is not one tensor in memory")
    target = stored[0]
    maps = [map_dims(m) for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
    identity = list(range(len(iterators)))
    if maps[0] != identity or maps[1] != identity:
        raise NotSupported("an elementwise operation that broadcasts or transposes")
    if not (source.is_whole and target.is_whole and source.shape == target.shape):
        raise NotSupported("an elementwise operation on a window of a tensor")
    return generic, source, target


def match_table_lookup(body: DispatchBody) -> LayerSpec:
    """The table of an int8 elementwise dispatch, or NotSupported with the reason."""
    generic, source, target = elementwise_one_to_one(body)
    if source.dtype != "i8" or target.dtype != "i8":
        raise NotSupported(f"an elementwise operation of {source.dtype} to {target.dtype} (a table maps int8 to int8)")
    expression = expression_of(generic)
    if any(n.type in FLOAT_TYPES for n in walk(expression)):
        raise NotSupported("an elementwise operation in float")
    try:
        values = evaluate(expression, {0: INT8_VALUES})
    except NotEvaluable as e:
        raise NotSupported(f"an elementwise operation the compiler cannot evaluate ({e})") from None
    values = np.broadcast_to(np.asarray(values, np.int64), INT8_VALUES.shape)
    if values.min() < -128 or values.max() > 127:
        raise NotSupported("an elementwise operation whose values leave int8")
    table = values.astype(np.int8)
    ifm, ofm = flat(source), flat(target)
    n = int(np.prod(source.shape))
    return LayerSpec("table", ifm, ofm, (1, 1, n), (1, 1, n), (1, 1), (1, 1), (1, 1), table,
                     np.zeros(1, np.int32), [(0, 0)], 0, 0, -128, 127, False)
