"""What each builtin operator npukit lowers takes: its inputs, outputs and
options table, as TFLite's kernels and schema define them.

A lowering reads its operator's inputs by position and its options by name;
an operator with too few inputs, an input left out (-1) where one is
required, or an options table of another operator's type would make it read
nothing or the wrong fields. ``check_operator`` refuses such an operator in
one line before its lowering runs, as it does options that must count
something (strides, windows, dilations: at least 1) or name an enumeration's
value (padding, fused activation). Operators not listed here are checked by
their own lowerings.
"""

from __future__ import annotations

from dataclasses import dataclass

from npukit.frontends.tflite.flatbuffer_reader import Operator


@dataclass(frozen=True)
class Signature:
    #: Inputs that must be present (the leading positions).
    required: int
    #: At most this many inputs (None: any number, as CONCATENATION and PACK take).
    most: int | None
    #: Outputs: exactly this many (ASSIGN_VARIABLE and CALL_ONCE have none), or (None) one or more.
    outputs: int | None = 1
    #: The options table's type (schema BuiltinOptions name); None: the operator has none.
    options: str | None = None


def _s(required: int, most: int | None, options: str | None = None, outputs: int | None = 1) -> Signature:
    return Signature(required, most, outputs, options)


SIGNATURES: dict[str, Signature] = {
    "ABS": _s(1, 1, "AbsOptions"),
    # Resource variables (resource_variables.py): a handle, its read, its assignment, and the
    # initialisation subgraph's call.
    "VAR_HANDLE": _s(0, 0, "VarHandleOptions"),
    "READ_VARIABLE": _s(1, 1, "ReadVariableOptions"),
    "ASSIGN_VARIABLE": _s(2, 2, "AssignVariableOptions", outputs=0),
    "CALL_ONCE": _s(0, 0, "CallOnceOptions", outputs=0),
    "ADD": _s(2, 2, "AddOptions"),
    "SUB": _s(2, 2, "SubOptions"),
    "MUL": _s(2, 2, "MulOptions"),
    "MAXIMUM": _s(2, 2, "MaximumMinimumOptions"),
    "MINIMUM": _s(2, 2, "MaximumMinimumOptions"),
    "AVERAGE_POOL_2D": _s(1, 1, "Pool2DOptions"),
    "MAX_POOL_2D": _s(1, 1, "Pool2DOptions"),
    "CONCATENATION": _s(1, None, "ConcatenationOptions"),
    "CONV_2D": _s(2, 3, "Conv2DOptions"),
    "DEPTHWISE_CONV_2D": _s(2, 3, "DepthwiseConv2DOptions"),
    "FULLY_CONNECTED": _s(2, 3, "FullyConnectedOptions", outputs=None),
    "QUANTIZE": _s(1, 1, "QuantizeOptions"),
    "DEQUANTIZE": _s(1, 1, "DequantizeOptions"),
    "EXPAND_DIMS": _s(2, 2, "ExpandDimsOptions"),
    "GATHER": _s(2, 2, "GatherOptions"),
    "HARD_SWISH": _s(1, 1, "HardSwishOptions"),
    "LEAKY_RELU": _s(1, 1, "LeakyReluOptions"),
    "PRELU": _s(2, 2),
    "DEPTH_TO_SPACE": _s(1, 1, "DepthToSpaceOptions"),
    "SPACE_TO_DEPTH": _s(1, 1, "SpaceToDepthOptions"),
    "DENSIFY": _s(1, 1, "DensifyOptions"),
    "LOGISTIC": _s(1, 1),
    "TANH": _s(1, 1),
    "RELU": _s(1, 1),
    "RELU6": _s(1, 1),
    "RELU_N1_TO_1": _s(1, 1),
    "RELU_0_TO_1": _s(1, 1),
    "MEAN": _s(2, 2, "ReducerOptions"),
    "SUM": _s(2, 2, "ReducerOptions"),
    "REDUCE_MAX": _s(2, 2, "ReducerOptions"),
    "REDUCE_MIN": _s(2, 2, "ReducerOptions"),
    "RESIZE_BILINEAR": _s(2, 2, "ResizeBilinearOptions"),
    "RESIZE_NEAREST_NEIGHBOR": _s(2, 2, "ResizeNearestNeighborOptions"),
    "TRANSPOSE_CONV": _s(3, 4, "TransposeConvOptions"),
    # input, weights_feature, weights_time, then the optional bias and the state.
    "SVDF": _s(3, 5, "SVDFOptions"),
    # input, then 23 gate weights, biases, projection, states and norms, most optional.
    "UNIDIRECTIONAL_SEQUENCE_LSTM": _s(1, 24, "UnidirectionalSequenceLSTMOptions"),
    "PACK": _s(1, None, "PackOptions"),
    "UNPACK": _s(1, 1, "UnpackOptions", outputs=None),
    "PAD": _s(2, 2, "PadOptions"),
    "PADV2": _s(2, 3, "PadV2Options"),
    "RESHAPE": _s(1, 2, "ReshapeOptions"),
    "SQUEEZE": _s(1, 1, "SqueezeOptions"),
    "SLICE": _s(3, 3, "SliceOptions"),
    "STRIDED_SLICE": _s(4, 4, "StridedSliceOptions"),
    "SOFTMAX": _s(1, 1, "SoftmaxOptions"),
    "SPLIT": _s(2, 2, "SplitOptions", outputs=None),
    "SPLIT_V": _s(3, 3, "SplitVOptions", outputs=None),
    "TRANSPOSE": _s(2, 2, "TransposeOptions"),
}


