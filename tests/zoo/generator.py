"""Builds the zoo's generated models on demand into the cache.

``build(model)`` returns the model's path, generating it first when the cache
has no file for the current generator key; two processes asking for the same
model at once take turns on a lock file, and a file appears only whole
(written beside its place, then renamed). ``build_all()`` does the same for
every model, building each Keras architecture once for all of its forms.

``python -m tests.zoo.generator`` builds every missing model and prints how
long each took.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from .cache import atomic_write, file_lock, zoo_dir
from .specs import Architecture, GeneratedModel, generated_models

CALIBRATION_SAMPLES = 16


def _quiet_tensorflow() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")


def calibration_data(architecture: Architecture, seed: int) -> list[np.ndarray]:
    """The representative dataset: the first sample uniform over the
    architecture's whole input range, each later one uniform over a random
    part of it (random centre, an eighth to a half of the range wide), so
    that calibration sees inputs of different levels and spreads."""
    rng = np.random.default_rng(seed)
    low, high = architecture.input_range
    samples = []
    for index in range(CALIBRATION_SAMPLES):
        a, b = low, high
        if index > 0:
            width = (high - low) * rng.uniform(0.125, 0.5)
            centre = rng.uniform(low + width / 2, high - width / 2)
            a, b = centre - width / 2, centre + width / 2
        samples.append(rng.uniform(a, b, (1, *architecture.input_shape)).astype(np.float32))
    return samples


def keras_model(architecture: Architecture, seed: int):
    """A fresh, seeded Keras model of ``architecture``."""
    _quiet_tensorflow()
    from .keras_seeding import randomize_biases_and_statistics, seed_everything, spread_classifier_logits

    module_name, function_name = architecture.builder.split(":")
    builder = getattr(importlib.import_module(f"{__package__}.{module_name}"), function_name)
    seed_everything(seed)
    model = builder(architecture.input_shape, **architecture.keyword_options)
    randomize_biases_and_statistics(model, seed)
    spread_classifier_logits(model, calibration_data(architecture, seed), seed)
    return model


def convert(model, generated: GeneratedModel) -> bytes:
    """The file's bytes of ``generated`` from its (already built) Keras model."""
    calibration = calibration_data(generated.architecture, generated.seed)
    if generated.format == "tflite":
        from .tflite_conversion import to_tflite

        return to_tflite(model, generated.form, calibration)
    from .onnx_conversion import to_onnx

    return to_onnx(model, generated.form, generated.architecture.input_shape, calibration)


def generate_bytes(generated: GeneratedModel) -> bytes:
    """Generates ``generated`` from scratch, bypassing the cache."""
    return convert(keras_model(generated.architecture, generated.seed), generated)


def model_path(generated: GeneratedModel, directory: Path | None = None) -> Path:
    return (directory or zoo_dir()) / generated.file_name


def _lock_path(directory: Path, name: str) -> Path:
    return directory / ".locks" / f"{name}.lock"


def build(generated: GeneratedModel, directory: Path | None = None) -> Path:
    directory = directory or zoo_dir()
    path = model_path(generated, directory)
    if path.exists():
        return path
    with file_lock(_lock_path(directory, generated.name)):
        if not path.exists():
            atomic_write(path, generate_bytes(generated))
    return path


def build_all(
    models: Iterable[GeneratedModel] | None = None, directory: Path | None = None, report=None
) -> dict[str, Path]:
    """Builds every missing model; ``report(name, seconds)`` is told of each
    one generated here. Returns every model's path by name."""
    directory = directory or zoo_dir()
    models = tuple(models if models is not None else generated_models())
    paths = {m.name: model_path(m, directory) for m in models}
    if all(path.exists() for path in paths.values()):
        return paths
    with file_lock(_lock_path(directory, "all")):
        by_architecture: dict[tuple[Architecture, int], list[GeneratedModel]] = {}
        for generated in models:
            if not paths[generated.name].exists():
                by_architecture.setdefault((generated.architecture, generated.seed), []).append(generated)
        for (architecture, seed), missing in by_architecture.items():
            started = time.perf_counter()
            keras = keras_model(architecture, seed)
            for generated in missing:
                with file_lock(_lock_path(directory, generated.name)):
                    if not paths[generated.name].exists():
                        atomic_write(paths[generated.name], convert(keras, generated))
                if report:
                    report(generated.name, time.perf_counter() - started)
                started = time.perf_counter()
    return paths


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    directory = zoo_dir()
    print(f"zoo directory: {directory}", flush=True)
    build_all(directory=directory, report=lambda name, seconds: print(f"  {name:40s} {seconds:6.1f} s", flush=True))
    print(f"done in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
