"""UNIDIRECTIONAL_SEQUENCE_LSTM with int8 input and weights, an int16 cell
state and an int8 output state: TFLite's 8x8_16 integer kernel
(EvalInteger8x8_16), step for step.

Per time step and gate ``g`` (int16 pre-activations, Q3.12 without layer
norm)::

    acc = sat16(MBQM(W_in[g] . x + in_bias[g], M_in[g]))
    acc = sat16(MBQM(W_rec[g] . h + rec_bias[g], M_rec[g]) + acc)
    acc = sat16(MBQM(w_peephole[g] * cell, M_peephole[g]) + acc)    peephole
    acc = layer_norm(acc) with the gate bias                        layer norm
    gate = logistic(acc) (tanh for the cell gate), Q0.15

the zero points folded into the biases. The input products do not depend on
the state, so they are computed for every step before the loop. Then::

    cell = sat16(rdbpot(f * cell, 15) + rdbpot(i * g, 30 + log2 s_cell))
    (CIFG: i = 32767 - f), clipped to the quantized cell clip
    output gate (its peephole reads the new cell)
    hidden = sat8(MBQM(o * tanh(cell), M_hidden) + zp_hidden)
    projection: h = sat8(MBQM(W_proj . hidden' + proj_bias, M_proj) + zp_h),
    clipped, where hidden' has -zp_hidden instead (as the kernel has it)

The peephole product runs over n_output values per batch row of the flat
gate buffer, not n_cell (the kernel's vector length): with fewer outputs
than cells only the first n_output cells of a row get it, and with several
rows in one step (time-major) row b's products start at flat index
b * n_output. That is reproduced with a zero weight where the kernel adds
nothing (MBQM(0) = 0 and the saturating add then leaves the value).
"""

from __future__ import annotations

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith

from npukit.frontends.tflite import epilogues
from npukit.frontends.tflite.contractions import accumulate
from npukit.frontends.tflite.lowering import LoweringContext
from npukit.frontends.tflite.lstm_operands import LstmOperands, stacked
from npukit.frontends.tflite.mlir_builder import PARALLEL, REDUCTION, Value, affine_map
from npukit.frontends.tflite.time_loop import put_step, take_step, time_loop
from npukit.frontends.tflite.variable_state import load_state, store_state
from npukit.quantization.fixed_point import FixedPoint, split_shift
from npukit.quantization.fixed_point_int16 import FixedPoint16
from npukit.quantization.lstm_parameters import DEFAULT_GATE_SCALE, GateScales, IntegerLstmParameters, \
    folded_bias, integer_lstm_parameters

GATE_INTEGER_BITS = 3  # gate pre-activations are Q3.12
HIDDEN_INTERMEDIATE = 4


def _check_types(ctx: LoweringContext, lstm: LstmOperands) -> None:
    expected = [(lstm.input, "int8", "input"), (lstm.output, "int8", "output"),
                (lstm.output_state, "int8", "output state"), (lstm.cell_state, "int16", "cell state")]
    expected += [(t, "int8", "input weights") for t in lstm.input_weights.values()]
    expected += [(t, "int8", "recurrent weights") for t in lstm.recurrent_weights.values()]
    expected += [(t, "int32", "gate bias") for t in lstm.biases.values() if t is not None]
    expected += [(t, "int16", "peephole weights") for t in lstm.peephole.values()]
    expected += [(t, "int16", "layer norm coefficients") for t in lstm.layer_norm.values()]
    if lstm.projection_weights is not None:
        expected.append((lstm.projection_weights, "int8", "projection weights"))
    if lstm.projection_bias is not None:
        expected.append((lstm.projection_bias, "int32", "projection bias"))
    for t, dtype, what in expected:
        if t.dtype != dtype:
            raise ctx.unsupported(f"an integer LSTM with a {t.dtype} {what} (TFLite's 8x8_16 kernel takes {dtype})")


def _scale(ctx: LoweringContext, t, what: str) -> np.float32:
    return ctx.per_tensor(t, what).scale


