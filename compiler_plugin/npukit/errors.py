"""Errors that npukit reports to its users.

Every error a user can cause (a bad model, an unknown target, an op IREE cannot
compile, a missing toolchain) is an :class:`NpukitError` whose message says what
went wrong and what to do. The CLI prints it as one line and exits non-zero.
"""

from __future__ import annotations


class NpukitError(Exception):
    """Base class of errors with a message meant for the user."""


class ModelError(NpukitError):
    """The model file is missing, unreadable or not in a format npukit reads."""


class TargetError(NpukitError):
    """An unknown target, output mode or execution model was asked for."""


class CompileError(NpukitError):
    """IREE (or an npukit pass) could not compile the model."""

    def __init__(self, message: str, diagnostics: list[str] | None = None):
        super().__init__(message)
        self.diagnostics = list(diagnostics or [])


class ToolchainError(NpukitError):
    """A cross toolchain or other external program is missing."""


class ArtifactError(NpukitError):
    """A compiled artifact is missing, incomplete or cannot run where asked."""


class RunError(NpukitError):
    """Running a compiled artifact failed (bad inputs, runtime failure)."""
