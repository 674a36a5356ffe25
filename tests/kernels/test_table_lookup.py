"""int8 elementwise operations as 256-entry tables (layer_recognition/
table_lookup.py, kernels/s8_table.c): every int8 unary operator the TFLite
importer lowers (LEAKY_RELU, HARD_SWISH, TANH, LOGISTIC, QUANTIZE, the
RELUs), with odd sizes, extreme zero points and scales, against
TFLite's reference kernels at 0 LSB on the host's tuned pipeline, the mynpu
NPU (OP_TABLE; on the CPU part of the build with a hardware configuration
without it) and the boards (Cortex-M4, RV32). Each
branch's dispatch must run as a table, and what is outside the table's
space (float, two inputs, a broadcast) must stay on IREE's code, exact."""

from __future__ import annotations

import numpy as np
import pytest

import npukit
from kernels.layer_sweeps import prepared_sweep
from npukit.layer_recognition.layer_spec import TABLE_OPERATION as TABLE
from support.tflite_builder import Branch, Spec, build_model, run_reference



def _q(shape, scale, zero_point) -> Spec:
    return Spec(tuple(shape), np.int8, np.float32(scale), zero_point)


def table_branches() -> list[Branch]:
    """Branches that are int8 operations of one tensor (each a table)."""
    shapes = [(1, 16, 16, 4), (7,), (1, 5, 7, 3), (1, 33, 1, 1), (2, 129)]
    branches = []
    for i, (alpha, s_in, zp_in, s_out, zp_out) in enumerate([
            (0.2, 0.0018, -55, 0.0014, -109), (0.01, 0.05, 127, 0.02, -128), (1.7, 0.01, -128, 0.03, 0),
            (-0.5, 0.004, 3, 0.004, 3), (0.3, 0.2, 0, 0.0009, 127)]):
        branches.append(Branch("LEAKY_RELU", [_q(shapes[i % len(shapes)], s_in, zp_in)],
                               [_q(shapes[i % len(shapes)], s_out, zp_out)], {"alpha": alpha}))
    for op, s_in, zp_in, s_out, zp_out in [
            ("HARD_SWISH", 0.03, -20, 0.02, -110), ("HARD_SWISH", 0.1, 100, 0.05, -128),
            ("TANH", 0.04, 10, 1 / 128, 0), ("LOGISTIC", 0.06, -128, 1 / 256, -128),
            ("QUANTIZE", 0.02, 5, 0.05, -30), ("QUANTIZE", 0.05, 100, 0.01, -128),
            ("RELU", 0.03, -4, 0.02, -128), ("RELU6", 0.05, 0, 0.03, -128), ("RELU_N1_TO_1", 0.01, 0, 0.008, 2)]:
        shape = shapes[len(branches) % len(shapes)]
        branches.append(Branch(op, [_q(shape, s_in, zp_in)], [_q(shape, s_out, zp_out)]))
    return branches


def other_branches() -> list[Branch]:
    """Elementwise branches outside the table's space: IREE's code runs them."""
    return [
        Branch("LEAKY_RELU", [Spec((1, 9, 9, 2), np.float32)], [Spec((1, 9, 9, 2), np.float32)], {"alpha": 0.2}),
        Branch("ADD", [_q((1, 6, 6, 3), 0.02, 1), _q((1, 6, 6, 3), 0.03, -2)], [_q((1, 6, 6, 3), 0.04, 0)]),
        Branch("ADD", [_q((1, 6, 6, 3), 0.02, 1), _q((1, 1, 1, 3), 0.03, -2)], [_q((1, 6, 6, 3), 0.04, 0)]),
    ]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    return prepared_sweep("tables", table_branches(), tmp_path_factory.mktemp("tables") / "tables.tflite", seed=21)


def _check(got_outputs, wants, branches, context: str) -> None:
    for b, (got, want) in enumerate(zip(got_outputs, wants)):
        got = np.asarray(got).reshape(want.shape)
        if want.dtype == np.float32:
            assert np.allclose(got, want, rtol=1e-6, atol=0), f"{context}: branch {b} ({branches[b].op})"
            continue
        assert np.array_equal(got, want), \
            f"{context}: branch {b} ({branches[b].op} {branches[b].inputs[0].scale}, " \
            f"{branches[b].inputs[0].zero_point}) differs by up to {np.abs(got.astype(np.int32) - want).max()} LSB"


