"""UNIDIRECTIONAL_SEQUENCE_LSTM in float32: TFLite's float kernel
(EvalFloat). Per time step and gate::

    gate = act(W_in[g] x + W_rec[g] h + w_peephole[g] * cell + bias[g])
    (layer norm: act(coefficients[g] * normalise(W_in x + W_rec h + ...) + bias[g]),
     normalise(v) = (v - mean) / sqrt(variance + 1e-8) over the cells)
    cell = clip(f * cell + i * g)            (CIFG: i = 1 - f)
    h = o * act_cell(cell), then W_proj h + bias_proj clipped with a projection

with ``act`` the logistic for the input, forget and output gates and the
operator's fused activation (usually tanh) for the cell gate and the
cell's output; the output gate's peephole reads the new cell. The input
products are computed for every step before the loop. Accumulation order
differs from the kernel's loops (float results within 1e-4 relative).
"""

from __future__ import annotations

import math

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith
from iree.compiler.dialects import math as mlir_math

from npukit.frontends.tflite import epilogues
from npukit.frontends.tflite.contractions import accumulate
from npukit.frontends.tflite.lowering import LoweringContext
from npukit.frontends.tflite.lstm_operands import LstmOperands, stacked
from npukit.frontends.tflite.mlir_builder import PARALLEL, REDUCTION, Value, affine_map, f32_constant, float_clamp
from npukit.frontends.tflite.time_loop import put_step, take_step, time_loop
from npukit.frontends.tflite.variable_state import load_state, store_state
from npukit.quantization.tflite_prepare import ACTIVATION_NAMES

ACTIVATION_TANH = 4
LAYER_NORM_EPSILON = 1e-8




def logistic(x: ir.Value) -> ir.Value:
    clipped = float_clamp(x, -100.0, 100.0)
    return arith.DivFOp(f32_constant(1.0), arith.AddFOp(f32_constant(1.0), mlir_math.ExpOp(arith.NegFOp(clipped).result).result
                                                ).result).result


def activation_function(code: int):
    """The scalar function of a fused activation, as the float LSTM applies it."""
    functions = {0: lambda x: x, 1: lambda x: float_clamp(x, 0.0, math.inf), 2: lambda x: float_clamp(x, -1.0, 1.0),
                 3: lambda x: float_clamp(x, 0.0, 6.0), ACTIVATION_TANH: lambda x: mlir_math.TanhOp(x).result}
    if code not in functions:
        raise ValueError(f"the fused activation {ACTIVATION_NAMES.get(code, code)}")
    return functions[code]


def lower_float_lstm(ctx: LoweringContext, lstm: LstmOperands) -> Value:
    """The output sequence (the state globals updated)."""
    for t in [lstm.output, lstm.output_state, lstm.cell_state, *lstm.input_weights.values(),
              *lstm.recurrent_weights.values(),
              *lstm.peephole.values(), *lstm.layer_norm.values(), *(b for b in lstm.biases.values() if b is not None)]:
        if t.dtype != "float32":
            raise ctx.unsupported(f"a float LSTM with a {t.dtype} {t.describe()}")
    if lstm.projection_weights is not None and lstm.projection_weights.dtype != "float32":
        raise ctx.unsupported(f"a float LSTM with {lstm.projection_weights.dtype} projection weights")
    try:
        cell_activation = activation_function(lstm.activation)
    except ValueError as e:
        raise ctx.unsupported(f"a float LSTM with {e}") from None
    builder = ctx.builder
    gates, n_cell = lstm.gates, lstm.n_cell
    width = len(gates) * n_cell
    rows = lstm.batch * lstm.steps
    x = builder.reshape(ctx.value(lstm.input.index), (rows, lstm.n_input))
    products = accumulate(ctx, x, builder.constant(stacked(lstm.input_weights, gates)), (rows, width),
                          [PARALLEL, PARALLEL, REDUCTION], [0, 2], [1, 2], [0, 1], "float32")
    bias = np.concatenate([lstm.biases[g].data if lstm.biases[g] is not None else np.zeros(n_cell, np.float32)
                           for g in gates]).astype(np.float32)
    if not lstm.layer_norm and np.any(bias != 0):
        products = epilogues.float_output(ctx, products, 1, bias, -math.inf, math.inf)
    input_part = builder.reshape(products, lstm.input.shape[:2] + (width,))
    weights_rec = builder.constant(stacked(lstm.recurrent_weights, gates))
    peephole = {g: builder.constant(np.asarray(w.data, np.float32)) for g, w in lstm.peephole.items()}
    projection = None
    if lstm.projection_weights is not None:
        projection = (builder.constant(lstm.projection_weights.data),
                      lstm.projection_bias.data if lstm.projection_bias is not None else None)

    def gate(g: str, pre: Value, cell: Value | None, function) -> Value:
        operands = [pre] + ([cell, peephole[g]] if g in peephole else [])

        def body(v, *rest):
            if rest:
                v = arith.AddFOp(v, arith.MulFOp(rest[1], rest[0]).result).result
            return v if lstm.layer_norm else function(v)

        value = builder.elementwise(operands, "float32", body)
        if lstm.layer_norm:
            k = gates.index(g)
            value = _layer_norm(ctx, value, lstm.layer_norm[g].data, bias[k * n_cell:(k + 1) * n_cell], function)
        return value

    def step(t, carried: list[Value]) -> list[Value]:
        h, cell, out = carried
        inputs_t = take_step(builder, input_part, lstm.time_axis, t)
        recurrent = accumulate(ctx, h, weights_rec, (lstm.batch, width), [PARALLEL, PARALLEL, REDUCTION], [0, 2],
                               [1, 2], [0, 1], "float32")
        pre = builder.elementwise([recurrent, inputs_t], "float32", lambda r, i: arith.AddFOp(i, r).result)
        pre = {g: builder.slice(pre, [0, k * n_cell], [lstm.batch, n_cell]) for k, g in enumerate(gates)}
        input_gate = None if lstm.cifg else gate("i", pre["i"], cell, logistic)
        forget_gate = gate("f", pre["f"], cell, logistic)
        cell_gate = gate("c", pre["c"], None, cell_activation)
        new_cell = _update_cell(ctx, cell, forget_gate, input_gate, cell_gate, lstm.cell_clip)
        output_gate = gate("o", pre["o"], new_cell, logistic)
        hidden = builder.elementwise([output_gate, new_cell], "float32",
                                     lambda o, c: arith.MulFOp(o, cell_activation(c)).result)
        h_new = hidden if projection is None else _project(ctx, hidden, *projection, lstm.projection_clip)
        return [h_new, new_cell, put_step(builder, out, h_new, lstm.time_axis, t)]

    h0, c0 = load_state(ctx, lstm.output_state), load_state(ctx, lstm.cell_state)
    out0 = builder.empty(lstm.output.shape, "float32")
    h, cell, out = time_loop(builder, lstm.steps, [h0, c0, out0], step, ctx.unroll_time_steps)
    store_state(ctx, lstm.output_state, h)
    store_state(ctx, lstm.cell_state, cell)
    return out


