"""SVDF compiled for the host, over several calls with the state carried:

- int16 time weights and state (TFLite's integer kernel) and float32,
  against TFLite's reference kernels (BUILTIN_REF): bit for bit, 1e-4;
- int8 time weights and state, which TFLite's kernel cannot run (it reads
  them as int16), against TFLite Micro's interpreter, bit for bit, including
  states whose zero point pushes a saturated value past int8 (the package's
  build wraps it).
"""

from __future__ import annotations

import numpy as np
import pytest

import npukit
from npukit.errors import ModelError
from npukit.frontends.tflite.importer import import_tflite
from support.oracles import assert_float_close
from support.tflite_recurrent import ACTIVATION_NONE, MicroInterpreter, ReferenceKernels, SvdfCase, random_inputs, \
    svdf_model

CALLS = 4

REFERENCE_CASES = [
    SvdfCase(batch=2, seed=1),
    SvdfCase(n_input=40, filters=8, memory=10, rank=1, seed=2),
    SvdfCase(n_input=32, filters=12, memory=6, rank=3, state_headroom=4.0, seed=3),  # saturating state
    SvdfCase(batch=2, state_zero_point=100, seed=4),  # TFLite's kernel takes the state's zero point as 0
    SvdfCase(bias=False, memory=1, seed=5),
    SvdfCase(batch=2, state_dtype="float32", seed=6),
    SvdfCase(state_dtype="float32", bias=False, activation=ACTIVATION_NONE, seed=7),
    SvdfCase(state_dtype="float32", rank=1, memory=1, seed=8),
]

MICRO_CASES = [
    SvdfCase(batch=2, state_dtype="int8", state_zero_point=-17, seed=11),
    SvdfCase(n_input=32, filters=12, memory=6, rank=3, state_dtype="int8", state_zero_point=40, state_headroom=4.0,
             seed=12),
    SvdfCase(state_dtype="int8", memory=1, activation=ACTIVATION_NONE, seed=13),
    SvdfCase(n_input=16, filters=8, memory=8, rank=1, state_dtype="int8", state_zero_point=-100,
             state_headroom=2.0, seed=14),
]


def _sweep(cases, oracle, tmp_path_factory, name):
    model = svdf_model(cases)
    path = tmp_path_factory.mktemp(name) / f"{name}.tflite"
    path.write_bytes(model)
    result = npukit.compile(path, out_dir=path.parent / "host")
    assert not result.manifest["warnings"], result.manifest["warnings"]
    reference, compiled = oracle(model), npukit.load(result)
    rng = np.random.default_rng(len(cases))
    calls = []
    for _ in range(CALLS):
        xs = random_inputs([((c.batch, c.n_input), "float32" if c.state_dtype == "float32" else "int8")
                            for c in cases], rng)
        calls.append((reference(*xs), compiled(*xs)))
    return calls


def _check(cases, calls) -> None:
    failures = []
    for call, (want, got) in enumerate(calls):
        for case, w, g in zip(cases, want, got):
            if case.state_dtype == "float32":
                try:
                    assert_float_close(g, w)
                except AssertionError as e:
                    failures.append(f"{case.describe()}, call {call}: {e}")
                continue
            assert g.dtype == w.dtype == np.int8 and g.shape == w.shape
            if not np.array_equal(g, w):
                failures.append(f"{case.describe()}, call {call}: {np.sum(g != w)} of {w.size} outputs differ, by "
                                f"up to {np.abs(g.astype(np.int32) - w).max()} LSB")
    assert not failures, "\n".join(failures)


def test_svdf_equals_reference_kernels(tmp_path_factory):
    _check(REFERENCE_CASES, _sweep(REFERENCE_CASES, ReferenceKernels, tmp_path_factory, "svdf_reference"))


def test_int8_state_svdf_equals_tflite_micro(tmp_path_factory):
    oracle = lambda model: MicroInterpreter(model, len(MICRO_CASES))  # noqa: E731
    _check(MICRO_CASES, _sweep(MICRO_CASES, oracle, tmp_path_factory, "svdf_micro"))


def test_int16_svdf_without_relu_is_refused_as_tflite_refuses_it(tmp_path):
    path = tmp_path / "svdf.tflite"
    path.write_bytes(svdf_model([SvdfCase(activation=ACTIVATION_NONE)]))
    with pytest.raises(ModelError, match=r"operator 0 \(SVDF.*fused activation NONE.*requires RELU"):
        import_tflite(path, "svdf")