def _parameters(ctx: LoweringContext, op, lstm: LstmOperands) -> IntegerLstmParameters:
    if len(op.intermediates) != 5:
        raise ctx.fail(f"{len(op.intermediates)} intermediate tensors; TFLite's integer LSTM needs the converter's 5 "
                       "(the gates' and the hidden state's quantization)")
    intermediates = [ctx.tensor(i) for i in op.intermediates]
    hidden = ctx.per_tensor(intermediates[HIDDEN_INTERMEDIATE], "hidden state intermediate")
    gates = {}
    for k, g in enumerate(("i", "f", "c", "o")):
        if g not in lstm.gates:
            continue
        gates[g] = GateScales(
            input_weights=_scale(ctx, lstm.input_weights[g], "weight tensor"),
            recurrent_weights=_scale(ctx, lstm.recurrent_weights[g], "weight tensor"),
            peephole_weights=_scale(ctx, lstm.peephole[g], "peephole weight tensor") if g in lstm.peephole else None,
            layer_norm_weights=_scale(ctx, lstm.layer_norm[g], "layer norm coefficients")
            if lstm.layer_norm else None,
            intermediate=_scale(ctx, intermediates[k], "gate intermediate") if lstm.layer_norm
            else DEFAULT_GATE_SCALE)
    try:
        return integer_lstm_parameters(
            _scale(ctx, lstm.input, "input"), _scale(ctx, lstm.output_state, "output state"),
            _scale(ctx, lstm.cell_state, "cell state"), gates, hidden.scale, hidden.zero_point,
            _scale(ctx, lstm.projection_weights, "projection weights") if lstm.projection_weights is not None
            else None, _scale(ctx, lstm.output, "output"), lstm.cell_clip, lstm.projection_clip)
    except ValueError as e:
        raise ctx.unsupported(f"an integer LSTM with {e}") from None


