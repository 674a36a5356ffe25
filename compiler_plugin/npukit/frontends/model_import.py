"""Reading a model file of any supported format: the frontend its format names.

Whatever the file holds, the outcome is an ImportedModel or an NpukitError
with a one-line message naming the file: a malformed model is a ModelError,
a fault of npukit's own code an InternalError (with the traceback kept as
its details), never another exception. ``npukit.compile`` runs this in a
child process (isolated_import), so that even a crash inside a C++ library
cannot end the caller.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Callable

from npukit.errors import InternalError, NpukitError
from npukit.frontends.imported_model import ImportedModel
from npukit.frontends.input_shapes import InputShapes, check_fixed_shapes
from npukit.frontends.input_values import InputValues, refuse_input_values
from npukit.frontends.limits import limits
from npukit.frontends.model_format import ModelFormat, detect_format


def _no_stage(_name: str) -> None:
    pass


def check_file_size(path: Path) -> None:
    model_limits = limits()
    try:
        size = path.stat().st_size
    except OSError:
        return  # detect_format has already said why the file cannot be read
    if size > model_limits.file_bytes:
        raise model_limits.exceeded(path, "the model file", size, "file_bytes", "bytes")


def import_model(path: "str | Path", name: str | None = None,
                 stage: Callable[[str], None] = _no_stage, input_shapes: InputShapes | None = None,
                 input_values: InputValues | None = None) -> ImportedModel:
    """Reads a model file of any supported format (``stage`` is told each step as it starts;
    ``input_shapes`` fix an ONNX model's unknown input dimensions, npukit.frontends.input_shapes;
    ``input_values`` make ONNX inputs constants, npukit.frontends.input_values)."""
    path = Path(path)
    fmt = detect_format(path)
    check_file_size(path)
    model_name = name or path.stem
    try:
        if fmt is ModelFormat.ONNX:
            from npukit.frontends.onnx_frontend import import_onnx

            return import_onnx(path, model_name, stage, input_shapes=input_shapes, input_values=input_values)
        if fmt is ModelFormat.TFLITE:
            from npukit.frontends.tflite.importer import import_tflite

            stage("importing")
            refuse_input_values(path, input_values or {})
            imported = import_tflite(path, model_name)
            check_fixed_shapes(path, imported.entry_points, input_shapes or {})
            return imported
    except NpukitError:
        raise
    except Exception as e:  # noqa: BLE001 - a fault of npukit's frontend, reported in one line
        detail = str(e).strip().splitlines()[0] if str(e).strip() else ""
        details = [ln for ln in "".join(traceback.format_exception(e)).splitlines() if ln.strip()]
        raise InternalError(
            f"{path}: npukit's {fmt.value} importer failed ({type(e).__name__}{': ' + detail if detail else ''})",
            details,
        ) from None
    check_fixed_shapes(path, None, input_shapes or {})
    refuse_input_values(path, input_values or {})
    return ImportedModel(path=path, format=fmt, name=model_name)
