"""Runs IREE's pipeline in phases, with npukit's passes in between.

The released ``libIREECompiler.so`` cannot load C++ plugins, so npukit's passes
run on the MLIR Python bindings between phases of IREE's own pipeline: the
module is compiled up to a phase boundary, exported to Python, transformed,
imported into a fresh invocation and compiled on from that phase. Splitting at
a boundary without transforming gives byte-identical output to running the
whole pipeline at once (tested).
"""

from __future__ import annotations

import gc

from dataclasses import dataclass, field
from typing import Callable

from iree.compiler import ir
from iree.compiler.api import Invocation, Session, Source

from npukit.driver import iree_capi
from npukit.driver.diagnostics import DiagnosticCollector
from npukit.errors import CompileError

#: A pass between phases: gets the module operation and changes it in place.
ModuleHook = Callable[[ir.Operation], None]

PHASES = iree_capi.PHASES


def phase_index(phase: str) -> int:
    try:
        return PHASES.index(phase)
    except ValueError:
        raise CompileError(f"unknown compile phase '{phase}'; phases: {', '.join(PHASES)}") from None


@dataclass
class PhasedPipeline:
    """Compiles one source through IREE's phases, calling hooks at boundaries.

    ``hooks`` maps a phase name to the passes run once the module has reached
    that phase. With ``collector`` set, diagnostics go there and failures raise
    CompileError; otherwise they are printed on the console as iree-compile does.
    """

    session: Session
    hooks: dict[str, list[ModuleHook]] = field(default_factory=dict)
    collector: DiagnosticCollector | None = None
    verify_ir: bool = True
    dump_phases_to: str | None = None

    def _new_invocation(self) -> Invocation:
        inv = self.session.invocation()
        if self.collector is not None:
            iree_capi.enable_callback_diagnostics(inv, self.collector)
        else:
            inv.enable_console_diagnostics()
        iree_capi.set_verify_ir(inv, self.verify_ir)
        if self.dump_phases_to:
            iree_capi.set_dump_compilation_phases_to(inv, self.dump_phases_to)
        return inv

    def _fail(self, what: str) -> CompileError:
        if self.collector is not None:
            return CompileError(self.collector.summary(), self.collector.texts())
        error = CompileError(what)
        error.on_console = True  # IREE printed the diagnostics (an npukit pass's error was not printed)
        return error

    def run(self, source: Source, compile_from: str = "start", compile_to: str = "end") -> Invocation:
        start, stop = phase_index(compile_from), phase_index(compile_to)
        if stop < start:
            raise CompileError(f"--compile-to={compile_to} comes before --compile-from={compile_from}")
        boundaries = sorted(
            (phase_index(p), p) for p, hooks in self.hooks.items() if hooks and start <= phase_index(p) <= stop
        )
        inv = self._new_invocation()
        if not inv.parse_source(source):
            raise self._fail("could not parse the input")
        current = compile_from
        for _, boundary in boundaries:
            self._advance(inv, current, boundary)
            module = inv.export_module()
            for hook in self.hooks[boundary]:
                hook(module)
            # Python objects of this module's operations that only a cycle
            # still holds (an exception's frames, say) are freed now, while
            # the module they point into is the one they were made for: the
            # next invocation rewrites and frees its operations, and a later
            # collection would touch freed memory (a segmentation fault).
            gc.collect()
            inv = self._new_invocation()
            inv.import_module(module)
            current = boundary
        self._advance(inv, current, compile_to)
        return inv

    def _advance(self, inv: Invocation, current: str, target: str) -> None:
        if current == target:
            return
        if current != "start":
            iree_capi.set_compile_from(inv, current)
        iree_capi.set_compile_to(inv, target)
        if not inv.execute():
            raise self._fail(f"compilation failed between phases '{current}' and '{target}'")
