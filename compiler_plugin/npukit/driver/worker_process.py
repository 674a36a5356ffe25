"""Runs one of npukit's worker modules in a child process, with a time limit.

Imports and compiles run in a child process so that a crash inside IREE, the
ONNX libraries or the MLIR bindings ends only the child: the caller gets the
signal and the child's stderr (LLVM's stack dump) to describe it. The child
writes progress as JSON lines on stdout; its stderr goes to a file, never to
the caller's terminal (``log`` receives it, for ``--verbose``). A child
still running at the time limit is killed, with everything it started.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

#: Receives text a child wrote on stderr (compiler logs, third-party warnings).
LogSink = Callable[[str], None]


@dataclass
class WorkerOutcome:
    returncode: int
    stderr: str
    # The last phase the child reported reaching (None before the first).
    last_phase: str | None
    timed_out: bool
    seconds: float

    @property
    def crashed(self) -> bool:
        return self.returncode < 0 and not self.timed_out


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_worker(
    module: str,
    args: list[str],
    work_dir: Path,
    time_limit: float,
    on_progress: Callable[[str], None] = lambda _m: None,
    log: LogSink | None = None,
) -> WorkerOutcome:
    """Runs ``python -m module *args``; returns how it ended (never raises for the child's failure)."""
    stderr_path = work_dir / f"{module.rsplit('.', 1)[-1]}.stderr"
    started = time.monotonic()
    last_phase: list[str | None] = [None]
    with stderr_path.open("w+b") as stderr_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr_file,
            text=True,
            start_new_session=True,  # the whole group can be killed at the time limit
        )

        def read_progress() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if not isinstance(record, dict):
                    continue
                last_phase[0] = record.get("phase") or last_phase[0]
                if record.get("progress"):
                    on_progress(str(record["progress"]))

        reader = threading.Thread(target=read_progress, daemon=True)
        reader.start()
        timed_out = False
        try:
            proc.wait(timeout=time_limit)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            if proc.poll() is None:
                _kill_group(proc)
                proc.wait()
        reader.join(timeout=10)
        stderr_file.seek(0)
        stderr = stderr_file.read().decode("utf-8", "replace")
    stderr_path.unlink(missing_ok=True)
    if log is not None and stderr.strip():
        log(stderr)
    return WorkerOutcome(proc.returncode, stderr, last_phase[0], timed_out, time.monotonic() - started)
