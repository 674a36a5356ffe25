"""Worker process for one compile job (see compile_job).

    python -m npukit.driver.compile_worker JOB.json RESULT.json

Progress goes to stdout as JSON lines; the result (or the error) to
RESULT.json. A crash inside IREE kills only this process; the parent turns
the signal and IREE's stack dump into an error message.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

from npukit.driver.compile_job import CompileJob, JobResult, run_job, write_json
from npukit.errors import CompileError, NpukitError


def _progress(message: str, phase: str) -> None:
    print(json.dumps({"progress": message, "phase": phase}), flush=True)


def _lines(e: Exception) -> list[str]:
    return [ln.rstrip() for ln in "".join(traceback.format_exception(e)).splitlines() if ln.strip()]


def _last_line(e: Exception) -> str:
    """The exception's own last line: for a fault inside a pass hook (which
    IREE's bindings wrap in a RuntimeError with the traceback as text), the
    original exception and its message."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[-1] if lines else type(e).__name__


def main(argv: list[str]) -> int:
    job_path, result_path = Path(argv[0]), Path(argv[1])
    job = CompileJob.from_json(json.loads(job_path.read_text()))
    try:
        result = run_job(job, _progress)
    except NpukitError as e:
        diagnostics = e.diagnostics if isinstance(e, CompileError) else []
        result = JobResult(ok=False, error=str(e), error_kind=type(e).__name__, diagnostics=diagnostics)
    except Exception as e:  # noqa: BLE001 - a fault in one of npukit's passes, reported as a compile error
        result = JobResult(ok=False, error=f"an npukit pass failed: {_last_line(e)}", error_kind="CompileError",
                           diagnostics=_lines(e)[-12:])
    write_json(result_path, result.to_json())
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
