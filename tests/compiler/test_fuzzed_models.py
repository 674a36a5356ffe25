"""Fuzzing: mutated .tflite and .onnx files are accepted or refused in one
line naming the file; never a crash, a hang or a traceback.

A seeded sample of mutations of the shared models (tests/support/
model_mutations.py: bit flips, byte runs, truncations, splices, and
mutations of shapes, offsets, indices, types, graph references, external
data and field sizes) goes through import and validation, and a smaller one
through the whole `npukit compile` command. benchmarks/fuzz_models.py runs
the same with tens of thousands of files.
"""

from __future__ import annotations

import os

import pytest

from support.fuzzing import BAD, ImportFuzzer, compile_outcome
from support.model_mutations import mutant, seed_models

SEED = 20
IMPORTS = 600
COMPILES = 10


def _describe(outcomes) -> str:
    return "\n".join(f"{o.path} ({o.kind}, from {o.seed_model}): {o.result}: {o.message[:300]} "
                     f"{' | '.join(o.details[-3:])}" for o in outcomes)


@pytest.mark.parametrize("fmt", ["tflite", "onnx"])
def test_mutated_models_through_import(tmp_path, shared_models, fmt):
    seeds = seed_models(shared_models, fmt)
    items = []
    for index in range(IMPORTS):
        m = mutant(seeds, SEED, index)
        items.append((m.write(tmp_path / f"s{index}" if m.extra_files else tmp_path), m.kind, m.seed_model))
    outcomes = ImportFuzzer(jobs=min(os.cpu_count() or 1, 2), timeout=120).run(items)
    assert len(outcomes) == IMPORTS
    failures = [o for o in outcomes if o.result in BAD]
    assert not failures, _describe(failures)
    results = {o.result for o in outcomes}
    assert {"accepted", "refused"} <= results, "the sample should hold both models npukit reads and ones it refuses"


@pytest.mark.parametrize("fmt", ["tflite", "onnx"])
def test_mutated_models_through_npukit_compile(tmp_path, shared_models, fmt):
    seeds = seed_models(shared_models, fmt)
    outcomes = []
    for index in range(COMPILES):
        m = mutant(seeds, SEED, 1_000_000 + index)
        path = m.write(tmp_path / f"s{index}")
        outcomes.append(compile_outcome(path, m.kind, m.seed_model, path.parent / "out", timeout=600,
                                        env={"NPUKIT_LIMIT_TIME": "300"}))
    failures = [o for o in outcomes if o.result in BAD]
    assert not failures, _describe(failures)