def test_host_tables(sweep, tmp_path):
    name, branches, path, inputs, wants = sweep
    result = npukit.compile(path, out_dir=tmp_path / "host")
    loaded = npukit.load(result)
    for x, want in zip(inputs, wants):
        _check(loaded(*x), want, branches, "tables on the host")
    kernels = result.manifest["cpu_kernels"]
    tables = [n for n, e in kernels.items() if e.get("operation") == TABLE]
    assert len(tables) == len(branches), kernels


def test_host_outside_the_space(tmp_path):
    name, branches, path, inputs, wants = prepared_sweep("others", other_branches(), tmp_path / "others.tflite",
                                                         seed=22)
    result = npukit.compile(path, out_dir=tmp_path / "host")
    for x, want in zip(inputs, wants):
        _check(npukit.load(result)(*x), want, branches, "elementwise operations outside the table's space")
    kernels = result.manifest["cpu_kernels"]
    assert kernels and not any(e.get("operation") == TABLE for e in kernels.values()), kernels


def test_every_int8_value(tmp_path):
    """One branch per operator over a tensor that holds each int8 value once."""
    ops = sorted({b.op for b in table_branches()})
    full = []
    for op in ops:
        template = next(b for b in table_branches() if b.op == op)
        x, y = template.inputs[0], template.outputs[0]
        full.append(Branch(op, [_q((256,), x.scale, x.zero_point)], [_q((256,), y.scale, y.zero_point)],
                           template.options))
    path = tmp_path / "every_value.tflite"
    build_model(full, path)
    values = [np.arange(-128, 128, dtype=np.int8) for _ in full]
    want = run_reference(path, values)
    result = npukit.compile(path, out_dir=tmp_path / "host")
    _check(npukit.load(result)(*values), want, full, "every int8 value")
    assert sum(e.get("operation") == TABLE for e in result.manifest["cpu_kernels"].values()) == len(full)


def _table_rows(result) -> list[dict]:
    return [r for r in result.manifest["mynpu"]["dispatches"] if r["operation"] == TABLE]


def test_mynpu_build(sweep, tmp_path):
    """Every branch a table on the NPU (OP_TABLE), run by the simulator
    through npukit's runtime."""
    name, branches, path, inputs, wants = sweep
    result = npukit.compile(path, target="mynpu", output="embedded", out_dir=tmp_path / "npu")
    rows = result.manifest["mynpu"]["dispatches"]
    tables = _table_rows(result)
    assert len(tables) == len(branches) and all(r["device"] == "mynpu" for r in tables), \
        [(r["name"], r["operation"], r["device"], r["reason"]) for r in rows]
    assert all(r["cycles"] > 0 and r["macs"] == 0 for r in tables), tables
    for x, want in zip(inputs, wants):
        _check(npukit.run(result, *x, runtime="npukit"), want, branches, "tables on mynpu")


def test_mynpu_without_the_table_instruction(sweep, tmp_path):
    """A hardware configuration without OP_TABLE leaves the tables to the
    CPU part of the build (its table kernel), with the reason, exact."""
    from npukit.mynpu.isa import Op
    from npukit.mynpu.options import MynpuOptions

    name, branches, path, inputs, wants = sweep
    result = npukit.compile(path, target="mynpu", output="embedded", out_dir=tmp_path / "npu",
                            mynpu=MynpuOptions(table=False))
    tables = [r for r in result.manifest["mynpu"]["dispatches"] if r["device"] == "cpu"]
    assert len(tables) == len(branches) and not _table_rows(result), tables
    assert all("no OP_TABLE" in r["reason"] for r in tables), tables
    assert not result.manifest["mynpu"]["hardware"]["table"]
    for x, want in zip(inputs, wants):
        _check(npukit.run(result, *x, runtime="npukit"), want, branches, "tables on the CPU of a mynpu build")
    assert not MynpuOptions(table=False).config().instruction_mask & (1 << (Op.TABLE - 0x10))


@pytest.mark.slow
@pytest.mark.parametrize("board", ["mps2-an386", "virt-rv32imf"])
def test_boards(sweep, board):
    from npukit.deploy.deploy_model import deploy

    name, branches, path, _, _ = sweep
    result = deploy(path, board, samples=2, seed=3)
    for sample in result.samples:
        assert sample.identical_to_host, board
        _check(sample.outputs, run_reference(path, sample.inputs), branches, f"tables on {board}")
