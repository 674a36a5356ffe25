"""The zoo's trained LSTM (int8, 28 time steps) through npukit's C runtime
on the host (static library, vm-c module) and on the Cortex-M4 board under
QEMU, with its state kept across calls as TFLite keeps it: every output
equal to TFLite's reference kernels making the same calls in the same
order."""

from __future__ import annotations

import numpy as np
import pytest

import npukit
from npukit.deploy.deploy_model import deploy
from support.tflite_recurrent import ReferenceKernels


def test_trained_lstm_on_npukits_runtime(shared_models, tmp_path):
    path = shared_models / "zoo" / "trained_lstm_int8.tflite"
    result = npukit.compile(path, output="static", out_dir=tmp_path / "static")
    assert not result.manifest["warnings"]
    reference, compiled = ReferenceKernels(path.read_bytes()), npukit.load(result, runtime="npukit")
    rng = np.random.default_rng(11)
    for call in range(3):
        x = rng.integers(-128, 128, (1, 28, 28)).astype(np.int8)
        want, got = reference(x)[0], compiled(x)[0]
        assert np.array_equal(got, want), f"call {call}: {got} instead of {want}"


@pytest.mark.slow
def test_trained_lstm_on_cortex_m4_board(shared_models):
    path = shared_models / "zoo" / "trained_lstm_int8.tflite"
    result = deploy(path, "mps2-an386", samples=3, seed=5)
    context = f"console:\n{result.console}"
    assert result.artifact.manifest["cpu_pipeline"] == "tuned" and not result.artifact.manifest["warnings"], context
    assert result.outputs_identical_to_host, context
    # The firmware's calls: the first sample twice (its second run checked), then each other sample once.
    reference = ReferenceKernels(path.read_bytes())
    reference(*result.samples[0].inputs)
    for k, sample in enumerate(result.samples):
        want = reference(*sample.inputs)
        for got, expected in zip(sample.outputs, want):
            assert np.array_equal(got, expected), f"sample {k}: {got} instead of {expected}; {context}"
    # 28 steps, each a handful of dispatches, in a loop of the host program.
    assert result.dispatches > 28 and result.instructions > 0 and result.ram.arena_high_water > 0