def lower_integer_lstm(ctx: LoweringContext, op, lstm: LstmOperands) -> Value:
    """The output sequence (the state globals updated)."""
    _check_types(ctx, lstm)
    p = _parameters(ctx, op, lstm)
    cell_integer_bits = 15 + p.cell_scale_log2
    if not 0 <= cell_integer_bits <= 6:
        raise ctx.unsupported(f"an integer LSTM whose cell state scale is 2^{p.cell_scale_log2} (the kernel's tanh "
                              "takes 2^-15 .. 2^-9)")
    if lstm.peephole and lstm.n_output > lstm.n_cell:
        raise ctx.unsupported("an integer LSTM with peephole weights and more outputs than cells (the kernel's "
                              "peephole product reads past the cell state)")
    builder = ctx.builder
    gates, n_cell = lstm.gates, lstm.n_cell
    input_zp = ctx.per_tensor(lstm.input, "input").zero_point
    state_zp = ctx.per_tensor(lstm.output_state, "output state").zero_point

    # The input products of every step, before the loop: [steps and batch..., gates * cells] int16.
    x = ctx.value(lstm.input.index)
    rows = lstm.batch * lstm.steps
    weights_in = stacked(lstm.input_weights, gates)
    biases_in = np.concatenate([folded_bias(None if lstm.layer_norm or lstm.biases[g] is None else lstm.biases[g].data,
                                            -input_zp, lstm.input_weights[g].data) for g in gates])
    products = accumulate(ctx, builder.reshape(x, (rows, lstm.n_input)), builder.constant(weights_in),
                          (rows, len(gates) * n_cell), [PARALLEL, PARALLEL, REDUCTION], [0, 2], [1, 2], [0, 1], "int8")
    multipliers = [p.gates[g].input for g in gates for _ in range(n_cell)]
    input_part = epilogues.requantize_int32(ctx, products, 1, biases_in, multipliers, 0, -32768, 32767, "int16")
    input_part = builder.reshape(input_part, lstm.input.shape[:2] + (len(gates) * n_cell,))

    weights_rec = builder.constant(stacked(lstm.recurrent_weights, gates))
    biases_rec = np.concatenate([folded_bias(None, -state_zp, lstm.recurrent_weights[g].data) for g in gates])
    peephole_tables = {g: _peephole_table(w.data, lstm) for g, w in lstm.peephole.items()}
    projection = None
    if lstm.projection_weights is not None:
        bias = lstm.projection_bias.data if lstm.projection_bias is not None else None
        projection = (builder.constant(lstm.projection_weights.data),
                      folded_bias(bias, p.hidden_zero_point, lstm.projection_weights.data))

    def gate(g: str, pre: Value, cell: Value | None, function: str) -> Value:
        value = pre
        if g in lstm.peephole:
            value = _peephole(ctx, value, cell, peephole_tables[g], p.gates[g].peephole)
        if lstm.layer_norm:
            bias = lstm.biases[g].data if lstm.biases[g] is not None else np.zeros(n_cell, np.int32)
            value = _layer_norm(ctx, value, lstm.layer_norm[g].data, bias, p.gates[g].layer_norm,
                                p.gates[g].variance_guard)
        return builder.elementwise([value], "int16",
                                   lambda v: getattr(FixedPoint16(), function)(v, GATE_INTEGER_BITS))

    def step(t, carried: list[Value]) -> list[Value]:
        h, cell, out = carried
        inputs_t = take_step(builder, input_part, lstm.time_axis, t)
        recurrent = accumulate(ctx, h, weights_rec, (lstm.batch, len(gates) * n_cell), [PARALLEL, PARALLEL, REDUCTION],
                               [0, 2], [1, 2], [0, 1], "int8")
        every = _preactivations(ctx, recurrent, inputs_t, biases_rec, [p.gates[g].recurrent for g in gates], n_cell)
        pre = {g: builder.slice(every, [0, k * n_cell], [lstm.batch, n_cell]) for k, g in enumerate(gates)}
        input_gate = None if lstm.cifg else gate("i", pre["i"], cell, "logistic")
        forget_gate = gate("f", pre["f"], cell, "logistic")
        cell_gate = gate("c", pre["c"], None, "tanh")
        new_cell = _update_cell(ctx, cell, forget_gate, input_gate, cell_gate, p)
        output_gate = gate("o", pre["o"], new_cell, "logistic")
        h_new = _output_state(ctx, output_gate, new_cell, cell_integer_bits, p, projection, state_zp)
        return [h_new, new_cell, put_step(builder, out, h_new, lstm.time_axis, t)]

    h0, c0 = load_state(ctx, lstm.output_state), load_state(ctx, lstm.cell_state)
    out0 = builder.empty(lstm.output.shape, "int8")
    h, cell, out = time_loop(builder, lstm.steps, [h0, c0, out0], step, ctx.unroll_time_steps)
    store_state(ctx, lstm.output_state, h)
    store_state(ctx, lstm.cell_state, cell)
    return out


def _preactivations(ctx: LoweringContext, recurrent: Value, inputs: Value, bias: np.ndarray,
                    multipliers: list[tuple[int, int]], n_cell: int) -> Value:
    """Every gate's sat16(MBQM(recurrent + bias, M_rec) + the step's input
    part), [batch, gates * cells]: one operation for all gates, with each
    gate's multiplier as a table over its columns."""
    builder = ctx.builder
    split = [split_shift(s) for _, s in multipliers]
    tables = {"multiplier": [m for m, _ in multipliers], "left": [left for left, _ in split],
              "right": [right for _, right in split]}
    per_column = {name: np.repeat(np.asarray(values, np.int32), n_cell) for name, values in tables.items()}
    per_column["bias"] = np.asarray(bias, np.int32)
    names = [name for name, values in per_column.items() if np.any(values != values[0])]
    uniform = {name: int(values[0]) for name, values in per_column.items() if name not in names}
    full, column = affine_map(2, [0, 1]), affine_map(2, [1])
    operands = [(recurrent, full), (inputs, full)] + [(builder.constant(per_column[n]), column) for n in names]

    def body(r, x, *rest):
        fixed = FixedPoint()
        p = dict(uniform)
        p.update(zip(names, rest[:len(names)]))
        acc = r if p["bias"] == 0 else fixed.add(r, p["bias"])
        scaled = fixed.multiply_by_quantized_multiplier(acc, p["multiplier"], p["left"], p["right"])
        return fixed.truncate(fixed.clamp(fixed.add(scaled, fixed.extend(x)), -32768, 32767), 16)

    return builder.generic(operands, [(builder.empty(recurrent.shape, "int16"), full)], [PARALLEL, PARALLEL], body)[0]


