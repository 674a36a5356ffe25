"""Errors that npukit reports to its users.

Every error a user can cause (a bad model, an unknown target, an op IREE cannot
compile, a missing toolchain) is an :class:`NpukitError` whose message says what
went wrong and what to do. The CLI prints it as one line and exits non-zero.
"""

from __future__ import annotations


class NpukitError(Exception):
    """Base class of errors with a message meant for the user."""


class ModelError(NpukitError):
    """The model file is missing, unreadable, malformed or not in a format npukit reads."""


class ModelLimitError(ModelError):
    """A well-formed model exceeds one of npukit's limits (tensor size, rank,
    operator count, file size; see npukit.frontends.limits)."""


class TargetError(NpukitError):
    """An unknown target, output mode or execution model was asked for."""


class CompileError(NpukitError):
    """IREE (or an npukit pass) could not compile the model."""

    def __init__(self, message: str, diagnostics: list[str] | None = None, phase: str | None = None):
        super().__init__(message)
        self.diagnostics = list(diagnostics or [])
        # The last phase of IREE's pipeline the module had reached (None: not even 'input').
        self.phase = phase


class CompileTimeout(CompileError):
    """A compile or an import ran past its time limit and was stopped."""


class InternalError(NpukitError):
    """A fault inside npukit itself (not the model's): reported in one line,
    with the details kept for ``--verbose``."""

    def __init__(self, message: str, details: list[str] | None = None):
        super().__init__(message)
        self.details = list(details or [])


class ToolchainError(NpukitError):
    """A cross toolchain or other external program is missing."""


class ArtifactError(NpukitError):
    """A compiled artifact is missing, incomplete or cannot run where asked."""


class RunError(NpukitError):
    """Running a compiled artifact failed (bad inputs, runtime failure)."""
