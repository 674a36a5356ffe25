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


def spread_classifier_logits(model, samples: list[np.ndarray], seed: int, target_std: float = 1.5,
                             max_gain: float = 8.0) -> None:
    """Rescales the classifier layer of a model that ends in a softmax so
    that its logits move with the input: their deviation from each class's
    mean over ``samples`` gets standard deviation ``target_std``, and the
    class means are replaced by small seeded offsets.

    Untrained, a classifier's logits are nearly constant plus a per-class
    offset, and the softmax gives the same int8 output for every input; real
    models' outputs follow their inputs, and the zoo's should too. The gain
    is at most ``max_gain``: a network whose features hardly move with its
    input is not made to look otherwise by weights of extreme scale (which
    XNNPACK also refuses). Models without a final softmax are left alone."""
    import keras

    last = model.layers[-1]
    activation = getattr(last, "activation", None)
    ends_in_softmax = isinstance(last, keras.layers.Softmax) or getattr(activation, "__name__", "") == "softmax"
    if not ends_in_softmax:
        return
    classifier = next((layer for layer in reversed(model.layers) if getattr(layer, "kernel", None) is not None), None)
    if classifier is None or not getattr(classifier, "use_bias", False):
        return
    features = keras.Model(model.inputs, classifier.input)
    weights = classifier.get_weights()
    kernel, bias = np.asarray(weights[0]), np.asarray(weights[1])
    matrix = kernel.reshape(-1, kernel.shape[-1])
    x = np.concatenate([np.asarray(features([sample], training=False)).reshape(-1, matrix.shape[0])
                        for sample in samples])
    logits = x @ matrix
    spread = float(np.std(logits - logits.mean(axis=0, keepdims=True)))
    if spread <= 0:
        return
    gain = min(target_std / spread, max_gain)
    offsets = np.random.default_rng(seed).normal(0.0, 0.5, bias.shape)
    centred_bias = offsets - logits.mean(axis=0) * gain
    classifier.set_weights([(kernel * gain).astype(np.float32), centred_bias.astype(np.float32)] + weights[2:])