def _peephole_table(weights: np.ndarray, lstm: LstmOperands) -> np.ndarray:
    """The peephole weight of each gate element as the kernel applies it:
    flat element k of the rows processed together gets w[k % n_output] for
    k < rows * n_output and nothing (0) after. Rows processed together: the
    whole batch when time-major, one row at a time otherwise."""
    rows = lstm.batch if lstm.time_major else 1
    flat = np.zeros(rows * lstm.n_cell, np.int16)
    k = np.arange(rows * lstm.n_output)
    flat[k] = np.asarray(weights, np.int16)[k % lstm.n_output]
    return flat.reshape(rows, lstm.n_cell) if rows > 1 else flat


def _peephole(ctx: LoweringContext, pre: Value, cell: Value, table: np.ndarray, multiplier: tuple[int, int]) -> Value:
    m, shift = multiplier
    left, right = split_shift(shift)

    def body(v, c, w):
        fixed = FixedPoint()
        product = arith.MulIOp(fixed.extend(w), fixed.extend(c)).result
        scaled = fixed.multiply_by_quantized_multiplier(product, m, left, right)
        return fixed.truncate(fixed.clamp(fixed.add(scaled, fixed.extend(v)), -32768, 32767), 16)

    return ctx.builder.elementwise([pre, cell, ctx.builder.constant(table)], "int16", body)


def _update_cell(ctx: LoweringContext, cell: Value, forget: Value, input_gate: Value | None, cell_gate: Value,
                 p: IntegerLstmParameters) -> Value:
    """cell * f + i * g in Q(cell scale), saturated to int16 and clipped."""
    shift = 30 + p.cell_scale_log2
    clip = p.cell_clip
    operands = [cell, forget, cell_gate] + ([input_gate] if input_gate is not None else [])

    def body(c, f, g, *i):
        fixed = FixedPoint()
        kept = fixed.rounding_divide_by_power_of_two(arith.MulIOp(fixed.extend(f), fixed.extend(c)).result, 15)
        gate_in = fixed.extend(i[0]) if i else fixed.sub(32767, fixed.extend(f))
        added = fixed.rounding_divide_by_power_of_two(arith.MulIOp(gate_in, fixed.extend(g)).result, shift)
        # Each product narrows to int16 (wrapping) before the saturating add.
        total = fixed.add(fixed.extend(fixed.truncate(kept, 16)), fixed.extend(fixed.truncate(added, 16)))
        total = fixed.clamp(total, -32768, 32767)
        if clip > 0:
            total = fixed.clamp(total, -clip, clip)
        return fixed.truncate(total, 16)

    return ctx.builder.elementwise(operands, "int16", body)


def _output_state(ctx: LoweringContext, output_gate: Value, cell: Value, cell_integer_bits: int,
                  p: IntegerLstmParameters, projection, state_zp: int) -> Value:
    """The new output state: the hidden value o * tanh(cell), projected if the LSTM has a projection."""
    m, shift = p.hidden
    left, right = split_shift(shift)
    # With a projection the kernel subtracts the hidden zero point; without one it adds it.
    zp = -p.hidden_zero_point if projection is not None else p.hidden_zero_point

    def body(o, c):
        fixed = FixedPoint()
        t = FixedPoint16().tanh(c, cell_integer_bits)
        product = arith.MulIOp(fixed.extend(o), fixed.extend(t)).result
        scaled = fixed.multiply_by_quantized_multiplier(product, m, left, right)
        return fixed.truncate(fixed.clamp(fixed.add(scaled, zp), -128, 127), 8)

    hidden = ctx.builder.elementwise([output_gate, cell], "int8", body)
    if projection is None:
        return hidden
    weights, bias = projection
    batch, n_output = hidden.shape[0], weights.shape[0]
    acc = accumulate(ctx, hidden, weights, (batch, n_output), [PARALLEL, PARALLEL, REDUCTION], [0, 2], [1, 2],
                     [0, 1], "int8")
    low, high = (-p.projection_clip, p.projection_clip) if p.projection_clip > 0 else (-128, 127)
    return epilogues.requantize_int32(ctx, acc, 1, bias, [p.projection] * n_output, state_zp, low, high, "int8")


