"""Seeded, untrained Keras models with weights that exercise a quantizer.

Keras initializes biases to zero and batch normalization to the identity;
folded into int8 layers those would leave every bias zero and every channel
scaled alike. Here every bias and normalization statistic is drawn from a
seeded generator instead, so the converters fold and quantize real values.
"""

from __future__ import annotations

import numpy as np


def seed_everything(seed: int) -> None:
    """Resets Keras's layer-name counters and seeds Python, NumPy and the
    backend, so that building the same model twice gives the same graph."""
    import keras

    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)


def randomize_biases_and_statistics(model, seed: int) -> None:
    """Draws every bias, normalization scale/offset and moving statistic from
    ``seed``; kernels keep their (seeded) initializers' values. Layers whose
    bias was set on purpose (a non-zero initializer) keep it."""
    import keras

    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            gamma, beta, mean, variance = layer.get_weights()
            layer.set_weights([
                rng.uniform(0.5, 1.5, gamma.shape).astype(np.float32),
                rng.normal(0.0, 0.1, beta.shape).astype(np.float32),
                rng.normal(0.0, 0.1, mean.shape).astype(np.float32),
                rng.uniform(0.5, 1.5, variance.shape).astype(np.float32),
            ])
            continue
        bias = getattr(layer, "bias", None)
        if bias is None:
            continue
        values = np.asarray(bias.numpy())
        if np.any(values):
            continue
        bias.assign(rng.normal(0.0, 0.05, values.shape).astype(np.float32))
