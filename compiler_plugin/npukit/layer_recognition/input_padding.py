"""A convolution's input padding read inside its dispatch: a ``tensor.pad``
of the loaded input with static amounts per side and one constant value,
as IREE leaves it in the dispatch when the pad is fused into its consumer
(``--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops``)
instead of being a separate fill and copy into a padded buffer.

Anything else (amounts known only at run time, a value computed per
position, a pad of something other than a tensor read from memory) is
NotSupported with the reason."""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir

from npukit.layer_recognition.dispatch_ir import constant_int, defining_op
from npukit.layer_recognition.layer_spec import NotSupported


@dataclass(frozen=True)
class InputPadding:
    """``source`` padded by ``low[d]`` elements before and ``high[d]`` after
    along each dimension d, the new positions holding ``value``."""

    source: ir.Value
    low: tuple[int, ...]
    high: tuple[int, ...]
    value: int


def input_padding(value: ir.Value) -> InputPadding | None:
    """The padding ``value`` is the result of, or None when it is not a
    ``tensor.pad`` (raises NotSupported for a pad the consumers cannot read)."""
    op = defining_op(value)
    if not isinstance(op, ir.Operation) or op.name != "tensor.pad":
        return None
    if len(op.operands) != 1:
        raise NotSupported("an input padding known only at run time")
    dynamic = ir.ShapedType.get_dynamic_size()
    low = tuple(int(v) for v in ir.DenseI64ArrayAttr(op.attributes["static_low"]))
    high = tuple(int(v) for v in ir.DenseI64ArrayAttr(op.attributes["static_high"]))
    if any(v == dynamic or v < 0 for v in low + high):
        raise NotSupported("an input padding known only at run time")
    block = op.regions[0].blocks[0]
    terminator = list(block.operations)[-1].operation
    if terminator.name != "tensor.yield" or len(terminator.operands) != 1:
        raise NotSupported("an input padding without one yielded value")
    pad = constant_int(terminator.operands[0])
    if pad is None:
        raise NotSupported("an input padded with a value that is not a constant")
    if not str(op.operands[0].type).endswith("xi8>"):
        raise NotSupported("a padded input that is not int8")
    return InputPadding(op.operands[0], low, high, int(pad))
