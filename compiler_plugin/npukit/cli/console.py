"""What the ``npukit`` command writes on stderr, and what it keeps off it.

By default stderr carries npukit's own lines only: on a failure exactly one,
``npukit: error: ...``. Progress is shown on a terminal as one status line
that is erased when the command ends, and not at all when stderr is a file
or a pipe. Everything else written to the process's stderr while a command
runs (third-party libraries' warnings, C++ libraries' messages) is caught
at the file-descriptor level and dropped; the compile and import workers'
stderr (IREE's diagnostics and stack dumps) never reaches it either.

With ``--verbose`` nothing is caught: progress is printed line by line, the
workers' stderr and IREE's full diagnostics are shown, and an internal
error's traceback is printed before its one-line summary.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import traceback
from typing import Iterator, TextIO

from npukit.errors import CompileError, InternalError, NpukitError

PREFIX = "npukit"


def one_line(text: str) -> str:
    """``text`` as a single line (a message with line breaks is joined)."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


class Console:
    def __init__(self, verbose: bool = False, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.verbose = verbose
        self.quiet = quiet
        self.stream: TextIO = stream or sys.stderr
        self._status = False

    @property
    def interactive(self) -> bool:
        try:
            return self.stream.isatty()
        except (AttributeError, ValueError):
            return False

    # Output -------------------------------------------------------------------------

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def clear_status(self) -> None:
        if self._status:
            self._write("\r\033[K")
            self._status = False

    def progress(self, message: str) -> None:
        """A step of a long command (one erasable status line on a terminal)."""
        if self.quiet or not message:
            return
        if self.verbose:
            self.clear_status()
            self._write(f"{PREFIX}: {message}\n")
        elif self.interactive:
            width = max(shutil.get_terminal_size((100, 20)).columns - 1, 20)
            line = f"{PREFIX}: {one_line(message)}"
            self._write("\r\033[K" + (line if len(line) <= width else line[: width - 3] + "..."))
            self._status = True

    def log(self, text: str) -> None:
        """Logs of IREE and the libraries: shown with --verbose only."""
        if self.verbose and text.strip():
            self.clear_status()
            self._write(text if text.endswith("\n") else text + "\n")

    def error(self, error: BaseException) -> None:
        """The one line of a failure (after its details, with --verbose)."""
        self.clear_status()
        internal = not isinstance(error, NpukitError) or isinstance(error, InternalError)
        if self.verbose:
            if isinstance(error, CompileError) and error.diagnostics:
                self._write("\n".join(error.diagnostics) + "\n")
            if isinstance(error, InternalError) and error.details:
                self._write("\n".join(error.details) + "\n")
            elif not isinstance(error, NpukitError):
                self._write("".join(traceback.format_exception(error)))
        if internal:
            what = one_line(str(error)) if isinstance(error, InternalError) else \
                f"{type(error).__name__}: {one_line(str(error))}".rstrip(": ")
            hint = "" if self.verbose else " (run with --verbose for the details)"
            self._write(f"{PREFIX}: internal error: {what}{hint}\n")
        else:
            self._write(f"{PREFIX}: error: {one_line(str(error))}\n")

    # Capturing stderr ---------------------------------------------------------------

    @contextlib.contextmanager
    def captured_stderr(self) -> Iterator[None]:
        """Unless verbose: file descriptor 2 goes to a scratch file while the
        command runs; npukit's own lines go to the original stderr."""
        if self.verbose:
            yield
            return
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError):  # no stderr to protect
            yield
            return
        original = os.fdopen(os.dup(saved), "w", buffering=1, encoding="utf-8", errors="replace")
        previous_stream, previous_sys = self.stream, sys.stderr
        with tempfile.TemporaryFile() as scratch:
            os.dup2(scratch.fileno(), 2)
            sys.stderr = os.fdopen(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace")
            self.stream = original
            try:
                yield
            finally:
                self.clear_status()
                try:
                    sys.stderr.flush()
                    sys.stderr.close()
                except OSError:
                    pass
                sys.stderr = previous_sys
                os.dup2(saved, 2)
                os.close(saved)
                self.stream = previous_stream
                original.close()