def _layer_norm(ctx: LoweringContext, v: Value, coefficients: np.ndarray, bias: np.ndarray,
                multiplier: tuple[int, int], variance_guard: int) -> Value:
    """TFLite's integer layer norm of each row of int16 pre-activations
    (ApplyLayerNorm): the mean and variance in fixed point (the variance
    exact only for a power-of-two row length, as in the kernel), the inverse
    square root's multiplier per row, then ``coefficient * normalised +
    bias`` requantized by the coefficients' scale."""
    builder = ctx.builder
    rows, n = v.shape
    i64 = ir.IntegerType.get_signless(64)
    sums_init = builder.filled((rows,), "int64", 0)

    def accumulate_row(x, total, squares):
        fixed = FixedPoint()
        wide = fixed.extend(x)
        square = arith.ExtSIOp(i64, arith.MulIOp(wide, wide).result).result
        return [arith.AddIOp(total, arith.ExtSIOp(i64, wide).result).result, arith.AddIOp(squares, square).result]

    full, per_row = affine_map(2, [0, 1]), affine_map(2, [0])
    total, squares = builder.generic([(v, full)], [(sums_init, per_row), (sums_init, per_row)], [PARALLEL, REDUCTION],
                                     accumulate_row)
    reciprocal_step = (1 << 20) // n

    def row_parameters(s, sq, _mean, _multiplier, _shift):
        fixed = FixedPoint()
        c64 = lambda value: fixed.constant(value, i64)  # noqa: E731
        mean = fixed.truncate(arith.DivSIOp(arith.MulIOp(s, c64(1024)).result, c64(n)).result, 32)
        mean64 = arith.ExtSIOp(i64, mean).result
        variance = arith.SubIOp(arith.MulIOp(sq, c64(reciprocal_step)).result,
                                arith.MulIOp(mean64, mean64).result).result
        variance32 = fixed.truncate(arith.DivSIOp(variance, c64(1 << 20)).result, 32)
        below = arith.CmpIOp(arith.CmpIPredicate.slt, variance32, fixed.constant(1)).result
        variance32 = fixed.select(below, variance_guard, variance32)
        inverse, right_shift = fixed.inverse_sqrt_multiplier(variance32)
        return [mean, inverse, right_shift]

    one = affine_map(1, [0])
    outs = [(builder.empty((rows,), "int32"), one) for _ in range(3)]
    mean, inverse, right_shift = builder.generic([(total, one), (squares, one)], outs, [PARALLEL], row_parameters)
    m, shift = multiplier
    left, right = split_shift(shift + 12)

    def normalise(x, w, b, row_mean, row_inverse, row_shift, _out):
        fixed = FixedPoint()
        shifted = fixed.sub(arith.MulIOp(fixed.extend(x), fixed.constant(1024)).result, row_mean)
        rescaled = fixed.multiply_by_quantized_multiplier(shifted, row_inverse, 0, row_shift)
        weighted = fixed.add(arith.MulIOp(rescaled, fixed.extend(w)).result, b)
        wide = arith.ExtSIOp(i64, weighted).result
        positive = arith.CmpIOp(arith.CmpIPredicate.sgt, wide, fixed.constant(0, i64)).result
        nudged = arith.AddIOp(wide, fixed.select(positive, 512, -512, i64)).result
        scaled = fixed.truncate(arith.DivSIOp(nudged, fixed.constant(1024, i64)).result, 32)
        value = fixed.multiply_by_quantized_multiplier(scaled, m, left, right)
        return fixed.truncate(fixed.clamp(value, -32768, 32767), 16)

    column, row = affine_map(2, [1]), affine_map(2, [0])
    inputs = [(v, full), (builder.constant(np.asarray(coefficients, np.int16)), column),
              (builder.constant(np.asarray(bias, np.int32)), column), (mean, row), (inverse, row), (right_shift, row)]
    return builder.generic(inputs, [(builder.empty(v.shape, "int16"), full)], [PARALLEL, PARALLEL], normalise)[0]
