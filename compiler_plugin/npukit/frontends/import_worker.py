"""Worker process for one model import (see isolated_import).

    python -m npukit.frontends.import_worker MODEL NAME OUT_DIR [FIXED_INPUTS_JSON]

Each step is announced on stdout as a JSON line before it starts (so that a
crash can be placed); the imported MLIR goes to OUT_DIR/imported.mlirbc and
the model's description, or the error, to OUT_DIR/imported.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from npukit.driver.compile_job import write_json
from npukit.errors import InternalError, NpukitError
from npukit.frontends.model_import import import_model

MLIR_FILE = "imported.mlirbc"
RESULT_FILE = "imported.json"


def _stage(name: str) -> None:
    print(json.dumps({"progress": name, "phase": name}), flush=True)


def inputs_argument(input_shapes, input_values) -> str:
    """Input shapes and values as the worker's argument (JSON; the shape key "" for a model's only input)."""
    return json.dumps({"shapes": {name or "": list(shape) for name, shape in input_shapes.items()},
                       "values": {name: list(value) for name, value in input_values.items()}})


def main(argv: list[str]) -> int:
    model, name, out_dir = Path(argv[0]), argv[1], Path(argv[2])
    fixed = json.loads(argv[3]) if len(argv) > 3 else {"shapes": {}, "values": {}}
    shapes = {key or None: tuple(dims) for key, dims in fixed["shapes"].items()}
    values = {key: tuple(value) for key, value in fixed["values"].items()}
    try:
        imported = import_model(model, name or None, stage=_stage, input_shapes=shapes, input_values=values)
    except NpukitError as e:
        details = e.details if isinstance(e, InternalError) else []
        write_json(out_dir / RESULT_FILE, {"ok": False, "error": str(e), "error_kind": type(e).__name__,
                                           "details": details})
        return 1
    if imported.mlir is not None:
        (out_dir / MLIR_FILE).write_bytes(imported.mlir)
    write_json(out_dir / RESULT_FILE, {"ok": True, "model": imported.to_json()})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