# Options that count something (a stride, a window, a dilation) and must be at least 1,
# by their names without underscores (the reader's snake_case).
_POSITIVE = {"stridew", "strideh", "dilationwfactor", "dilationhfactor", "filterwidth", "filterheight",
             "numsplits"}
# Options that are enumerations: their values in the schema.
_ENUMERATIONS = {"padding": range(0, 2), "fusedactivationfunction": range(0, 6)}


def _check_options(op: Operator, fail) -> None:
    for name, value in op.options.items():
        key = name.replace("_", "")
        if key in _POSITIVE and isinstance(value, int) and value < 1:
            raise fail(f"option {name} is {value}; it must be at least 1")
        if key in _ENUMERATIONS and isinstance(value, int) and value not in _ENUMERATIONS[key]:
            raise fail(f"option {name} is {value}, not one of the schema's values "
                       f"({_ENUMERATIONS[key].start} to {_ENUMERATIONS[key].stop - 1})")


def _count(low: int, high: int | None) -> str:
    if high is None:
        return f"at least {low}"
    return str(low) if low == high else f"{low} to {high}"


def check_operator(op: Operator, fail) -> None:
    """Refuses (``fail(reason)`` -> ModelError) an operator that does not fit its signature."""
    signature = SIGNATURES.get(op.opcode)
    if signature is None:
        return
    inputs = len(op.inputs)
    if inputs < signature.required or (signature.most is not None and inputs > signature.most):
        raise fail(f"{inputs} inputs; {op.opcode} takes {_count(signature.required, signature.most)}")
    missing = [i for i in range(signature.required) if op.inputs[i] < 0]
    if missing:
        raise fail(f"input {missing[0]} is left out; {op.opcode} needs its first {signature.required} inputs")
    outputs = len(op.outputs)
    if outputs != signature.outputs if signature.outputs is not None else outputs == 0:
        expected = _count(1, None) if signature.outputs is None else str(signature.outputs)
        raise fail(f"{outputs} outputs; {op.opcode} has {expected}")
    if op.options_type and op.options_type != signature.options:
        expected = f"{signature.options} or none" if signature.options else "none"
        raise fail(f"options of type {op.options_type}; {op.opcode} takes {expected}")
    _check_options(op, fail)

