"""Child process of the fuzzing harness: imports each model path it reads.

Reads one JSON line per model ({"path": ...}) on stdin and answers one line
``@@ {"result": ..., "message": ...}`` on stdout, with what npukit's import
and validation (npukit.frontends.import_model) made of the file: accepted,
refused (an NpukitError), an internal error, or a traceback (any other
exception). A crash or a hang ends or stalls this process; the parent sees it.
"""

from __future__ import annotations

import json
import sys
import traceback

from npukit.errors import InternalError, NpukitError
from npukit.frontends import import_model

MARK = "@@ "


def _answer(record: dict) -> None:
    sys.stdout.write(MARK + json.dumps(record) + "\n")
    sys.stdout.flush()


def main() -> int:
    for line in sys.stdin:
        path = json.loads(line)["path"]
        try:
            import_model(path)
            record = {"result": "accepted", "message": ""}
        except InternalError as e:
            record = {"result": "internal error", "message": str(e), "details": e.details[-8:]}
        except NpukitError as e:
            record = {"result": "refused", "message": str(e)}
        except BaseException as e:  # noqa: BLE001 - what the fuzzing looks for
            lines = "".join(traceback.format_exception(e)).splitlines()
            record = {"result": "traceback", "message": f"{type(e).__name__}: {e}"[:500], "details": lines[-8:]}
        _answer(record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
