"""Recognising a quantized layer in a dispatch IREE formed.

One recogniser with two consumers: the mynpu lowering (npukit.mynpu, under
the NPU's predicates in mynpu/supported_operators) and the tuned CPU
pipeline's choice of layer kernels (npukit.cpu). The stages, one module
each: reading the dispatch (dispatch_ir), the constants at its call site
(constant_pool), the contraction's geometry (contraction_geometry), the
epilogue's requantization (float_epilogue, float_average,
epilogue_parameters), and the layer in integer terms (layer_spec), put
together by layer_match and accumulator_average.
"""
