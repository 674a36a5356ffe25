"""A model import in a child process (import_worker), for ``npukit.compile``.

The frontends run ONNX's C++ checker and shape inference and build MLIR
through IREE's bindings; on a hostile file any of them could crash or run
without end. In a child process a crash is reported as an error that names
the file and the step that crashed, and a time limit stops a runaway import.
MLIR files need no import: IREE parses them in the compile worker, which is
isolated the same way.
"""

from __future__ import annotations

import json
from pathlib import Path

from npukit import errors
from npukit.driver.crash_report import signal_name
from npukit.driver.worker_process import LogSink, run_worker
from npukit.errors import CompileTimeout, InternalError, ModelError, NpukitError
from npukit.frontends.imported_model import ImportedModel
from npukit.frontends.import_worker import MLIR_FILE, RESULT_FILE, inputs_argument
from npukit.frontends.input_shapes import InputShapes, check_fixed_shapes
from npukit.frontends.input_values import InputValues, refuse_input_values
from npukit.frontends.limits import env_variable
from npukit.frontends.model_format import ModelFormat, detect_format
from npukit.frontends.model_import import check_file_size

# What runs during each step the import worker announces.
_STAGES = {
    "parsing": "protobuf, parsing the ONNX file",
    "validating": "npukit's ONNX checks",
    "reading external data": "reading the ONNX external data",
    "checking": "ONNX's model checker",
    "shape inference": "ONNX's shape inference",
    "importing into MLIR": "IREE's ONNX importer",
    "importing": "npukit's TFLite importer",
}


def _error(kind: str, message: str, details: list[str]) -> NpukitError:
    if kind == "InternalError":
        return InternalError(message, details)
    cls = getattr(errors, kind, None)
    if kind == "UnsupportedOperator":
        from npukit.frontends.tflite.lowering import UnsupportedOperator

        cls = UnsupportedOperator
    if not (isinstance(cls, type) and issubclass(cls, NpukitError)) or cls is errors.CompileError:
        cls = ModelError
    return cls(message)


def import_isolated(path: Path, name: str | None, work_dir: Path, time_limit: float,
                    log: LogSink | None = None, input_shapes: InputShapes | None = None,
                    input_values: InputValues | None = None) -> ImportedModel:
    """``import_model(path, name, input_shapes=..., input_values=...)`` in a child process; files go to
    ``work_dir``."""
    fmt = detect_format(path)
    check_file_size(path)
    if fmt in (ModelFormat.MLIR, ModelFormat.MLIR_BYTECODE):
        check_fixed_shapes(path, None, input_shapes or {})
        refuse_input_values(path, input_values or {})
        return ImportedModel(path=path, format=fmt, name=name or path.stem)
    outcome = run_worker("npukit.frontends.import_worker",
                         [str(path), name or "", str(work_dir),
                          inputs_argument(input_shapes or {}, input_values or {})], work_dir,
                         time_limit, log=log)
    step = _STAGES.get(outcome.last_phase or "", "starting the import")
    if outcome.timed_out:
        raise CompileTimeout(
            f"{path}: importing the model did not finish within the time limit of {time_limit:g} s "
            f"(stopped in {step}); set {env_variable('seconds')} or --time-limit to allow longer")
    result_path = work_dir / RESULT_FILE
    if outcome.returncode < 0:
        raise ModelError(f"{path}: {step} crashed ({signal_name(outcome.returncode)}) on this model; the file is "
                         "malformed or uses a form that this step cannot handle")
    if not result_path.exists():
        tail = [ln for ln in outcome.stderr.splitlines() if ln.strip()][-12:]
        raise InternalError(f"{path}: the import worker failed (exit status {outcome.returncode}) in {step}", tail)
    result = json.loads(result_path.read_text())
    result_path.unlink()
    if not result["ok"]:
        raise _error(result["error_kind"], result["error"], result.get("details", []))
    mlir_path = work_dir / MLIR_FILE
    mlir = mlir_path.read_bytes() if mlir_path.exists() else None
    mlir_path.unlink(missing_ok=True)
    return ImportedModel.from_json(result["model"], mlir)
