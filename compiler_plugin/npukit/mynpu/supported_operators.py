"""Which recognised layers the mynpu NPU runs: predicates on a ``LayerSpec``
and the hardware configuration (in the manner of Vela's supported
operators). Recognising the layer in a dispatch is
npukit.layer_recognition's work; what the NPU adds here is what its
instructions cannot do. Every refusal is a NotSupported whose message is the
reason shown in the placement report."""

from __future__ import annotations

from npukit.layer_recognition.layer_spec import LayerSpec, NotSupported
from npukit.mynpu.options import MynpuOptions


def check_npu_supported(spec: LayerSpec, options: MynpuOptions) -> None:
    """NotSupported with the reason when the NPU cannot run ``spec``."""
    if spec.kind == "table":
        if not options.table:
            raise NotSupported("the hardware configuration has no OP_TABLE (--mynpu-table=off)")
        return
    if spec.kind not in ("conv", "depthwise", "fully_connected"):
        raise NotSupported(f"the NPU runs convolutions, depthwise convolutions, fully connected layers and int8 "
                           f"tables, not this {spec.operation}")
    if spec.padded and spec.kind == "fully_connected":
        raise NotSupported("a padded fully connected layer")
    if spec.padded and max(spec.padding[0], spec.padding[2]) > 255:
        raise NotSupported(f"input padding of {max(spec.padding[0], spec.padding[2])} (PAD_TOP and PAD_LEFT take "
                           "0 .. 255)")
    if spec.padded and not -128 <= spec.pad_value <= 127:
        raise NotSupported(f"an input padded with {spec.pad_value}, outside int8")
    if spec.add is not None and spec.add.accumulators is not None:
        raise NotSupported("a residual addition of another layer's int32 accumulator, requantized in this "
                           "dispatch (the NPU adds int8 tensors)")
    if spec.kind == "depthwise" and options.depthwise == "cpu":
        raise NotSupported("the hardware configuration has no OP_DEPTH_CONV (--mynpu-depthwise=cpu)")

