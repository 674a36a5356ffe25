"""The integer parameters TFLite's 8x8_16 LSTM derives from its tensors'
scales before it runs (PopulateQuantizedLstmParams8x8_16 and the zero-point
folding of its Prepare), computed as the kernel computes them: the
effective scales in single precision (the peephole and hidden ones through
a double), then QuantizeMultiplier of each.

Gates are named ``i`` (input), ``f`` (forget), ``c`` (cell) and ``o``
(output); with CIFG (coupled input and forget gates) there is no ``i``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from npukit.quantization.tflite_prepare import f32, tflite_multiplier

GATES = ("i", "f", "c", "o")

# Without layer norm the gates' pre-activations are Q3.12.
DEFAULT_GATE_SCALE = 2.0 ** -12


def checked_log2(scale) -> int | None:
    """TFLite's CheckedLog2 in single precision: the nearest integer to
    log2(scale), or None when the scale is not within 1e-3 (in the
    exponent) of a power of two."""
    value = f32(scale)
    if not (value > 0 and math.isfinite(float(value))):
        return None
    log2 = f32(f32(np.log(value)) * f32(f32(1.0) / f32(np.log(f32(2.0)))))
    rounded = math.copysign(math.floor(abs(float(log2)) + 0.5), float(log2))
    return int(rounded) if abs(float(f32(log2 - f32(rounded)))) < 1e-3 else None


@dataclass(frozen=True)
class GateScales:
    """The scales one gate's parameters come from."""

    input_weights: float
    recurrent_weights: float
    peephole_weights: float | None  # None without peephole (and always for the cell gate)
    layer_norm_weights: float | None  # None without layer norm
    intermediate: float  # the gate's pre-activation scale (2^-12 without layer norm)


@dataclass(frozen=True)
class GateParameters:
    """Multipliers as (M, shift), real value M * 2^(shift - 31)."""

    input: tuple[int, int]
    recurrent: tuple[int, int]
    peephole: tuple[int, int] | None
    layer_norm: tuple[int, int] | None
    variance_guard: int  # the layer norm's variance floor (1 without layer norm)


@dataclass(frozen=True)
class IntegerLstmParameters:
    gates: dict[str, GateParameters]
    cell_scale_log2: int  # the cell state's scale is 2^cell_scale_log2
    hidden: tuple[int, int]  # output gate * tanh(cell) (Q0.30) to the hidden scale
    hidden_zero_point: int
    projection: tuple[int, int] | None
    cell_clip: int  # 0: none
    projection_clip: int  # 0: none


def integer_lstm_parameters(input_scale, output_state_scale, cell_state_scale, gates: dict[str, GateScales],
                            hidden_scale, hidden_zero_point: int, projection_scale, output_scale, cell_clip: float,
                            projection_clip: float) -> IntegerLstmParameters:
    """ValueError when the cell state's scale is not a power of two (the
    kernel requires it)."""
    cell_log2 = checked_log2(cell_state_scale)
    if cell_log2 is None:
        raise ValueError(f"a cell state scale of {float(cell_state_scale):g}, not a power of two")
    derived = {}
    for name, g in gates.items():
        interm = f32(g.intermediate)
        effective_input = f32(f32(f32(g.input_weights) * f32(input_scale)) / interm)
        effective_recurrent = f32(f32(f32(g.recurrent_weights) * f32(output_state_scale)) / interm)
        peephole = None
        if g.peephole_weights is not None:
            effective = f32(2.0 ** cell_log2 * float(f32(g.peephole_weights)) / float(interm))
            peephole = tflite_multiplier(float(effective))
        layer_norm, guard = None, 1
        if g.layer_norm_weights is not None:
            scale = f32(g.layer_norm_weights)
            layer_norm = tflite_multiplier(float(scale))
            guard = max(1, int(f32(f32(10000.0) * scale)))
        derived[name] = GateParameters(tflite_multiplier(float(effective_input)),
                                       tflite_multiplier(float(effective_recurrent)), peephole, layer_norm, guard)
    hidden = f32(2.0 ** -15 / float(f32(hidden_scale)) * 2.0 ** -15)
    projection = None
    if projection_scale is not None:
        effective = f32(f32(f32(projection_scale) * f32(hidden_scale)) / f32(output_state_scale))
        projection = tflite_multiplier(float(effective))
    return IntegerLstmParameters(
        gates=derived, cell_scale_log2=cell_log2, hidden=tflite_multiplier(float(hidden)),
        hidden_zero_point=int(hidden_zero_point), projection=projection,
        cell_clip=_quantized_clip(cell_clip, cell_state_scale, 32767),
        projection_clip=_quantized_clip(projection_clip, output_scale, 127))


def _quantized_clip(clip: float, scale, limit: int) -> int:
    """A clip value in the quantized domain: the quotient in single
    precision, bounded to the type and truncated (0 when there is no clip)."""
    if not clip > 0:
        return 0
    quotient = float(f32(f32(clip) / f32(scale)))
    return int(min(max(quotient, -limit - 1.0), float(limit)))


def folded_bias(bias: np.ndarray | None, zero_point: int, weights: np.ndarray) -> np.ndarray:
    """``bias + zero_point * rowsum(weights)`` as int32 (wrapping as the
    kernel's int32 arithmetic does): a matrix-vector product of
    ``weights`` with ``x`` plus this is the product with ``x + zero_point``
    plus the bias."""
    total = np.asarray(weights, np.int64).sum(axis=1) * int(zero_point)
    if bias is not None:
        total = total + np.asarray(bias, np.int64).reshape(-1)
    return ((total + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)
