"""The MLPerf Tiny reference models and inputs that look like theirs."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ReferenceModel:
    name: str
    dtype: str  # input dtype
    # Range of real input values (from the int8 model's input quantization:
    # kws: 0.5847 * (q - 83); resnet8: q + 128).
    low: float
    high: float

    @property
    def quantized(self) -> bool:
        return self.dtype == "int8"


MLPERF_MODELS = (
    ReferenceModel("kws_int8", "int8", -128, 127),
    ReferenceModel("resnet8_int8", "int8", -128, 127),
    ReferenceModel("kws_f32", "float32", -122.8, 25.7),
    ReferenceModel("resnet8_f32", "float32", 0.0, 255.0),
)


def models_dir() -> Path:
    path = Path(os.environ.get("NPUKIT_MODELS_DIR", REPO.parent / "shared" / "models"))
    if not (path / "kws_int8.onnx").exists():
        pytest.fail(
            f"the MLPerf Tiny models are not at {path}; set NPUKIT_MODELS_DIR to the directory "
            "holding kws_int8.onnx, resnet8_int8.onnx, ... (the tests need them)",
            pytrace=False,
        )
    return path


def random_inputs(model: ReferenceModel, shape, rng: np.random.Generator, count: int) -> list[np.ndarray]:
    """Inputs over the model's real input range: uniform, and narrower ones
    around the middle so that outputs are not all saturated."""
    inputs = []
    for i in range(count):
        spread = 1.0 if i % 2 == 0 else 0.25
        mid = (model.low + model.high) / 2
        half = (model.high - model.low) / 2 * spread
        x = rng.uniform(mid - half, mid + half, size=shape)
        if model.quantized:
            inputs.append(np.clip(np.round(x), -128, 127).astype(np.int8))
        else:
            inputs.append(x.astype(np.float32))
    return inputs
