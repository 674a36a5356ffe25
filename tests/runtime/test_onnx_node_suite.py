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

# Tests IREE's runtime passes and npukit's does not yet, with what is known;
# each must still fail (strict), so that a fix is noticed and the entry removed.
KNOWN_FAILURES = {
    "test_nonmaxsuppression_flipped_coordinates":
        "the loop's entry branch passes refs twice (vm.br ^bb14(..., %ref_24, ..., %ref_26, %ref_24, ..., "
        "%ref_26, ...)) and IREE 3.13's vm-c emitter assigns each distinct ref to one block argument only, as it "
        "does for vm.return; the other block arguments keep stale refs (hal.device.queue.alloca gets a ref of "
        "another type as its wait fence). Not corrected yet: the C does not say which variable holds which block "
        "argument",
}


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


def test_known_failures_are_in_the_sample():
    assert set(KNOWN_FAILURES) <= set(SAMPLE.accepted)


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_FAILURES[n], strict=True)) if n in KNOWN_FAILURES else n
    for n in SAMPLE.accepted])
def test_node(name, cases, tmp_path):
    outcome = run_case(cases[name], tmp_path)
    assert outcome.compiled, f"npukit compile no longer accepts {name}: {outcome.compile_error}"
    if outcome.iree == PASS:
        assert outcome.npukit == PASS, f"IREE's runtime passes {name}, npukit's does not: {outcome.npukit}"
        # Both pass: on the CPU code they share, npukit's runtime gives IREE's bits.
        assert outcome.identical, f"{name}: npukit's outputs pass but differ from IREE's"
