"""A global average pool over another layer's int32 accumulators, as the
layer kernels run it (LayerSpec kind "average").

IREE fuses a convolution's requantization into the dispatch of the average
pool after it: the convolution's dispatch stores its int32 accumulators, and
the pool's dispatch requantizes each one (bias, ReLU, zero point), in a
residual network adds a second layer's requantized accumulators with
TFLite's ADD, and then sums the int8 results and divides the sum by their
count. The NPU pools int8 tensors and leaves such dispatches to the CPU;
this matcher reads the dispatch's integer parameters for the CPU kernels.
"""

from __future__ import annotations

import numpy as np
from iree.compiler import ir

from npukit.layer_recognition import float_epilogue as ep
from npukit.layer_recognition.dispatch_ir import DispatchBody
from npukit.layer_recognition.dispatch_ir import map_dims
from npukit.layer_recognition.epilogue_parameters import EpilogueInputs, add_parameters, residual_accumulators
from npukit.layer_recognition.float_average import NotAnAverage, match_average
from npukit.layer_recognition.layer_spec import AverageOutput, LayerSpec, NotSupported, TensorLayout


def _roles(dims: list[int | None]) -> tuple[str | None, ...]:
    """A [channel, pixel] tensor's roles from its indexing map's results."""
    if None in dims or sorted(dims) != [0, 1]:
        raise NotSupported("an accumulator tensor indexed other than by (channel, pixel)")
    return tuple("C" if d == 0 else "W" for d in dims)


def match_accumulator_average(body: DispatchBody, constant_of) -> LayerSpec:
    """The average of a dispatch that pools requantized int32 accumulators,
    or NotSupported with the reason. ``constant_of`` as for match_layer."""
    generics = [op for op in body.linalg if op.name == "linalg.generic"]
    if len(generics) != 2 or any(op.name not in ("linalg.generic", "linalg.fill") for op in body.linalg):
        raise NotSupported("a pooling dispatch other than a reduction and a division")
    reduction, consumer = generics
    iterators = [str(a) for a in ir.ArrayAttr(reduction.attributes["iterator_types"])]
    if len(iterators) != 2 or "parallel" not in iterators[0] or "reduction" not in iterators[1]:
        raise NotSupported("a pooling reduction that is not over the pixels of each channel")
    try:
        average = match_average(reduction, consumer)
    except NotAnAverage as e:
        raise NotSupported(str(e)) from None
    stored = [t for v, t in body.stores if v == consumer.results[0]]
    if len(stored) != 1 or len(body.stores) != 1 or stored[0].dtype != "i8":
        raise NotSupported("the average is not stored once as int8")
    inputs = EpilogueInputs(reduction, None, body, constant_of, ("C", "W"))
    maps = [map_dims(m) for m in ir.ArrayAttr(reduction.attributes["indexing_maps"])]

    def layout(arg: int) -> TensorLayout:
        tensor = inputs.tensors.get(arg)
        if tensor is None or tensor.dtype != "i32" or len(tensor.sizes) != 2:
            raise NotSupported("the pooled accumulators are not a 2-d int32 tensor in memory")
        return TensorLayout(tensor, _roles(maps[arg]))

    requantized, residual = ep.match_requantized(average.summand), None
    if requantized is not None and requantized.accumulator.accumulator.op == "arg":
        ifm = layout(requantized.accumulator.accumulator.value)
    else:
        matches = [(arg, ep.match_residual_add(average.summand, arg)) for arg in inputs.tensors]
        matches = [(arg, m) for arg, m in matches if m is not None and m.residual_requantized is not None]
        if not matches:
            raise NotSupported("an average of something other than requantized accumulators (or their ADD)")
        arg, residual = matches[0]
        requantized, ifm = residual.contraction, layout(arg)
    channels, pixels = (ifm.tensor.sizes[ifm.roles.index(r)] for r in ("C", "W"))
    if average.count != pixels:
        raise NotSupported(f"an average of {pixels} values divided by {average.count}")
    stage = residual_accumulators(requantized, inputs, channels)
    add = add_parameters(residual, inputs, ifm, channels) if residual is not None else None
    out = stored[0]
    if int(np.prod(out.sizes)) != channels:
        raise NotSupported("the average is not stored as one value per channel")
    roles = [None] * len(out.sizes)
    if channels > 1:
        roles[out.sizes.index(channels)] = "C"
    ofm = TensorLayout(out, tuple(roles))
    low, high = ep.activation_range(average.activation, average.quantize)
    return LayerSpec("average", ifm, ofm, (channels, 1, pixels), (channels, 1, 1), (1, pixels), (1, 1), (1, 1),
                     np.zeros(0, np.int8), stage.bias, stage.multipliers, 0, requantized.output.zero_point,
                     stage.act_min, stage.act_max, requantized.activation.kind == "relu", add,
                     average=AverageOutput(average.count, low, high), float_epilogue=True,
                     float_unsupported="an average pool of requantized accumulators in float")
