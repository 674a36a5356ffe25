"""Runs mutated models through npukit and classifies what happened.

Two stages:

- import and validation (``ImportFuzzer``): long-lived child processes
  (support.fuzz_import_child), one per core, import one file after another
  with npukit.frontends.import_model. A child that dies is a crash (and is
  restarted), one that does not answer within the timeout a hang (killed and
  restarted);
- the full compile (``compile_outcome``): the ``npukit compile`` command on
  one file, its exit status and stderr classified, and the output directory
  checked (nothing may be written by a failed compile).

Results: ``accepted``; ``refused`` (one line that names the file);
``time limit`` (refused by npukit's own time limit, one line);
``internal error`` (npukit's one-line report of its own fault);
``traceback``; ``crash`` (killed by a signal); ``hang`` (past the
harness's timeout); ``bad output`` (anything else: several stderr lines, a
line without the file's name, another exit status, a partial output).
"""

from __future__ import annotations

import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

GOOD = ("accepted", "refused", "time limit")
BAD = ("internal error", "traceback", "crash", "hang", "bad output")
TESTS = Path(__file__).resolve().parent.parent


@dataclass
class Outcome:
    path: str
    kind: str
    seed_model: str
    result: str
    message: str = ""
    seconds: float = 0.0
    details: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def child_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(TESTS), *[p for p in sys.path if p.endswith("compiler_plugin")]]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra or {})
    return env


def _one_line_refusal(message: str, path: str) -> bool:
    return "\n" not in message.strip() and path in message


class _ImportChild:
    def __init__(self, env: dict[str, str], log: Path | None) -> None:
        self.log = log.open("ab") if log is not None else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "support.fuzz_import_child"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, env=env, start_new_session=True)
        self.buffer = b""

    def ask(self, path: str, timeout: float) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write((json.dumps({"path": path}) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._died()
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                if line.startswith(b"@@ "):
                    return json.loads(line[3:])
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                return {"result": "hang", "message": f"no answer within {timeout:g} s"}
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return self._died()
            self.buffer += chunk

    def _died(self) -> dict:
        rc = self.proc.wait()
        name = signal.Signals(-rc).name if rc < 0 and -rc in signal.Signals._value2member_map_ else str(rc)
        return {"result": "crash" if rc < 0 else "bad output", "message": f"the import process ended ({name})"}

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.log is not subprocess.DEVNULL:
            self.log.close()


class ImportFuzzer:
    """Imports files in ``jobs`` child processes, with a timeout per file."""

    def __init__(self, jobs: int, timeout: float = 60.0, env: dict[str, str] | None = None,
                 log: Path | None = None) -> None:
        self.jobs = max(jobs, 1)
        self.timeout = timeout
        self.env = child_environment(env)
        self.log = log

    def run(self, items: list[tuple[Path, str, str]], on_result=None) -> list[Outcome]:
        """``items``: (path, mutation kind, seed model); the outcomes in the same order."""
        todo: queue.Queue = queue.Queue()
        for i, item in enumerate(items):
            todo.put((i, item))
        results: list[Outcome | None] = [None] * len(items)
        lock = threading.Lock()

        def work() -> None:
            child = _ImportChild(self.env, self.log)
            try:
                while True:
                    try:
                        i, (path, kind, seed_model) = todo.get_nowait()
                    except queue.Empty:
                        return
                    started = time.monotonic()
                    answer = child.ask(str(path), self.timeout)
                    result = answer["result"]
                    if result == "refused" and not _one_line_refusal(answer["message"], str(path)):
                        result = "bad output"
                    if result in ("crash", "hang", "bad output") and child.proc.poll() is not None:
                        child.close()
                        child = _ImportChild(self.env, self.log)
                    outcome = Outcome(str(path), kind, seed_model, result, answer.get("message", ""),
                                      time.monotonic() - started, answer.get("details", []))
                    with lock:
                        results[i] = outcome
                        if on_result is not None:
                            on_result(outcome)
            finally:
                child.close()

        threads = [threading.Thread(target=work) for _ in range(min(self.jobs, len(items)) or 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [r for r in results if r is not None]


def npukit_command() -> list[str]:
    script = Path(sys.executable).parent / "npukit"
    return [str(script)] if script.exists() else [sys.executable, "-m", "npukit.cli.main"]


def compile_outcome(path: Path, kind: str, seed_model: str, out_dir: Path, timeout: float,
                    env: dict[str, str] | None = None) -> Outcome:
    """``npukit compile PATH -o OUT_DIR`` and what came of it."""
    started = time.monotonic()
    proc = subprocess.Popen([*npukit_command(), "compile", str(path), "-o", str(out_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_environment(env), start_new_session=True)
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return Outcome(str(path), kind, seed_model, "hang", f"no exit within {timeout:g} s",
                       time.monotonic() - started)
    seconds = time.monotonic() - started
    lines = stderr.splitlines()
    rc = proc.returncode
    line = lines[0] if lines else ""

    def outcome(result: str, message: str = line) -> Outcome:
        return Outcome(str(path), kind, seed_model, result, message, seconds,
                       lines[-8:] if result in BAD else [])

    if rc < 0:
        return outcome("crash", f"killed by {signal.Signals(-rc).name}")
    if "Traceback (most recent call last)" in stderr:
        return outcome("traceback", lines[-1] if lines else "")
    if rc == 0:
        return outcome("accepted", "") if out_dir.is_dir() else outcome("bad output", "exit 0 without output")
    if out_dir.exists() or any(p.name.startswith(f".{out_dir.name}.staging-") for p in out_dir.parent.iterdir()):
        return outcome("bad output", f"a failed compile left files behind: {line}")
    if len(lines) == 1 and line.startswith("npukit: internal error:"):
        return outcome("internal error")
    if rc == 1 and len(lines) == 1 and line.startswith("npukit: error: ") and str(path) in line:
        return outcome("time limit" if "time limit" in line else "refused")
    return outcome("bad output", f"exit status {rc}, {len(lines)} stderr lines: {line}")
