"""ONNX backend node tests: npukit's runtime passes every one IREE's runtime passes.

The sample (tests/runtime/onnx_node_sample.json, written by
``benchmarks/onnx_node_suite.py --sample``) is the shortest prefix of a
seeded shuffle of all the node tests the installed ``onnx`` generates that
holds 160 tests ``npukit compile`` accepts for the host. Each of those is
compiled once as a ``.vmfb`` for IREE's runtime and once as a static
artifact for npukit's runtime; both runtimes' outputs are compared with the
reference outputs (tests/support/onnx_node_suite.py). Where IREE's runtime
passes, npukit's must too. The benchmark's report
(benchmarks/reports/runtime/onnx_node_suite.md) has the counts and every
failure's reason.
"""

from __future__ import annotations

import onnx
import pytest

from support.onnx_node_suite import PASS, SEED, Sample, node_cases, run_case, seeded_order

SAMPLE = Sample.load()


@pytest.fixture(scope="module")
def cases() -> dict:
    return node_cases()


def test_the_sample_is_a_seeded_prefix_of_the_suite(cases):
    assert SAMPLE.seed == SEED and SAMPLE.onnx_version == onnx.__version__
    prefix = seeded_order(cases)[:SAMPLE.considered]
    assert sorted(SAMPLE.accepted + list(SAMPLE.refused)) == sorted(prefix)
    assert len(SAMPLE.accepted) >= 150
    # The sample ends at a test npukit compiles: no refusal is counted past it.
    assert prefix[-1] in SAMPLE.accepted


@pytest.mark.parametrize("name", SAMPLE.accepted)
def test_node(name, cases, tmp_path):
    outcome = run_case(cases[name], tmp_path)
    assert outcome.compiled, f"npukit compile no longer accepts {name}: {outcome.compile_error}"
    if outcome.iree == PASS:
        assert outcome.npukit == PASS, f"IREE's runtime passes {name}, npukit's does not: {outcome.npukit}"
        # Both pass: on the CPU code they share, npukit's runtime gives IREE's bits.
        assert outcome.identical, f"{name}: npukit's outputs pass but differ from IREE's"
