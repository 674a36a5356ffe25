"""The operator sweeps (tflite_operator_sweeps.py) against TFLite's reference
kernels on the host and on the QEMU boards: integer results to 0 LSB, float
results within 2 ulp of the branch's largest output (the code generator may
fuse a multiply and an add into one rounding), 4 ulp for the transcendental
operators (IREE's exp and tanh are polynomial approximations, not the C
library's that TFLite was built with) and for bilinear resizing (four
weighted terms whose order of summation differs)."""

from __future__ import annotations

import numpy as np
import pytest

import npukit
from npukit.frontends.tflite.lowering import UnsupportedOperator
from compiler.tflite_operator_sweeps import SWEEPS
from kernels.layer_sweeps import prepared_sweep
from support.tflite_builder import Branch, Spec, build_model, run_reference

FOUR_ULP = {"TANH", "LOGISTIC", "SOFTMAX", "EXP", "LOG_SOFTMAX", "ELU", "GELU", "RESIZE_BILINEAR"}


@pytest.fixture(scope="module", params=sorted(SWEEPS))
def sweep(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param) / f"operators_{request.param}.tflite"
    return prepared_sweep(request.param, SWEEPS[request.param](), path, seed=12)


def check_outputs(got_outputs, want_outputs, branches, context: str) -> None:
    assert len(got_outputs) == len(want_outputs), context
    for b, (got, want) in enumerate(zip(got_outputs, want_outputs)):
        got = np.asarray(got).reshape(want.shape)
        what = f"{context}: branch {b} ({branches[b].op} {branches[b].options})"
        if want.dtype == np.float32:
            unit = np.spacing(np.float32(max(np.max(np.abs(want)), np.finfo(np.float32).tiny)))
            ulps = float(np.abs(got - want).max() / unit)
            bound = 4 if branches[b].op in FOUR_ULP else 2
            assert ulps <= bound, f"{what} differs by {ulps:.1f} ulp of its largest output"
            continue
        assert got.dtype == want.dtype, f"{what}: {got.dtype} instead of {want.dtype}"
        assert np.array_equal(got, want), \
            f"{what} differs by up to {np.abs(got.astype(np.int64) - want).max()} LSB"


def test_host(sweep, tmp_path):
    name, branches, path, inputs, wants = sweep
    loaded = npukit.load(npukit.compile(path, out_dir=tmp_path / "host"))
    for x, want in zip(inputs, wants):
        check_outputs(loaded(*x), want, branches, f"{name} on the host")


@pytest.mark.slow
@pytest.mark.parametrize("board", ["mps2-an386", "virt-rv32imf"])
def test_boards(sweep, board):
    from npukit.deploy.deploy_model import deploy

    name, branches, path, _, _ = sweep
    result = deploy(path, board, samples=2, seed=3)
    for sample in result.samples:
        check_outputs(sample.outputs, run_reference(path, sample.inputs), branches, f"{name} on {board}")


@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
def test_pooling_with_requantization_is_refused(op, tmp_path):
    """TFLite's pooling kernels copy the stored integers: a model whose pool
    changes scale is one TFLite refuses, and so does npukit, by name."""
    x = Spec((1, 4, 4, 2), np.int8, np.float32(0.05), 3)
    y = Spec((1, 2, 2, 2), np.int8, np.float32(0.1), 3)
    path = tmp_path / "pool.tflite"
    build_model([Branch(op, [x], [y], dict(padding=1, strideH=2, strideW=2, filterHeight=2, filterWidth=2))], path)
    with pytest.raises(UnsupportedOperator, match=f"{op}.*quantized differently"):
        npukit.compile(path, out_dir=tmp_path / "out")


def test_quantized_prelu_is_refused(tmp_path):
    """TFLite's integer PRELU is not lowered: refused by name, not approximated."""
    x = Spec((1, 4, 4, 2), np.int8, np.float32(0.05), 3)
    alpha = Spec.constant(np.array([10, -20], np.int8), scale=np.float32(0.01), zero_point=0)
    path = tmp_path / "prelu.tflite"
    build_model([Branch("PRELU", [x, alpha], [Spec((1, 4, 4, 2), np.int8, np.float32(0.05), 3)])], path)
    with pytest.raises(UnsupportedOperator, match="PRELU of int8 with int8 slopes"):
        npukit.compile(path, out_dir=tmp_path / "out")


def test_inconsistent_sparse_constant_is_refused(tmp_path):
    """A sparse encoding whose indices leave its dimension: a ModelError naming the tensor, not a crash."""
    from support.tflite_builder import DENSE, SPARSE_CSR, SparseEncoding
    from npukit.errors import ModelError

    weights = np.zeros((4, 6), np.float32)
    weights[1, 2] = 1.5
    stored = Spec.constant(weights)
    stored.sparse = SparseEncoding([0, 1], [DENSE, SPARSE_CSR])
    path = tmp_path / "sparse.tflite"
    data = bytearray(build_model([Branch("DENSIFY", [stored], [Spec((4, 6), np.float32)])]))
    # The indices vector is one int32, 2 (length-prefixed: 1, 2): make the coordinate 9, past the 6 columns.
    at = data.find(np.array([1, 2], np.int32).tobytes())
    assert at > 0 and data.find(np.array([1, 2], np.int32).tobytes(), at + 1) < 0
    data[at + 4:at + 8] = np.array([9], np.int32).tobytes()
    path.write_bytes(bytes(data))
    with pytest.raises(ModelError, match="sparse constant whose encoding does not fit its shape"):
        npukit.compile(path, out_dir=tmp_path / "out")
