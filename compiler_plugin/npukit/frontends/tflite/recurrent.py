"""The recurrent operators: UNIDIRECTIONAL_SEQUENCE_LSTM and SVDF.

Both keep state between calls in variable tensors (variable_state.py), and
the LSTM steps through its sequence in a loop (time_loop.py). Which
arithmetic an operator gets follows its tensor types, as in TFLite's
kernels:

- LSTM: int8 input and weights with an int16 cell state is TFLite's 8x8_16
  integer kernel (lstm_integer.py); float32 throughout is the float kernel
  (lstm_float.py). Float input with int8 weights (the dynamic-range,
  "hybrid", kernel) is refused.
- SVDF: int8 input with int16 time weights and state is TFLite's integer
  kernel; int8 time weights and state, which TFLite's kernel does not
  handle, is TFLite Micro's (svdf.py); float32 is the float kernel.
"""

from __future__ import annotations

from npukit.frontends.tflite import lstm_float, lstm_integer, svdf
from npukit.frontends.tflite.lowering import LoweringContext, lowers
from npukit.frontends.tflite.lstm_operands import read_lstm


@lowers("UNIDIRECTIONAL_SEQUENCE_LSTM")
def unidirectional_sequence_lstm(ctx: LoweringContext, op) -> None:
    lstm = read_lstm(ctx, op)
    weights = lstm.input_weights["o"].dtype
    if lstm.input.dtype == "int8":
        ctx.define(0, lstm_integer.lower_integer_lstm(ctx, op, lstm))
    elif lstm.input.dtype == "float32" and weights == "float32":
        ctx.define(0, lstm_float.lower_float_lstm(ctx, lstm))
    elif lstm.input.dtype == "float32":
        raise ctx.unsupported(f"a dynamic-range (hybrid) LSTM: float32 input with {weights} weights")
    else:
        raise ctx.unsupported(f"an LSTM of {lstm.input.dtype} input (int8 with int8 weights, and float32, are)")


@lowers("SVDF")
def svdf_operator(ctx: LoweringContext, op) -> None:
    ctx.define(0, svdf.lower_svdf(ctx, op))
