"""The layer kernels' float output stage (ONNX QDQ layers) on every path
that runs it, against IREE's own code for the same model (`stock`: the
graph's float requantization of the same exact integer accumulators, so
equal bit for bit): the host's tuned kernels, and under QEMU Cortex-M4 (the
DSP kernels' fast paths, VCVTR rounding) and RV32 with F (the portable
kernels, FCVT.W.S rounding). The sweep (qdq_layer_sweep.py) has random and
power-of-two scales, the latter with many values exactly half way between
two output steps. Each path must take every layer: one left to IREE's code
would pass for the wrong reason."""

from __future__ import annotations

import numpy as np
import pytest

import npukit
from kernels.qdq_layer_sweep import IN_C, IN_H, IN_W, qdq_layer_sweep_model

LAYERS = 10  # the sweep's convolutions, depthwise convolutions, residual block and fully connected layer


@pytest.fixture(scope="module", params=["random", "ties"])
def sweep(request, tmp_path_factory):
    """(name, model path, IREE's own compile loaded)."""
    work = tmp_path_factory.mktemp(f"qdq_{request.param}")
    path = qdq_layer_sweep_model(work / f"qdq_sweep_{request.param}.onnx", ties=request.param == "ties")
    stock = npukit.load(npukit.compile(path, cpu_pipeline="stock", out_dir=work / "stock"))
    return request.param, path, stock


def _check(got, want, context: str) -> None:
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g).reshape(np.shape(w)), np.asarray(w)
        assert np.array_equal(g, w), \
            f"{context}: output {i} differs by up to {np.abs(g.astype(np.int32) - w).max()} LSB from IREE's code"


def test_host_tuned_kernels(sweep, tmp_path):
    name, path, stock = sweep
    result = npukit.compile(path, out_dir=tmp_path / "host")
    kernels = result.manifest["cpu_kernels"]
    assert sum(1 for e in kernels.values() if "operation" in e) == LAYERS, kernels
    loaded = npukit.load(result)
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = [rng.integers(-128, 128, shape, dtype=np.int8) for shape in ((1, IN_C, IN_H, IN_W), (1, IN_H, IN_W, IN_C))]
        _check(loaded(*x), stock(*x), f"{name} sweep on the host")


@pytest.mark.slow
@pytest.mark.parametrize("board", ["mps2-an386", "virt-rv32imf"])
def test_boards(sweep, board):
    from npukit.deploy.deploy_model import deploy

    name, path, stock = sweep
    result = deploy(path, board, samples=2, seed=3)
    kernels = result.artifact.manifest["cpu_kernels"]
    assert sum(1 for e in kernels.values() if "operation" in e) == LAYERS, kernels
    if board == "mps2-an386":  # the channel-last depthwise layers take the four-channel DSP path
        assert sum(1 for e in kernels.values() if e.get("choice", {}).get("weights") == "taps") == 2, kernels
    for sample in result.samples:
        assert sample.identical_to_host, f"{name} sweep on {board}"
        _check(sample.outputs, stock(*sample.inputs), f"{name} sweep on {board}")
