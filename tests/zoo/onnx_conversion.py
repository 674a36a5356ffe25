"""Keras model -> ONNX: float32 through tf2onnx (opset 17), and QDQ int8
through onnxruntime's static quantizer calibrated on a seeded reader."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import numpy as np

from .onnx_canonical import canonical_onnx

OPSET = 17


def to_float_onnx(model, input_shape: tuple[int, ...]) -> bytes:
    import tensorflow as tf
    import tf2onnx

    signature = [tf.TensorSpec((1, *input_shape), tf.float32, name="input")]
    function = tf.function(lambda x: model(x, training=False))
    proto, _ = tf2onnx.convert.from_function(function, input_signature=signature, opset=OPSET)
    return canonical_onnx(proto.SerializeToString())


class _SeededReader:
    """onnxruntime's CalibrationDataReader protocol over fixed samples."""

    def __init__(self, input_name: str, samples: list[np.ndarray]):
        self._feeds = iter([{input_name: sample} for sample in samples])

    def get_next(self):
        return next(self._feeds, None)


def to_onnx(model, form: str, input_shape: tuple[int, ...], calibration: list[np.ndarray]) -> bytes:
    """``form``: "onnx-float32", "qdq-per-channel" or "qdq-per-tensor" (int8
    activations and weights in QDQ format, MinMax calibration). Before
    quantizing, onnxruntime's pre-processing folds the normalization's
    multiplications and additions into the convolutions, as its
    documentation advises."""
    float_bytes = to_float_onnx(model, input_shape)
    if form == "onnx-float32":
        return float_bytes
    if form not in ("qdq-per-channel", "qdq-per-tensor"):
        raise ValueError(f"no ONNX conversion for form {form!r}")
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    CalibrationDataReader.register(_SeededReader)
    # The quantizer advises pre-processing on every call through the root logger.
    logging.getLogger().setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="npukit-zoo-onnx-") as scratch:
        raw, source, target = (Path(scratch) / name for name in ("float.onnx", "prepared.onnx", "qdq.onnx"))
        raw.write_bytes(float_bytes)
        quant_pre_process(str(raw), str(source))
        quantize_static(
            str(source), str(target), _SeededReader("input", calibration),
            quant_format=QuantFormat.QDQ, per_channel=form == "qdq-per-channel",
            activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
        )
        return canonical_onnx(target.read_bytes())
