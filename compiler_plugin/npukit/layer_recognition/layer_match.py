"""Recognising a quantized layer in a dispatch IREE formed: an i8 x i8 ->
i32 contraction whose indexing maps are a convolution, a depthwise
convolution or a fully connected layer, followed by one of the epilogues of
``float_epilogue`` (requantization with an optional ReLU, or that plus a
residual addition), or by nothing (int32 accumulators stored for a later
dispatch). The result is a ``LayerSpec``; anything else raises NotSupported
with the reason. The mynpu lowering and the CPU layer kernels both take
their layers from here and add their own predicates.
"""

from __future__ import annotations

import numpy as np
from iree.compiler import ir

from npukit.layer_recognition import float_epilogue as ep
from npukit.layer_recognition import integer_epilogue as ie
from npukit.layer_recognition.scalar_expression import Node, expression_of
from npukit.quantization.requantization import quantize_multiplier
from npukit.layer_recognition.constant_pool import BindingSite, constant_reader
from npukit.layer_recognition.contraction_geometry import Geometry, contraction_geometry, is_int8_contraction
from npukit.layer_recognition.dispatch_ir import DispatchBody, defining_op, dense_constant
from npukit.layer_recognition.epilogue_parameters import EpilogueInputs, add_parameters, requantization
from npukit.layer_recognition.float_parameters import checked_float_add, checked_float_stage
from npukit.layer_recognition.integer_parameters import OutputStage, addition, checked_output_stage
from npukit.layer_recognition.layer_spec import LayerSpec, NotSupported, TensorLayout, merged_channels


def reduces_accumulators(body: DispatchBody) -> bool:
    """Whether a dispatch without an int8 contraction reduces int32
    accumulators loaded from memory (a pool over another layer's result,
    with that layer's requantization fused in)."""
    generics = [op for op in body.linalg if op.name == "linalg.generic"]
    return not any(is_int8_contraction(op) for op in generics) and any(
        t.dtype == "i32" for t in body.loads.values()) and any(
        "reduction" in str(op.attributes["iterator_types"]) for op in generics)


def match_layer(body: DispatchBody, constant_of) -> LayerSpec:
    """The NPU layer of a dispatch, or NotSupported with the reason.
    ``constant_of(value)`` gives a value's compile-time contents or None."""
    contractions = [op for op in body.linalg if op.name == "linalg.generic" and is_int8_contraction(op)]
    if not contractions:
        if reduces_accumulators(body):
            raise NotSupported("a pooling reduction over int32 accumulators, requantized in this dispatch (IREE "
                               "fused the previous layer's requantization into it; the NPU pools int8 tensors)")
        kinds = sorted({op.name.removeprefix("linalg.") for op in body.linalg if op.name != "linalg.fill"})
        what = ", ".join(kinds) if kinds else "data movement only"
        raise NotSupported(f"no int8 contraction ({what})")
    if len(contractions) > 1:
        raise NotSupported("more than one contraction in the dispatch")
    contraction = contractions[0]
    others = [op for op in body.linalg if op is not contraction and op.name != "linalg.fill"]
    fill = defining_op(contraction.operands[2])
    if not (isinstance(fill, ir.Operation) and fill.name == "linalg.fill" and
            (dense_constant(fill.operands[0]) == 0).all()):
        raise NotSupported("the accumulator does not start at zero")
    geometry = contraction_geometry(contraction, body, constant_of)
    channels = geometry.ofm_chw[0]
    if not others:
        stored = [t for v, t in body.stores if v == contraction.results[0]]
        if len(stored) != 1 or len(body.stores) != 1:
            raise NotSupported("the accumulators are not stored once")
        ofm = merged_channels(TensorLayout(stored[0], geometry.ofm_roles))
        return _spec(geometry, ofm, np.zeros(channels, np.int32), None, 0, 0, -128, 127, False)
    if len(others) != 1 or others[0].name != "linalg.generic":
        raise NotSupported("an epilogue of more than one operation")
    generic = others[0]
    stored = [t for v, t in body.stores if v == generic.results[0]]
    if len(stored) != 1 or len(body.stores) != 1 or stored[0].dtype != "i8":
        raise NotSupported("the result is not stored once as int8")
    inputs = EpilogueInputs(generic, contraction, body, constant_of, geometry.ofm_roles)
    if inputs.output_roles is None:
        raise NotSupported("the epilogue writes its result other than element by element")
    ofm = merged_channels(TensorLayout(stored[0], inputs.output_roles))
    expression = expression_of(generic)
    simple = ep.match_requantized(expression)
    if simple is not None:
        bias, multipliers, ifm_zp, scales = requantization(simple, inputs, geometry.weights, geometry.kind,
                                                           channels)
        low, high = ep.activation_range(simple.activation, simple.output)
        spec = _spec(geometry, ofm, bias, multipliers, ifm_zp, simple.output.zero_point, low, high,
                     simple.activation.kind == "relu")
        if geometry.kind == "fully_connected":
            spec.scales = scales  # TFLite's fully connected kernel scales by this double
        _read_float(spec, lambda: (checked_float_stage(expression, simple, inputs, channels), None))
        return spec
    residual = ep.match_residual_add(expression, inputs.contraction_arg)
    if residual is not None:
        if geometry.kind == "fully_connected":
            raise NotSupported("a fully connected layer with a residual addition")
        inner = residual.contraction
        bias, multipliers, ifm_zp, _ = requantization(inner, inputs, geometry.weights, geometry.kind, channels)
        low, high = ep.activation_range(inner.activation, inner.output)
        spec = _spec(geometry, ofm, bias, multipliers, ifm_zp, inner.output.zero_point, low, high,
                     inner.activation.kind == "relu")
        spec.add = add_parameters(residual, inputs, ofm, channels)
        _read_float(spec, lambda: checked_float_add(expression, residual, inputs, channels))
        return spec
    return _integer_epilogue(expression, geometry, ofm, inputs, channels)


