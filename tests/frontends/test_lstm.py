"""UNIDIRECTIONAL_SEQUENCE_LSTM compiled for the host against TFLite's
reference kernels (BUILTIN_REF), over several calls with the state carried
from one to the next: the integer (8x8_16) kernel bit for bit on a sweep of
its options and on the zoo's trained LSTM, the float kernel within 1e-4.
Each sweep is one model of independent LSTMs, compiled once (in one test,
so that parallel test workers do not compile it twice)."""

from __future__ import annotations

import numpy as np
import pytest

import npukit
from npukit.errors import ModelError
from npukit.frontends.tflite.importer import import_tflite
from support.oracles import assert_float_close
from support.tflite_recurrent import ACTIVATION_RELU, LstmCase, ReferenceKernels, lstm_model, random_inputs

CALLS = 3

INTEGER_CASES = [
    LstmCase(batch=2, cell_scale_log2=-9, weight_scale=0.003, seed=1),  # the cell's tanh in Q6.9
    LstmCase(batch=3, time_major=True, cell_clip=2.0, weight_scale=0.004, seed=2),
    LstmCase(cifg=True, state_zero_point=-7, cell_scale_log2=-15, weight_scale=0.003, seed=3),  # ... and in Q0.15
    LstmCase(peephole=True, cell_scale_log2=-12, cell_clip=3.0, weight_scale=0.003, seed=4),
    LstmCase(layer_norm=True, seed=5),
    LstmCase(projection=True, n_output=5, hidden_zero_point=4, projection_clip=0.5, seed=6),
    LstmCase(batch=2, cifg=True, peephole=True, layer_norm=True, projection=True, n_output=8, hidden_zero_point=-2,
             time_major=True, cell_clip=1.5, projection_clip=0.6, seed=7),
    # Fewer outputs than cells: the peephole's vector length is n_output, per row or across the batch.
    LstmCase(batch=2, peephole=True, projection=True, n_output=5, time_major=True, weight_scale=0.003, seed=8),
    LstmCase(batch=2, peephole=True, projection=True, n_output=5, weight_scale=0.003, seed=9),
    # A row length that is not a power of two (the kernel's variance is inexact there).
    LstmCase(layer_norm=True, n_cell=6, batch=2, seed=10),
]

FLOAT_CASES = [
    LstmCase(dtype="float32", batch=2, seed=21),
    LstmCase(dtype="float32", batch=3, time_major=True, cell_clip=2.0, seed=22),
    LstmCase(dtype="float32", cifg=True, peephole=True, seed=23),
    LstmCase(dtype="float32", layer_norm=True, batch=2, seed=24),
    LstmCase(dtype="float32", projection=True, n_output=5, projection_clip=0.5, seed=25),
    LstmCase(dtype="float32", activation=ACTIVATION_RELU, seed=26),
]


def _sweep(cases, tmp_path_factory, name):
    model = lstm_model(cases)
    path = tmp_path_factory.mktemp(name) / f"{name}.tflite"
    path.write_bytes(model)
    result = npukit.compile(path, out_dir=path.parent / "host")
    assert not result.manifest["warnings"], result.manifest["warnings"]
    reference, compiled = ReferenceKernels(model), npukit.load(result)
    rng = np.random.default_rng(len(cases))
    calls = []
    for _ in range(CALLS):
        xs = random_inputs([(c.input_shape, c.dtype) for c in cases], rng)
        calls.append((reference(*xs), compiled(*xs)))
    return calls


def test_integer_lstm_equals_reference_kernels(tmp_path_factory):
    failures = []
    for call, (want, got) in enumerate(_sweep(INTEGER_CASES, tmp_path_factory, "lstm_int8")):
        for case, w, g in zip(INTEGER_CASES, want, got):
            assert g.dtype == w.dtype == np.int8 and g.shape == w.shape
            if not np.array_equal(g, w):
                failures.append(f"{case.describe()}, call {call}: {np.sum(g != w)} of {w.size} outputs differ, by "
                                f"up to {np.abs(g.astype(np.int32) - w).max()} LSB")
    assert not failures, "\n".join(failures)


def test_float_lstm_is_close_to_reference_kernels(tmp_path_factory):
    for want, got in _sweep(FLOAT_CASES, tmp_path_factory, "lstm_float"):
        for case, w, g in zip(FLOAT_CASES, want, got):
            try:
                assert_float_close(g, w)
            except AssertionError as e:
                raise AssertionError(f"{case.describe()}: {e}") from None


def test_trained_lstm_equals_reference_kernels(shared_models, tmp_path):
    path = shared_models / "zoo" / "trained_lstm_int8.tflite"
    result = npukit.compile(path, out_dir=tmp_path / "host")
    assert result.manifest["cpu_pipeline"] == "tuned" and not result.manifest["warnings"]
    reference, compiled = ReferenceKernels(path.read_bytes()), npukit.load(result)
    rng = np.random.default_rng(3)
    for call in range(4):
        x = rng.integers(-128, 128, (1, 28, 28)).astype(np.int8)
        if call == 3:
            x[:] = -128  # a blank image: real 0 in, the state alone moves
        want, got = reference(x)[0], compiled(x)[0]
        assert np.array_equal(got, want), f"call {call}: {got} instead of {want}"
    # A new load starts from the reset state again, as a new interpreter does.
    x = rng.integers(-128, 128, (1, 28, 28)).astype(np.int8)
    assert np.array_equal(npukit.run(result, x)[0], ReferenceKernels(path.read_bytes())(x)[0])


def _refusal(tmp_path, case: LstmCase) -> str:
    path = tmp_path / "refused.tflite"
    path.write_bytes(lstm_model([case]))
    with pytest.raises(ModelError) as error:
        import_tflite(path, "refused")
    message = str(error.value)
    assert "\n" not in message and "operator 0 (UNIDIRECTIONAL_SEQUENCE_LSTM" in message
    return message


def test_integer_lstm_refuses_a_cell_scale_out_of_the_kernels_range(tmp_path):
    assert "2^-16" in _refusal(tmp_path, LstmCase(cell_scale_log2=-16))


def test_integer_lstm_refuses_a_peephole_reading_past_the_cell_state(tmp_path):
    message = _refusal(tmp_path, LstmCase(peephole=True, projection=True, n_cell=4, n_output=6))
    assert "peephole" in message and "more outputs than cells" in message
