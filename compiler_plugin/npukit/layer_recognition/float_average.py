"""An average in IREE's float form: a reduction summing dequantized int8
values and an elementwise consumer dividing the sum by the count and
quantizing it with the same scale and zero point (TFLite's int8
AVERAGE_POOL_2D and MEAN over a plane, as IREE lowers them)."""

from __future__ import annotations

from dataclasses import dataclass

from iree.compiler import ir

from npukit.layer_recognition import float_epilogue as ep
from npukit.layer_recognition.scalar_expression import Node, commuted, expression_of
from npukit.layer_recognition.dispatch_ir import generic_inputs_count
from npukit.quantization.requantization import as_f32


class NotAnAverage(Exception):
    """The reduction and its consumer are not an average of int8 values."""


@dataclass
class Average:
    """A reduction summing ``dequantize(summand)`` and its consumer dividing
    the sum (its argument ``sum_arg``) by ``count`` and quantizing it with
    the summand's own scale and zero point, after ``activation``."""

    summand: Node  # an int8-valued node of the reduction's body
    count: int
    sum_arg: int
    quantize: ep.Quantize
    activation: ep.Activation


def match_average(reduction: ir.Operation, consumer: ir.Operation) -> Average:
    """The average two ``linalg.generic`` ops compute, or NotAnAverage."""
    summand = None
    for a, b in commuted(expression_of(reduction), "arith.addf"):
        if a.op == "arg" and a.value == generic_inputs_count(reduction):
            summand = ep.match_dequantize_int8(b)
            break
    if summand is None or ep.scalar(summand.scales[0]) is None:
        raise NotAnAverage("a reduction that is not a sum of dequantized int8 values")
    quantize = ep.match_quantize(expression_of(consumer))
    activation = ep.match_activation(quantize.inner) if quantize else None
    divided = activation.inner if activation else None
    if activation is None or activation.kind == "unknown" or divided.op != "arith.divf" \
            or divided.operands[0].op != "arg" or ep.scalar(divided.operands[1]) is None:
        raise NotAnAverage("a sum that is not divided by a count and quantized")
    sum_arg = divided.operands[0].value
    if sum_arg >= generic_inputs_count(consumer) or list(consumer.operands)[sum_arg] != reduction.results[0]:
        raise NotAnAverage("a division of something other than the sum")
    count = ep.scalar(divided.operands[1])
    if count != round(count) or not 0 < count <= 1 << 16:
        raise NotAnAverage("an average over a count that is not an integer up to 65536")
    if as_f32(ep.scalar(summand.scales[0])) != as_f32(quantize.scale) or summand.zero_point != quantize.zero_point:
        raise NotAnAverage("an average whose output is quantized differently from its input")
    return Average(summand.source, int(count), sum_arg, quantize, activation)