def _read_float(spec: LayerSpec, read) -> None:
    """Marks ``spec`` as requantizing in float and reads its float stage (and
    ADD) with ``read``, or records why it cannot."""
    spec.float_epilogue = True
    try:
        spec.float_stage, spec.float_add = read()
    except NotSupported as e:
        spec.float_unsupported = str(e)


def _integer_epilogue(expression, geometry: Geometry, ofm: TensorLayout, inputs: EpilogueInputs,
                      channels: int) -> LayerSpec:
    """The integer output stages of the TFLite frontend (integer_epilogue)."""
    requantized = ie.match_requantization(expression)
    if requantized is not None and requantized.accumulator == Node("arg", value=inputs.contraction_arg, type="i32"):
        stage = checked_output_stage(expression, requantized, inputs, channels)
        return _integer_spec(geometry, ofm, stage)
    added = ie.match_addition(expression)
    if added is not None:
        if geometry.kind == "fully_connected":
            raise NotSupported("a fully connected layer with a residual addition")
        stage, add = addition(expression, added, inputs, inputs.contraction_arg, ofm, channels)
        spec = _integer_spec(geometry, ofm, stage)
        spec.add = add
        return spec
    raise NotSupported("an epilogue that is not a requantization (with ReLU) or a residual addition")


def _integer_spec(geometry: Geometry, ofm: TensorLayout, stage: OutputStage) -> LayerSpec:
    multipliers = stage.multipliers
    if stage.scales is not None:
        if geometry.kind != "fully_connected":
            raise NotSupported("a convolution whose output stage rounds a double product once")
        try:  # the nearest fixed-point multipliers, for what reports them; the layer runs on the scales
            multipliers = [quantize_multiplier(float(s)) for s in stage.scales]
        except ValueError as e:
            raise NotSupported(str(e)) from None
    # The input zero point is folded into the bias; the input was padded with it.
    relu = stage.low == stage.zero_point > -128  # a fused ReLU left only the zero point and above
    spec = _spec(geometry, ofm, stage.bias, multipliers, 0, stage.zero_point, stage.low, stage.high, relu)
    spec.scales = stage.scales
    return spec


def match_layer_at_site(body: DispatchBody, site: "list[BindingSite] | str | None") -> LayerSpec:
    """``match_layer`` with the constants of the dispatch's call site (an
    entry of constant_pool.binding_sites: the bindings, or why they are unknown)."""
    if isinstance(site, str):
        raise NotSupported(site)
    return match_layer(body, constant_reader(body, site))


def match_layer_or_table(body: DispatchBody, site: "list[BindingSite] | str | None") -> LayerSpec:
    """``match_layer_at_site``, and where that refuses a dispatch without an
    int8 contraction, its int8 elementwise operation of one tensor as a
    256-entry table (npukit.layer_recognition.table_lookup), of two as an
    int8 product (npukit.layer_recognition.elementwise_product), its int8
    average or max pool (npukit.layer_recognition.int8_pool), or a float32
    tensor quantized to int8 (npukit.layer_recognition.float_quantize); every
    reason when none."""
    from npukit.layer_recognition.elementwise_product import match_elementwise_product
    from npukit.layer_recognition.float_quantize import match_float_quantize
    from npukit.layer_recognition.int8_pool import match_int8_pool
    from npukit.layer_recognition.table_lookup import match_table_lookup

    try:
        return match_layer_at_site(body, site)
    except NotSupported as layer_reason:
        if any(is_int8_contraction(op) for op in body.linalg if op.name == "linalg.generic"):
            raise
        reasons = [str(layer_reason)]
        for name, match in (("an int8 table", match_table_lookup), ("an int8 product", match_elementwise_product),
                            ("an int8 pool", match_int8_pool), ("a float quantization", match_float_quantize)):
            try:
                return match(body)
            except NotSupported as reason:
                reasons.append(f"not {name}: {reason}")
        raise NotSupported("; ".join(reasons)) from None


def _spec(g: Geometry, ofm: TensorLayout, bias, multipliers, ifm_zp, ofm_zp, low, high, relu) -> LayerSpec:
    for name, t in (("input", g.ifm), ("output", ofm)):
        if t.layout == "other":
            raise NotSupported(f"the {name} layout is neither HWC nor CHW")
    layouts = {t.layout for t in (g.ifm, ofm)} - {"any"}
    if len(layouts) > 1:
        raise NotSupported("the input and output layouts differ")
    return LayerSpec(g.kind, g.ifm, ofm, g.ifm_chw, g.ofm_chw, g.kernel, g.stride, g.dilation, g.weights,
                     np.asarray(bias, np.int32), multipliers, ifm_zp, ofm_zp, low, high, relu,
                     multiplier=g.multiplier, padding=g.padding, pad_value=g.pad_value)
