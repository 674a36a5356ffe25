"""Every zoo model through npukit against its oracle (tests/support/zoo_oracles.py):

- the host with the default (tuned) pipeline on IREE's runtime, every model
  that compiles: integer outputs equal to TFLite's reference kernels (0 LSB;
  SOFTMAX, LOGISTIC and TANH included), ONNX QDQ models within 1 LSB of
  onnxruntime without graph optimizations (npukit computes the graph's float
  requantization as written, on exact integer accumulators; onnxruntime sums
  the dequantized products in float32, so a value within that sum's rounding
  of a half step may round the other way: docs/cpu-pipelines.md, "ONNX QDQ
  models"; a dequantized float output is held to one step of its
  DequantizeLinear's scale), float outputs within 1e-4 of the largest output;
- the host on npukit's runtime (a static vm-c artifact with the boards'
  inline execution model, its transient slabs packed in program order:
  npukit/passes/transient_packing.py), every .tflite model with integer
  layers: 0 LSB;
- `mynpu` on npukit's runtime, every int8 .tflite model: 0 LSB;
- Cortex-M4 and RV32 boards under QEMU (slow), one model of each family that
  fits the boards, or every such model with NPUKIT_ZOO_ALL_BOARDS=1: every
  sample identical to the host's outputs.

A model npukit refuses fails here with its one-line error: the zoo is what
the frontend must take.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import npukit
from support.zoo_oracles import dequantized_steps, reference_run

from . import cache
from .catalogue import catalogue, entries

SEEDS = 3
ENTRIES = entries()
TFLITE = [e.name for e in ENTRIES if e.format == "tflite"]


@pytest.fixture(scope="session")
def records():
    return {record.name: record for record in catalogue()}


def _reference(record):
    return reference_run(record.path, record.input_range, seed=5, count=SEEDS, cache_dir=cache.zoo_dir() / "references")


def _compare(got_outputs, want_outputs, context: str, lsb: int, steps=None) -> None:
    assert len(got_outputs) == len(want_outputs), context
    for o, (got, want) in enumerate(zip(got_outputs, want_outputs)):
        got = np.asarray(got).reshape(want.shape)
        if np.issubdtype(want.dtype, np.floating):
            bound = 1e-4 * max(float(np.max(np.abs(want))), 1e-6)
            if steps and steps[o] is not None:
                bound = lsb * steps[o] * (1 + 1e-4)  # the float32 products of two steps differ in their last bits
            err = float(np.max(np.abs(got.astype(np.float64) - want), initial=0.0))
            assert err <= bound, f"{context}: output {o} differs by {err:g} (bound {bound:g})"
            continue
        assert got.dtype == want.dtype, f"{context}: output {o} is {got.dtype}, not {want.dtype}"
        err = int(np.max(np.abs(got.astype(np.int64) - want.astype(np.int64)), initial=0))
        assert err <= lsb, f"{context}: output {o} differs by {err} LSB"


def _checked(records, name):
    record = records[name]
    if record.oracle_limitations:
        pytest.skip("no oracle: " + "; ".join(record.oracle_limitations))
    if record.recurrent:
        pytest.skip("recurrent: checked with its state across calls in tests/frontends")
    if record.size_class == "too-big":
        pytest.skip("larger than the 4 MiB boards the zoo is for")
    return record


@pytest.mark.parametrize("name", [e.name for e in ENTRIES])
def test_host(records, name, tmp_path):
    record = _checked(records, name)
    run = _reference(record)
    loaded = npukit.load(npukit.compile(record.path, out_dir=tmp_path / "host"))
    lsb = 1 if record.format == "onnx" else 0
    steps = dequantized_steps(record.path) if record.format == "onnx" else None
    for s, (x, want) in enumerate(zip(run.inputs, run.outputs)):
        _compare(loaded(*x), want, f"{name} on the host, sample {s}", lsb, steps)


@pytest.mark.parametrize("name", TFLITE)
def test_host_npukit_runtime(records, name, tmp_path):
    record = _checked(records, name)
    if record.arithmetic not in ("int8", "int16x8"):
        pytest.skip(f"{record.arithmetic} layers: the IREE-runtime test covers them")
    run = _reference(record)
    result = npukit.compile(record.path, output="static", out_dir=tmp_path / "static", execution_model="inline-dynamic")
    loaded = npukit.load(result, runtime="npukit")
    for s, (x, want) in enumerate(zip(run.inputs, run.outputs)):
        _compare(loaded(*x), want, f"{name} on npukit's runtime, sample {s}", 0)


@pytest.mark.parametrize("name", TFLITE)
def test_mynpu(records, name, tmp_path):
    record = _checked(records, name)
    if record.arithmetic != "int8":
        pytest.skip(f"{record.arithmetic} layers: mynpu computes int8 layers")
    run = _reference(record)
    result = npukit.compile(record.path, target="mynpu", output="embedded", out_dir=tmp_path / "npu")
    loaded = npukit.load(result, runtime="npukit")
    for s, (x, want) in enumerate(zip(run.inputs, run.outputs)):
        _compare(loaded(*x), want, f"{name} with mynpu, sample {s}", 0)


def test_a_pool_combined_with_another_tensor_is_refused_naming_it(records, tmp_path):
    """slices_and_pools subtracts a strided slice of its input from a 2x2
    average pool of it; IREE fuses the SUB into the pool's output stage,
    which the pool recogniser refuses naming the second operand (its
    reason once blamed SAME padding's count per output pixel)."""
    result = npukit.compile(records["slices_and_pools-int8.tflite"].path, target="mynpu", output="embedded",
                            out_dir=tmp_path)
    reasons = [d["reason"] for d in result.manifest["mynpu"]["dispatches"] if d["device"] == "cpu"]
    assert any("not an int8 pool: a pool whose output stage reads 2 operands, not only the window reduction" in r
               for r in reasons), reasons


def _fits_a_board(record) -> bool:
    return (record.format == "tflite" and record.arithmetic in ("int8", "int16x8") and not record.recurrent
            and not record.oracle_limitations and record.size_class == "small")


def _one_per_family() -> list[str]:
    """One integer .tflite model per family, the smallest that fits the
    boards, and every model of the 'operators' family (the operators around
    the convolutions: resizes, transpose convolutions, activations, pools)."""
    chosen: dict[str, tuple[int, str]] = {}
    for record in catalogue():
        if not _fits_a_board(record):
            continue
        family = record.name if record.family == "operators" else record.family
        if family not in chosen or record.macs < chosen[family][0]:
            chosen[family] = (record.macs, record.name)
    return sorted(name for _, name in chosen.values())


def _deploy_identical(records, name: str, board: str) -> None:
    from npukit.deploy.deploy_model import deploy

    result = deploy(records[name].path, board, samples=2, seed=3)
    identical = result.to_json()["samples_identical_to_host"]
    assert identical == len(result.samples), f"{name} on {board}: {identical} of {len(result.samples)} samples " \
                                             "identical to the host"


def _deploy_on_board(records, name: str, board: str) -> None:
    """One model on one board: every integer .tflite model that fits with
    NPUKIT_ZOO_ALL_BOARDS=1, one model of each family otherwise."""
    if not _fits_a_board(records[name]):
        pytest.skip("not an integer .tflite model with an oracle that fits the boards")
    if os.environ.get("NPUKIT_ZOO_ALL_BOARDS") != "1" and name not in _one_per_family():
        pytest.skip("another model of its family runs on the board (NPUKIT_ZOO_ALL_BOARDS=1 runs them all)")
    _deploy_identical(records, name, board)


@pytest.mark.slow
@pytest.mark.parametrize("name", [e.name for e in ENTRIES if e.format == "tflite"])
def test_cortex_m4_board(records, name):
    """On mps2-an386 (every model: about 15 minutes more)."""
    _deploy_on_board(records, name, "mps2-an386")


@pytest.mark.slow
@pytest.mark.parametrize("name", [e.name for e in ENTRIES if e.format == "tflite"])
def test_rv32_board(records, name):
    """On virt-rv32imf."""
    _deploy_on_board(records, name, "virt-rv32imf")
