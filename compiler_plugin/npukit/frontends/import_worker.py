"""Worker process for one model import (see isolated_import).

    python -m npukit.frontends.import_worker MODEL NAME OUT_DIR

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


def main(argv: list[str]) -> int:
    model, name, out_dir = Path(argv[0]), argv[1], Path(argv[2])
    try:
        imported = import_model(model, name or None, stage=_stage)
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
