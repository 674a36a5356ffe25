"""TFLite models, converted to ONNX with tf2onnx (needs TensorFlow).

The conversion is the one the MLPerf Tiny ONNX files in this project were made
with (opset 17, QDQ form for int8 models, batch dimension fixed to 1).
"""

from __future__ import annotations

from pathlib import Path

from npukit.errors import ModelError
from npukit.frontends.imported_model import ImportedModel
from npukit.frontends.model_format import ModelFormat

INSTALL_HINT = "pip install 'npukit[tflite]'"
OPSET = 17


def _converter():
    try:
        import tensorflow  # noqa: F401  (tf2onnx needs it to read .tflite)
        import tf2onnx
    except ImportError as e:
        raise ModelError(
            f"reading .tflite models needs TensorFlow and tf2onnx ({e.name} is not installed): "
            f"run `{INSTALL_HINT}`, or convert the model to ONNX first"
        ) from None
    return tf2onnx


def _fix_batch_dimension(model) -> None:
    for value in list(model.graph.input) + list(model.graph.output):
        dims = value.type.tensor_type.shape.dim
        if dims and not dims[0].HasField("dim_value"):
            dims[0].dim_value = 1


def import_tflite(path: Path, name: str) -> ImportedModel:
    tf2onnx = _converter()
    from npukit.frontends.onnx_frontend import import_onnx_proto

    import warnings

    try:
        with warnings.catch_warnings():
            # tf2onnx reads the flatbuffer with TensorFlow's deprecated tf.lite.Interpreter.
            warnings.simplefilter("ignore", UserWarning)
            model, _ = tf2onnx.convert.from_tflite(str(path), opset=OPSET)
    except Exception as e:
        raise ModelError(f"{path}: tf2onnx could not convert the model: {str(e).strip().splitlines()[0]}") from None
    _fix_batch_dimension(model)
    return import_onnx_proto(model, path, name, fmt=ModelFormat.TFLITE)
