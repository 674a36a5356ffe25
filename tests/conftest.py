"""Shared fixtures: the reference models, compiled artifacts, oracles."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from support.models import MLPERF_MODELS, models_dir  # noqa: E402

# Tuned compiles read the tuning database: the tests see none unless they
# write one (a user's own results must not change what the tests compile).
os.environ["NPUKIT_TUNING_DB"] = str(Path(os.environ.get("TMPDIR", "/tmp")) / f"npukit-tests-no-tuning-{os.getpid()}.json")


@pytest.fixture(scope="session")
def shared_models() -> Path:
    """``../shared/models`` (or $NPUKIT_MODELS_DIR). A missing directory fails, never skips."""
    return models_dir()


@pytest.fixture(scope="session")
def artifact_cache(tmp_path_factory):
    """Compiles each (model, target, mode) once per test session."""
    import npukit

    root = tmp_path_factory.mktemp("artifacts")
    cache: dict = {}

    def get(model: Path, target: str = "host", mode: str = "vmfb", **kwargs):
        key = (str(model), target, mode, tuple(sorted(kwargs.items())))
        if key not in cache:
            out = root / f"{Path(model).stem}-{target}-{mode}-{len(cache)}"
            cache[key] = npukit.compile(model, target=target, output=mode, out_dir=out, **kwargs)
        return cache[key]

    return get


@pytest.fixture
def rng():
    return np.random.default_rng(int(os.environ.get("NPUKIT_TEST_SEED", "1234")))


__all__ = ["MLPERF_MODELS"]