def _update_cell(ctx: LoweringContext, cell: Value, forget: Value, input_gate: Value | None, cell_gate: Value,
                 clip: float) -> Value:
    operands = [cell, forget, cell_gate] + ([input_gate] if input_gate is not None else [])

    def body(c, f, g, *i):
        gate_in = i[0] if i else arith.SubFOp(f32_constant(1.0), f).result
        total = arith.AddFOp(arith.MulFOp(f, c).result, arith.MulFOp(gate_in, g).result).result
        return float_clamp(total, -clip, clip) if clip > 0 else total

    return ctx.builder.elementwise(operands, "float32", body)


def _project(ctx: LoweringContext, hidden: Value, weights: Value, bias: np.ndarray | None, clip: float) -> Value:
    batch, n_output = hidden.shape[0], weights.shape[0]
    acc = accumulate(ctx, hidden, weights, (batch, n_output), [PARALLEL, PARALLEL, REDUCTION], [0, 2], [1, 2],
                     [0, 1], "float32")
    low, high = (-clip, clip) if clip > 0 else (-math.inf, math.inf)
    return epilogues.float_output(ctx, acc, 1, bias, low, high)


def _layer_norm(ctx: LoweringContext, v: Value, coefficients: np.ndarray, bias: np.ndarray, function) -> Value:
    """function(coefficients * (v - mean) / sqrt(variance + 1e-8) + bias), per row."""
    builder = ctx.builder
    rows, n = v.shape
    full, row = affine_map(2, [0, 1]), affine_map(2, [0])
    total = builder.generic([(v, full)], [(builder.filled((rows,), "float32", 0.0), row)], [PARALLEL, REDUCTION],
                            lambda x, s: arith.AddFOp(s, x).result)[0]
    mean = builder.elementwise([total], "float32", lambda s: arith.DivFOp(s, f32_constant(float(n))).result)

    def squared(x, m, s):
        d = arith.SubFOp(x, m).result
        return arith.AddFOp(s, arith.MulFOp(d, d).result).result

    squares = builder.generic([(v, full), (mean, row)], [(builder.filled((rows,), "float32", 0.0), row)],
                              [PARALLEL, REDUCTION], squared)[0]
    inverse = builder.elementwise([squares], "float32", lambda s: arith.DivFOp(f32_constant(1.0), mlir_math.SqrtOp(
        arith.AddFOp(arith.DivFOp(s, f32_constant(float(n))).result, f32_constant(LAYER_NORM_EPSILON)).result).result).result)

    def normalise(x, w, b, m, r, _out):
        normalised = arith.MulFOp(arith.SubFOp(x, m).result, r).result
        return function(arith.AddFOp(arith.MulFOp(normalised, w).result, b).result)

    column = affine_map(2, [1])
    inputs = [(v, full), (builder.constant(np.asarray(coefficients, np.float32)), column),
              (builder.constant(np.asarray(bias, np.float32)), column), (mean, row), (inverse, row)]
    return builder.generic(inputs, [(builder.empty(v.shape, "float32"), full)], [PARALLEL, PARALLEL], normalise)[0]
