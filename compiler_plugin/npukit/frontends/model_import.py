"""Reading a model file of any supported format: the frontend its format names."""

from __future__ import annotations

from pathlib import Path

from npukit.frontends.imported_model import ImportedModel
from npukit.frontends.model_format import ModelFormat, detect_format


def import_model(path: "str | Path", name: str | None = None) -> ImportedModel:
    """Reads a model file of any supported format."""
    path = Path(path)
    fmt = detect_format(path)
    model_name = name or path.stem
    if fmt is ModelFormat.ONNX:
        from npukit.frontends.onnx_frontend import import_onnx

        return import_onnx(path, model_name)
    if fmt is ModelFormat.TFLITE:
        from npukit.frontends.tflite.importer import import_tflite

        return import_tflite(path, model_name)
    return ImportedModel(path=path, format=fmt, name=model_name)
