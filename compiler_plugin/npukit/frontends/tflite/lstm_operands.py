"""UNIDIRECTIONAL_SEQUENCE_LSTM's operands, read and checked once for both
its integer and its float lowering.

Inputs (a missing optional one is -1): 0 the input sequence; 1-4 the
input-to-gate weights and 5-8 the recurrent-to-gate weights of the input,
forget, cell and output gates; 9-11 the peephole (cell-to-gate) weights of
the input, forget and output gates; 12-15 the gate biases; 16 the
projection weights and 17 its bias; 18 the output state and 19 the cell
state (variable tensors); 20-23 the gates' layer norm coefficients. Which
are present selects the variant: no input gate weights is CIFG (the input
gate is one minus the forget gate), peephole weights add the cell state to
the gates, projection weights project the hidden state to the output, and
layer norm coefficients normalise each gate's pre-activation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npukit.frontends.tflite.flatbuffer_reader import Tensor
from npukit.frontends.tflite.lowering import LoweringContext
from npukit.frontends.tflite.variable_state import state_tensor

GATES = ("i", "f", "c", "o")
_INPUT_WEIGHTS = {"i": 1, "f": 2, "c": 3, "o": 4}
_RECURRENT_WEIGHTS = {"i": 5, "f": 6, "c": 7, "o": 8}
_PEEPHOLE = {"i": 9, "f": 10, "o": 11}
_BIAS = {"i": 12, "f": 13, "c": 14, "o": 15}
_LAYER_NORM = {"i": 20, "f": 21, "c": 22, "o": 23}
PROJECTION_WEIGHTS, PROJECTION_BIAS, OUTPUT_STATE, CELL_STATE = 16, 17, 18, 19


@dataclass
class LstmOperands:
    input: Tensor
    output: Tensor
    output_state: Tensor
    cell_state: Tensor
    gates: tuple[str, ...]  # the gates present: ("f", "c", "o") with CIFG
    input_weights: dict[str, Tensor]
    recurrent_weights: dict[str, Tensor]
    biases: dict[str, Tensor | None]
    peephole: dict[str, Tensor]  # empty without peephole; never has "c"
    layer_norm: dict[str, Tensor]  # empty without layer norm
    projection_weights: Tensor | None
    projection_bias: Tensor | None
    time_major: bool
    batch: int
    steps: int
    n_input: int
    n_cell: int
    n_output: int
    cell_clip: float
    projection_clip: float
    activation: int  # the fused activation of the cell gate and the cell output (float LSTM)

    @property
    def cifg(self) -> bool:
        return "i" not in self.gates

    @property
    def time_axis(self) -> int:
        return 0 if self.time_major else 1


def _constant(ctx: LoweringContext, position: int, what: str) -> Tensor:
    t = ctx.input(position)
    if t is None:
        raise ctx.fail(f"the {what} (input {position}) is missing")
    if t.data is None:
        raise ctx.unsupported(f"{what} that are not constants")
    return t


def _shape(ctx: LoweringContext, t: Tensor, shape: tuple[int, ...], what: str) -> None:
    if t.shape != shape:
        raise ctx.fail(f"the {what} {t.describe()} is not of shape {list(shape)}")


def read_lstm(ctx: LoweringContext, op) -> LstmOperands:
    """The operator's operands and options, their shapes checked."""
    if len(op.inputs) not in (20, 24):
        raise ctx.fail(f"{len(op.inputs)} inputs (20, or 24 with layer norm coefficients, expected)")
    if op.option("diagonal_recurrent_tensors", False):
        raise ctx.unsupported("an LSTM with diagonal recurrent weights")
    x = ctx.input(0)
    if x is None or len(x.shape) != 3:
        raise ctx.fail("the input sequence must be of rank 3")
    time_major = bool(op.option("time_major", False))
    steps, batch = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    n_input = x.shape[2]
    gates = GATES if ctx.input(_INPUT_WEIGHTS["i"]) is not None else GATES[1:]
    input_weights = {g: _constant(ctx, _INPUT_WEIGHTS[g], f"{g} gate's input weights") for g in gates}
    recurrent_weights = {g: _constant(ctx, _RECURRENT_WEIGHTS[g], f"{g} gate's recurrent weights") for g in gates}
    if "i" not in gates and ctx.input(_RECURRENT_WEIGHTS["i"]) is not None:
        raise ctx.fail("recurrent weights for an input gate that has no input weights")
    n_cell = input_weights["o"].shape[0] if len(input_weights["o"].shape) == 2 else -1
    n_output = recurrent_weights["o"].shape[1] if len(recurrent_weights["o"].shape) == 2 else -1
    for g in gates:
        _shape(ctx, input_weights[g], (n_cell, n_input), f"{g} gate's input weights")
        _shape(ctx, recurrent_weights[g], (n_cell, n_output), f"{g} gate's recurrent weights")
    biases = {}
    for g in gates:
        b = ctx.input(_BIAS[g])
        if b is not None:
            if b.data is None:
                raise ctx.unsupported("gate biases that are not constants")
            _shape(ctx, b, (n_cell,), f"{g} gate's bias")
        biases[g] = b
    peephole = {}
    if ctx.input(_PEEPHOLE["o"]) is not None:
        for g in gates:
            if g != "c":
                peephole[g] = _constant(ctx, _PEEPHOLE[g], f"{g} gate's peephole weights")
                _shape(ctx, peephole[g], (n_cell,), f"{g} gate's peephole weights")
    layer_norm = {}
    if len(op.inputs) == 24 and ctx.input(_LAYER_NORM["f"]) is not None:
        for g in gates:
            layer_norm[g] = _constant(ctx, _LAYER_NORM[g], f"{g} gate's layer norm coefficients")
            _shape(ctx, layer_norm[g], (n_cell,), f"{g} gate's layer norm coefficients")
    projection_weights = ctx.input(PROJECTION_WEIGHTS)
    projection_bias = ctx.input(PROJECTION_BIAS)
    if projection_weights is not None:
        projection_weights = _constant(ctx, PROJECTION_WEIGHTS, "projection weights")
        _shape(ctx, projection_weights, (n_output, n_cell), "projection weights")
        if projection_bias is not None:
            if projection_bias.data is None:
                raise ctx.unsupported("a projection bias that is not a constant")
            _shape(ctx, projection_bias, (n_output,), "projection bias")
    elif n_output != n_cell:
        raise ctx.fail(f"an output of {n_output} values from {n_cell} cells without projection weights")
    output_state = state_tensor(ctx, OUTPUT_STATE, "output state")
    cell_state = state_tensor(ctx, CELL_STATE, "cell state")
    _shape(ctx, output_state, (batch, n_output), "output state")
    _shape(ctx, cell_state, (batch, n_cell), "cell state")
    y = ctx.output()
    _shape(ctx, y, (steps, batch, n_output) if time_major else (batch, steps, n_output), "output")
    return LstmOperands(
        input=x, output=y, output_state=output_state, cell_state=cell_state, gates=gates,
        input_weights=input_weights, recurrent_weights=recurrent_weights, biases=biases, peephole=peephole,
        layer_norm=layer_norm, projection_weights=projection_weights,
        projection_bias=projection_bias if projection_weights is not None else None, time_major=time_major,
        batch=batch, steps=steps, n_input=n_input, n_cell=n_cell, n_output=n_output,
        cell_clip=float(np.float32(op.option("cell_clip", 0.0))),
        projection_clip=float(np.float32(op.option("proj_clip", 0.0))),
        activation=int(op.option("fused_activation_function", 0)))


def stacked(tensors: dict[str, Tensor], gates: tuple[str, ...]) -> np.ndarray:
    """The gates' constant weight matrices one above the other, in gate order."""
    return np.concatenate([tensors[g].data for g in gates], axis=0)
