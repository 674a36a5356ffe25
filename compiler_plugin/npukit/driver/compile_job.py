"""One IREE compile as data: what to compile, with which flags, into which files.

``npukit.compile`` runs each job in a worker process (compile_worker) so that
a crash inside IREE (it happens on some models) becomes an error message
instead of taking the caller's Python process down. ``run_job`` is the part
that runs inside the worker.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from npukit.frontends.signature import EntryPoint

#: Phases at which progress is reported; also the pipeline's split points.
PROGRESS_PHASES = ("input", "global-optimization", "stream", "end")


@dataclass
class CompileJob:
    input_path: str
    flags: list[str]
    module_name: str
    # "vm-bytecode" or "vm-c".
    output_format: str
    output_path: str
    environment: dict[str, str] = field(default_factory=dict)
    # Read entry points from the MLIR (when the frontend did not know them).
    read_signatures: bool = False
    # MynpuOptions.to_json() when compiling for the mynpu NPU.
    mynpu: dict | None = None
    # The tuned CPU pipeline: {"objects": what executables link for the
    # kernels, none when a static library is merged with them afterwards;
    # "preset": the CPU preset's name; "choices": layer key -> KernelChoice
    # JSON, from the tuning database or given}; None for stock.
    tuned_cpu: dict | None = None
    # With mynpu: compile only up to the NPU's partitioning ('stream') and
    # write the recognised layers (npukit.mynpu.recognised_model) to this
    # file instead of an output; ``npukit explore`` costs them from there.
    recognised_layers: str | None = None

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(d: dict) -> "CompileJob":
        return CompileJob(**d)


@dataclass
class JobResult:
    ok: bool
    error: str = ""
    error_kind: str = ""
    diagnostics: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    entry_points: list[dict] = field(default_factory=list)
    dispatches: list[dict] = field(default_factory=list)
    mynpu_report: dict | None = None
    # Tuned CPU pipeline: export -> LayerKernelCalls.summary()'s entry.
    cpu_kernels: dict | None = None
    # vm-c output: the results each vm.return repeats
    # (npukit.passes.vm_return_copies; JSON keys are strings).
    vm_return_copies: dict[str, list[dict[str, int]]] = field(default_factory=dict)
    # The exported function's buffer allocations (passes.buffer_allocations).
    buffer_allocations: dict | None = None
    # The constant pools after the dispatches npukit replaced: bytes before,
    # kept, or why a pool stayed whole (passes.unread_constants).
    constant_pools: list[dict] = field(default_factory=list)
    # With the inline execution model: each transient slab's bytes before and
    # after packing it in program order, or why not (passes.transient_packing).
    transient_slabs: list[dict] = field(default_factory=list)
    # Tuned CPU pipeline: the layer blocks' bytes and weight forms (cpu.flash_budget.BudgetOutcome).
    kernel_constants: dict | None = None
    # vm-c output: each export's short name in the generated code -> IREE's
    # name for it (passes.short_export_names).
    export_names: dict[str, str] = field(default_factory=dict)
    # The exports a static library leaves out of its table (the NPU's, which
    # the mynpu-v1 executable names: MynpuTarget.library_leaves_out).
    library_leaves_out: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(d: dict) -> "JobResult":
        return JobResult(**d)


def write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def run_job(job: CompileJob, progress: Callable[[str, str], None] = lambda _m, _p: None) -> JobResult:
    """Compiles in this process; raises NpukitError subclasses on failure."""
    from iree.compiler.api import Output, Session, Source

    from npukit.driver import iree_capi
    from npukit.driver.diagnostics import DiagnosticCollector
    from npukit.driver.phases import PhasedPipeline
    from npukit.errors import CompileError, TargetError
    from npukit.frontends.entry_signatures import EntrySignatures
    from npukit.passes.buffer_allocations import BufferAllocations
    from npukit.passes.dispatch_inventory import DispatchInventory
    from npukit.passes.fused_padding import FUSE_PADDING_FLAG, CheckFusedPadding
    from npukit.passes.module_naming import NameModule
    from npukit.passes.registry import passes_for
    from npukit.passes.short_export_names import ShortExportNames
    from npukit.passes.transient_packing import PackTransients
    from npukit.passes.unread_constants import DropUnreadConstants

    os.environ.update(job.environment)
    iree_capi.ensure_global_command_line()
    session = Session()
    try:
        session.set_flags(*job.flags)
    except ValueError as e:
        raise TargetError(f"IREE rejected the flags: {e}") from None

    signatures = EntrySignatures()
    inventory = DispatchInventory()
    allocations = BufferAllocations()
    mynpu = None
    if job.mynpu is not None:
        from npukit.mynpu.options import MynpuOptions
        from npukit.passes.mynpu_partition import MynpuTarget
        from npukit.passes.registry import is_inline_execution

        mynpu = MynpuTarget(MynpuOptions.from_json(job.mynpu), inline=is_inline_execution(job.flags))
    kernels = None
    if job.tuned_cpu is not None:
        from npukit.cpu.kernel_choice import layer_choices
        from npukit.passes.layer_kernel_calls import LayerKernelCalls

        kernels = LayerKernelCalls([Path(p) for p in job.tuned_cpu["objects"]], layer_choices(job.tuned_cpu),
                                   flash_budget=job.tuned_cpu.get("flash_budget"))
    unread_constants, transients = DropUnreadConstants(), PackTransients()
    hooks = passes_for(job.flags, job.output_format, mynpu, kernels, unread_constants, transients)
    hooks["start"].append(NameModule(job.module_name))
    recognising = job.recognised_layers is not None
    if recognising:
        if mynpu is None:
            raise TargetError("recognising the NPU's layers needs a mynpu target")
        hooks["stream"] = [mynpu.partition]  # the CPU code is never generated
    stream = hooks.setdefault("stream", [])
    if FUSE_PADDING_FLAG in job.flags and not recognising:
        stream.append(CheckFusedPadding())  # after the passes that take padded layers from IREE's code
    first = 1 if stream and stream[0] is transients else 0  # the allocations are listed once the slabs are packed
    stream.insert(first, inventory)
    stream.insert(first + 1, allocations)
    short_names = None
    if job.output_format == "vm-c" and not recognising:
        # Last: the passes before it key their records by IREE's names.
        short_names = ShortExportNames()
        stream.append(short_names)
        if mynpu is not None:
            mynpu.export_names = short_names.short
    hooks.setdefault("vm", []).append(allocations.check_allocate_calls)
    # Reaching 'stream' is reported before its passes run: a failure from here on may be a tuned pass's.
    hooks["stream"].insert(0, lambda _m: progress("", "stream"))
    if job.read_signatures:
        hooks["start"].append(signatures)
    phases = PROGRESS_PHASES[:PROGRESS_PHASES.index("stream") + 1] if recognising else PROGRESS_PHASES[:-1]
    for phase in phases:
        hooks.setdefault(phase, []).append(lambda _m, p=phase: progress(f"phase '{p}' done", p))
    collector = DiagnosticCollector()
    source = Source.open_file(session, job.input_path)
    inv = PhasedPipeline(session, hooks=hooks, collector=collector).run(
        source, compile_to="stream" if recognising else "end")
    return_copies: dict = {}
    if recognising:
        from npukit.mynpu.recognised_model import RecognisedModel

        RecognisedModel(job.module_name, mynpu.recognised).save(Path(job.recognised_layers))
    else:
        if job.output_format == "vm-c":
            from npukit.passes.vm_branch_ref_copies import copy_repeated_branch_refs
            from npukit.passes.vm_return_copies import vm_return_copies

            # Read from (and branches corrected in) the VM module the emitter is
            # about to convert in place (exporting takes it from the invocation;
            # it is lent back).
            module = inv.export_module()
            return_copies = {f: [{str(k): v for k, v in r.items()} for r in returns]
                             for f, returns in vm_return_copies(module).items()}
            copy_repeated_branch_refs(module)
            inv.import_module(module)
        try:
            with Output.open_file(job.output_path) as out:
                if job.output_format == "vm-c":
                    iree_capi.output_vm_c_source(inv, out)
                else:
                    inv.output_vm_bytecode(out)
                out.keep()
        except ValueError as e:
            raise CompileError(f"writing the output failed: {e}", collector.texts()) from None
    return JobResult(
        ok=True,
        diagnostics=collector.texts(),
        warnings=[d.message.strip() for d in collector.warnings],
        entry_points=[e.to_json() for e in signatures.entry_points] if job.read_signatures else [],
        dispatches=[d.to_json() for d in inventory.dispatches],
        mynpu_report=mynpu.report if mynpu is not None else None,
        cpu_kernels=kernels.summary() if kernels is not None else None,
        kernel_constants=kernels.budget.to_json() if kernels is not None and kernels.budget else None,
        vm_return_copies=return_copies,
        buffer_allocations=allocations.program.to_json(),
        constant_pools=unread_constants.summary(),
        transient_slabs=transients.summary(),
        export_names=dict(short_names.long) if short_names is not None else {},
        library_leaves_out=mynpu.library_leaves_out() if mynpu is not None and not recognising else [],
    )


def entry_points_from_result(result: JobResult) -> list[EntryPoint]:
    return [EntryPoint.from_json(e) for e in result.entry_points]
