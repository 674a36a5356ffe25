"""The integer LSTM's activations (gemmlowp's 16-bit logistic and tanh, as
npukit.quantization.fixed_point_int16 emits them) compiled for the host
and run on every int16 input, against gemmlowp's definitions in Python
(support/gemmlowp_int16.py), 0 LSB; and that definition within gemmlowp's
accuracy of the real functions."""

from __future__ import annotations

import math

import numpy as np
import pytest

import npukit
from npukit.frontends.tflite.mlir_builder import ModuleBuilder
from npukit.quantization.fixed_point_int16 import FixedPoint16
from support import gemmlowp_int16

# The gates' logistic and tanh read Q3.12; the cell state's tanh reads Q(15 + log2 of its scale), 0 .. 6.
FUNCTIONS = [("logistic", 3)] + [("tanh", bits) for bits in range(7)]
EVERY_INT16 = np.arange(-(1 << 15), 1 << 15).astype(np.int16)


def test_emitted_code_equals_gemmlowp_on_every_input(tmp_path):
    builder = ModuleBuilder()
    (x,) = builder.begin_function("main", [((EVERY_INT16.size,), "int16")])
    outputs = []
    with builder.at("activations"):
        for function, bits in FUNCTIONS:
            outputs.append(builder.elementwise(
                [x], "int16", lambda v, function=function, bits=bits: getattr(FixedPoint16(), function)(v, bits)))
    builder.end_function(outputs)
    builder.verify()
    path = tmp_path / "activations.mlirbc"
    path.write_bytes(builder.bytecode())
    compiled = npukit.run(npukit.compile(path, out_dir=tmp_path / "host"), EVERY_INT16)
    for (function, bits), got in zip(FUNCTIONS, compiled):
        want = gemmlowp_int16.table(function, bits)
        assert got.dtype == np.int16
        differ = np.flatnonzero(got != want)
        assert differ.size == 0, f"{function} Q{bits}: {differ.size} inputs differ, first {EVERY_INT16[differ[:5]]}: " \
                                 f"{got[differ[:5]]} instead of {want[differ[:5]]}"


@pytest.mark.parametrize("function,bits", FUNCTIONS)
def test_definition_is_close_to_the_real_function(function, bits):
    table = gemmlowp_int16.table(function, bits).astype(np.float64) / (1 << 15)
    x = EVERY_INT16.astype(np.float64) / (1 << (15 - bits))
    real = 1 / (1 + np.exp(-x)) if function == "logistic" else np.tanh(x)
    # gemmlowp's 16-bit functions are good to a few 1e-4 (Q0.15 has a step of 3e-5).
    assert np.abs(table - real).max() < 5e-4
    assert table[EVERY_INT16 == 0][0] == (0.5 if function == "logistic" else 0.0)
    assert math.isclose(table[-1], real[-1], abs_tol=5e-4)
