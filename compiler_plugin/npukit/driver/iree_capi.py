"""The parts of IREE's compiler C API that ``iree.compiler.api`` does not wrap.

``iree.compiler.api`` (IREE 3.13.0) wraps sessions, sources, outputs and the
module import/export, but not compile phases, vm-c output or callback
diagnostics. Those are plain C functions of the same ``libIREECompiler.so``;
this module declares their signatures once and offers small helpers.
"""

from __future__ import annotations

import ctypes
from ctypes import c_bool, c_char_p, c_int, c_size_t, c_void_p
from typing import Callable

from iree.compiler.api import Invocation, Output
from iree.compiler.api import ctypes_dl as _dl

# Phases of IREE's standard pipeline, in order (IREEVMPipelinePhase).
PHASES: tuple[str, ...] = (
    "start",
    "input",
    "abi",
    "preprocessing",
    "global-optimization",
    "dispatch-creation",
    "flow",
    "stream",
    "executable-sources",
    "executable-configurations",
    "executable-targets",
    "hal",
    "vm",
    "end",
)

SEVERITIES = {0: "note", 1: "warning", 2: "error", 3: "remark"}

_DIAGNOSTIC_CALLBACK = ctypes.CFUNCTYPE(None, c_int, c_void_p, c_size_t, c_void_p)


def _lib() -> ctypes.CDLL:
    lib = _dl._dylib
    if not getattr(lib, "_npukit_signatures", False):
        lib.ireeCompilerInvocationSetCompileToPhase.restype = None
        lib.ireeCompilerInvocationSetCompileToPhase.argtypes = [c_void_p, c_char_p]
        lib.ireeCompilerInvocationSetCompileFromPhase.restype = None
        lib.ireeCompilerInvocationSetCompileFromPhase.argtypes = [c_void_p, c_char_p]
        lib.ireeCompilerInvocationOutputVMCSource.restype = c_void_p
        lib.ireeCompilerInvocationOutputVMCSource.argtypes = [c_void_p, c_void_p]
        lib.ireeCompilerInvocationSetVerifyIR.restype = None
        lib.ireeCompilerInvocationSetVerifyIR.argtypes = [c_void_p, c_bool]
        lib.ireeCompilerInvocationEnableCallbackDiagnostics.restype = None
        lib.ireeCompilerInvocationEnableCallbackDiagnostics.argtypes = [
            c_void_p,
            c_int,
            _DIAGNOSTIC_CALLBACK,
            c_void_p,
        ]
        lib.ireeCompilerInvocationSetDumpCompilationPhasesTo.restype = None
        lib.ireeCompilerInvocationSetDumpCompilationPhasesTo.argtypes = [c_void_p, c_char_p]
        lib._npukit_signatures = True
    return lib


_global_command_line_done = False


def setup_global_command_line(args: list[str], crash_handlers: bool = True) -> None:
    """Parses iree-compile style flags into the compiler's global options.

    Sessions created afterwards start from these options. As in iree-compile,
    an unknown flag makes LLVM print an error and exit the process. With
    ``crash_handlers`` LLVM prints a stack dump if the compiler crashes. Call
    once per process, before the first session.
    """
    global _global_command_line_done
    buffers = [ctypes.create_string_buffer(a.encode()) for a in args]
    argv = (c_char_p * len(args))(*map(ctypes.addressof, buffers))
    _dl._dylib.ireeCompilerSetupGlobalCL(len(args), argv, b"npukit", crash_handlers)
    _global_command_line_done = True


def ensure_global_command_line() -> None:
    """Initialises the global options with defaults if nobody did.

    Some outputs (vm-c) run pass managers that read the global pass-manager
    options and fail when they were never set up.
    """
    if not _global_command_line_done:
        setup_global_command_line(["npukit"])


def set_compile_to(inv: Invocation, phase: str) -> None:
    _lib().ireeCompilerInvocationSetCompileToPhase(inv._inv_p, phase.encode())


def set_compile_from(inv: Invocation, phase: str) -> None:
    _lib().ireeCompilerInvocationSetCompileFromPhase(inv._inv_p, phase.encode())


def set_verify_ir(inv: Invocation, enable: bool) -> None:
    _lib().ireeCompilerInvocationSetVerifyIR(inv._inv_p, enable)


def set_dump_compilation_phases_to(inv: Invocation, path: str) -> None:
    _lib().ireeCompilerInvocationSetDumpCompilationPhasesTo(inv._inv_p, path.encode())


def output_vm_c_source(inv: Invocation, output: Output) -> None:
    _dl._handle_error(_lib().ireeCompilerInvocationOutputVMCSource(inv._inv_p, output._output_p))


def enable_callback_diagnostics(inv: Invocation, sink: Callable[[str, str], None]) -> None:
    """Routes the invocation's diagnostics to ``sink(severity, message)``.

    The ctypes callback object is kept alive on the invocation.
    """

    def on_diagnostic(severity: int, message: int, size: int, _user: int) -> None:
        text = ctypes.string_at(message, size).decode("utf-8", errors="replace")
        sink(SEVERITIES.get(severity, "error"), text)

    callback = _DIAGNOSTIC_CALLBACK(on_diagnostic)
    inv._npukit_diagnostic_callback = callback  # keep alive with the invocation
    _lib().ireeCompilerInvocationEnableCallbackDiagnostics(inv._inv_p, 0, callback, None)
