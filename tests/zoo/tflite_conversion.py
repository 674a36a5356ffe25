"""Keras model -> .tflite bytes with the TFLite converter, as users convert
for microcontrollers: full-integer quantization calibrated on a (seeded)
representative dataset, or plain float32."""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np


def to_tflite(model, form: str, calibration: list[np.ndarray]) -> bytes:
    """``form``: "int8" (per-channel weights, int8 input/output),
    "int8-per-tensor" (the converter's per-tensor option), "int8-float-io"
    (int8 layers, float32 input/output: QUANTIZE/DEQUANTIZE at the edges),
    "int16x8" (int16 activations, int8 weights) or "float32"."""
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if form != "float32":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = lambda: ([sample] for sample in calibration)
        if form == "int16x8":
            converter.target_spec.supported_ops = [
                tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
            ]
            converter.inference_input_type = tf.int16
            converter.inference_output_type = tf.int16
        else:
            converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            if form in ("int8", "int8-per-tensor"):
                converter.inference_input_type = tf.int8
                converter.inference_output_type = tf.int8
            elif form != "int8-float-io":
                raise ValueError(f"no TFLite conversion for form {form!r}")
            if form == "int8-per-tensor":
                converter._experimental_disable_per_channel = True
    # The Keras exporter prints the saved model's signature on stdout, and the
    # converter warns that an int8 input has no statistics (it has a scale).
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return bytes(converter.convert())
