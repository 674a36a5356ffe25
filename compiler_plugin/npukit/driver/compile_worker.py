"""Worker process for one compile job (see compile_job).

    python -m npukit.driver.compile_worker JOB.json RESULT.json

Progress goes to stdout as JSON lines; the result (or the error) to
RESULT.json. A crash inside IREE kills only this process; the parent turns
the signal and IREE's stack dump into an error message.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from npukit.driver.compile_job import CompileJob, JobResult, run_job, write_json
from npukit.errors import CompileError, NpukitError


def _progress(message: str, phase: str) -> None:
    print(json.dumps({"progress": message, "phase": phase}), flush=True)


def main(argv: list[str]) -> int:
    job_path, result_path = Path(argv[0]), Path(argv[1])
    job = CompileJob.from_json(json.loads(job_path.read_text()))
    try:
        result = run_job(job, _progress)
    except NpukitError as e:
        diagnostics = e.diagnostics if isinstance(e, CompileError) else []
        result = JobResult(ok=False, error=str(e), error_kind=type(e).__name__, diagnostics=diagnostics)
    write_json(result_path, result.to_json())
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
