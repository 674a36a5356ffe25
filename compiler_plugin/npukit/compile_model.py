"""``npukit.compile``: a model file in, an artifact directory with a manifest out."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from npukit import __version__
from npukit.artifact import CompileResult
from npukit.errors import CompileError, CompileTimeout, NpukitError, TargetError
from npukit.frontends.imported_model import ImportedModel
from npukit.frontends.signature import EntryPoint
from npukit.manifest import SCHEMA_VERSION, describe_file, write_manifest
from npukit.targets.cpu_pipeline import DEFAULT_CPU_PIPELINE, CpuPipeline
from npukit.targets.output_modes import ExecutionModel, OutputMode
from npukit.targets.target_spec import Target

if TYPE_CHECKING:
    from npukit.codegen.memory_plan import MemoryPlan
    from npukit.stack.executables_stack import DispatchStack
    from npukit.cpu.kernel_choice import KernelChoice
    from npukit.cpu.target_kernels import TargetKernels
    from npukit.driver.compile_job import JobResult
    from npukit.driver.worker_process import LogSink
    from npukit.mynpu.options import MynpuOptions

Progress = Callable[[str], None]

_ERRORS = {cls.__name__: cls for cls in (CompileError, TargetError)}


def _default_execution_model(target: Target, mode: OutputMode) -> ExecutionModel:
    if mode is OutputMode.VMFB:
        return ExecutionModel.ASYNC
    if mode is OutputMode.STATIC and target.npu is not None:
        # The mynpu variant must be the device's only target for its CPU code to be the static library.
        return ExecutionModel.INLINE_DYNAMIC
    return ExecutionModel.parse(target.cpu.default_execution_model)


def _run_worker(job, work_dir: Path, say: Progress, deadline: float, time_limit: float, log: "LogSink | None"):
    """Runs ``job`` in a worker process until ``deadline`` (time.monotonic(); ``time_limit`` is the whole
    compile's, for the message); returns its JobResult or raises."""
    from npukit.driver.compile_job import JobResult, write_json
    from npukit.driver.crash_report import describe_crash
    from npukit.driver.worker_process import run_worker
    from npukit.frontends.limits import env_variable

    job_path, result_path = work_dir / "job.json", work_dir / "result.json"
    write_json(job_path, job.to_json())
    outcome = run_worker("npukit.driver.compile_worker", [str(job_path), str(result_path)], work_dir,
                         max(deadline - time.monotonic(), 0.0), on_progress=say, log=log)
    phase = outcome.last_phase
    if outcome.timed_out:
        where = f"after phase '{phase}'" if phase else "before phase 'input'"
        raise CompileTimeout(f"IREE did not finish within the time limit of {time_limit:g} s (stopped {where}); "
                             f"set {env_variable('seconds')} or --time-limit to allow longer")
    if outcome.returncode < 0 or not result_path.exists():
        tail = [ln for ln in outcome.stderr.strip().splitlines() if ln.strip()][-12:]
        raise CompileError(describe_crash(outcome.returncode, outcome.stderr, phase) if outcome.returncode < 0 else
                           f"the compile worker failed (exit status {outcome.returncode})", tail, phase)
    result = JobResult.from_json(json.loads(result_path.read_text()))
    job_path.unlink()
    result_path.unlink()
    if not result.ok:
        cls = _ERRORS.get(result.error_kind, CompileError)
        if cls is CompileError:
            raise CompileError(result.error, result.diagnostics, phase)
        raise cls(result.error)
    return result


def _tuned_passes_ran(error: CompileError) -> bool:
    """Whether the module got as far as the tuned pipeline's passes (at phase
    'stream'); an earlier failure would fail the stock pipeline the same way."""
    from npukit.driver.compile_job import PROGRESS_PHASES

    early = PROGRESS_PHASES[:PROGRESS_PHASES.index("stream")]
    return error.phase is not None and error.phase not in early


def _kernels_refused(cpu_kernels: dict[str, dict]) -> list[str]:
    """A warning when IREE's data tiling kept every layer from the kernels."""
    reasons = [entry.get("reason", "") for entry in cpu_kernels.values()]
    if any("operation" in entry for entry in cpu_kernels.values()) or not any("data-tiling" in r for r in reasons):
        return []
    note = ("the tuned CPU pipeline's kernels took no layer: IREE's data tiling (--iree-opt-data-tiling) packed "
            "the tensors in its own layout; leave that flag out to use them")
    return [note]


def _explain_failure(error: CompileError, imported: ImportedModel) -> CompileError:
    """Names the model's file and the model's operator the error is about."""
    from npukit.frontends.model_locations import explain_compile_error

    from npukit.frontends.input_shapes import dynamic_inputs_hint

    cls = type(error)
    hint = "" if isinstance(error, CompileTimeout) else dynamic_inputs_hint(imported.entry_points)
    explained = cls(explain_compile_error(imported, str(error), error.diagnostics) + hint)
    explained.diagnostics, explained.phase = error.diagnostics, error.phase
    return explained


@dataclass
class _Request:
    """A compile's arguments, checked: what every step reads."""

    model: Path
    target: Target
    mode: OutputMode
    execution_model: ExecutionModel
    pipeline: CpuPipeline
    mynpu: "MynpuOptions | None"
    module_name: str
    out: Path
    iree_flags: tuple[str, ...]
    seconds: float
    deadline: float
    started: float
    flash_budget: int | None = None
    input_shapes: "dict[str | None, tuple[int, ...]] | None" = None
    input_values: "dict[str, tuple[float, ...]] | None" = None

    @classmethod
    def check(cls, model, target, output, out_dir, name, execution_model, iree_flags, mynpu, cpu_pipeline,
              time_limit, flash_budget=None, input_shapes=None, input_values=None) -> "_Request":
        from npukit.frontends.input_shapes import input_shapes_from
        from npukit.frontends.input_values import input_values_from
        from npukit.frontends.limits import limits
        from npukit.frontends.model_format import detect_format
        from npukit.passes.module_naming import c_identifier

        started = time.monotonic()
        tgt = Target.parse(target)
        if mynpu is not None and tgt.npu is None:
            raise TargetError(f"mynpu options were given but the target '{tgt.name}' has no NPU "
                              f"(use 'mynpu+{tgt.name}')")
        if tgt.npu is not None and mynpu is None:
            from npukit.mynpu.options import MynpuOptions

            mynpu = MynpuOptions()
        mode = OutputMode.parse(output)
        em = ExecutionModel.parse(execution_model) if execution_model else _default_execution_model(tgt, mode)
        if mode is OutputMode.STATIC and tgt.npu is not None and em is not ExecutionModel.INLINE_DYNAMIC:
            raise TargetError(f"a static library for '{tgt.name}' needs the inline-dynamic execution model (the "
                              "mynpu executable is the only one and its CPU code is the library); use "
                              "--execution-model inline-dynamic, or --mode embedded for the async model")
        for flag in iree_flags:
            if not isinstance(flag, str) or not flag.startswith("-"):
                raise TargetError(f"iree_flags must be iree-compile flags such as '--iree-...=value', got {flag!r}")
        seconds = float(time_limit) if time_limit is not None else limits().seconds
        if not seconds > 0:
            raise TargetError(f"the time limit must be a positive number of seconds, got {time_limit!r}")
        pipeline = CpuPipeline.parse(cpu_pipeline)
        if flash_budget is not None:
            if isinstance(flash_budget, bool) or not isinstance(flash_budget, int) or flash_budget < 0:
                raise TargetError(f"the flash budget must be a number of bytes, got {flash_budget!r}")
            if pipeline is not CpuPipeline.TUNED:
                raise TargetError("a flash budget sets the tuned CPU pipeline's weight forms; the stock pipeline "
                                  "has none (leave --flash-budget unset or use --cpu-pipeline tuned)")
        model_path = Path(model)
        detect_format(model_path)  # a missing or unrecognised file is refused before anything is written
        module_name = c_identifier(name or model_path.stem)
        out = Path(out_dir) if out_dir is not None else Path(f"{module_name}-{tgt.name}-{mode.value}")
        return cls(model_path, tgt, mode, em, pipeline, mynpu, module_name, out, tuple(iree_flags), seconds,
                   started + seconds, started, flash_budget, input_shapes_from(input_shapes),
                   input_values_from(input_values))


def compile(
    model: "str | os.PathLike[str]",
    target: "str | Target" = "host",
    output: "str | OutputMode" = "vmfb",
    out_dir: "str | os.PathLike[str] | None" = None,
    *,
    name: str | None = None,
    execution_model: "str | ExecutionModel | None" = None,
    iree_flags: Sequence[str] = (),
    progress: Progress | None = None,
    mynpu: "MynpuOptions | None" = None,
    cpu_pipeline: "str | CpuPipeline" = DEFAULT_CPU_PIPELINE,
    tuning_db: "str | os.PathLike[str] | None" = None,
    kernel_choices: "dict[str, KernelChoice] | None" = None,
    time_limit: float | None = None,
    log: "LogSink | None" = None,
    flash_budget: int | None = None,
    input_shapes: "Mapping[str | None, Sequence[int]] | Sequence[str] | None" = None,
    input_values: "Mapping[str, object] | Sequence[str] | None" = None,
) -> CompileResult:
    """Compiles ``model`` (.onnx, .tflite, .mlir, .mlirbc) for ``target``.

    ``output`` is ``vmfb`` (runs on IREE's stock runtime), ``static`` (vm-c
    module plus a static library) or ``embedded`` (vm-c module with embedded
    ELF executables). The files and ``<name>.manifest.json`` go to ``out_dir``
    (default ``./<name>-<target>-<output>``); nothing is written if the compile
    fails. ``iree_flags`` are stock iree-compile flags added last.

    For ``mynpu`` targets, ``mynpu`` (npukit.mynpu.options.MynpuOptions) sets
    the NPU's hardware configuration; the placement report is the manifest's
    ``mynpu`` entry (and written to ``mynpu.report`` when that is set).

    ``cpu_pipeline`` is ``tuned`` (quantized layers call npukit's int8
    kernels, TFLite's integer arithmetic throughout) or ``stock`` (IREE's own
    CPU code); the manifest's ``cpu_kernels`` says which dispatches the
    kernels run, how, and why the others do not. How each layer runs comes
    from the tuning database (``tuning_db``, default
    npukit.cpu.tuning_database.default_path(); written by ``npukit tune``),
    then ``kernel_choices`` (layer key -> npukit.cpu.kernel_choice.KernelChoice),
    then the preset's default (int8 weights: one copy of each). ``flash_budget``
    (bytes for the layer kernels' constants) lets DSP cores widen the weights
    of the layers that gain most to int16 while the total fits
    (npukit.cpu.flash_budget); the manifest's ``kernel_constants`` shows the
    outcome, ``constant_pools`` what is left of IREE's constant pool.

    ``input_shapes`` (input name -> shape, the name None for a model's only
    input; or ``--input-shape`` texts such as ``x=1x3x320x320``) fix an ONNX
    model's unknown input dimensions, so that the model is compiled for that
    shape instead of with dynamic shapes (npukit.frontends.input_shapes).
    ``input_values`` (input name -> a number or the values in its shape; or
    ``--input-value`` texts such as ``sr=16000``) make ONNX inputs constants
    of the model, so that what depends on them (an If on a sample rate) is
    settled at import (npukit.frontends.input_values); the compiled model
    has no such input.

    The import and IREE's compile run in child processes: a crash in either
    is an error here, and ``time_limit`` seconds (default: the limit in
    npukit.frontends.limits, 30 minutes) stop a compile that runs too long
    (CompileTimeout). ``log`` receives what IREE and the libraries print
    (none of it reaches this process's stderr).
    """
    from npukit.driver.compile_plan import OutputPaths
    from npukit.frontends.isolated_import import import_isolated
    from npukit.staging import StagedOutput

    say = progress or (lambda _msg: None)
    request = _Request.check(model, target, output, out_dir, name, execution_model, iree_flags, mynpu,
                             cpu_pipeline, time_limit, flash_budget, input_shapes, input_values)
    with StagedOutput(request.out) as staged:
        work = staged.directory / ".work"
        work.mkdir()
        paths = OutputPaths(staged.directory, request.module_name)
        say(f"importing {request.model}")
        imported = import_isolated(request.model, name, work, request.seconds, log, request.input_shapes,
                                   request.input_values)
        plan, job = _compile_job(request, imported, paths, work)
        say(f"compiling {imported.name} for {request.target.name} ({request.mode.value}, "
            f"{request.execution_model.value})")
        compiled = _run_iree(request, job, imported, work, say, log, tuning_db, kernel_choices)
        files = _output_files(request, paths, work, compiled, imported)
        _remove_work_directory(work)
        entry_points = imported.entry_points or [EntryPoint.from_json(e) for e in compiled.result.entry_points]
        notes = _notes(imported, compiled, say)
        memory = _memory_plan(request, compiled, entry_points)
        stack = _dispatch_stack(request, files, compiled)
        files.update(_model_wrapper(request, paths, entry_points, files, notes, memory, stack))
        manifest = _manifest(request, imported, plan, compiled, entry_points, files, paths, notes)
        manifest["memory_plan"] = memory.to_json() if not isinstance(memory, str) else {"refused": memory}
        if stack is not None:
            manifest["stack"] = stack.to_json()
        manifest["activations"] = _activations(request.model)
        if compiled.library_tables_kept:  # a fact of the build, not a warning: IREE's tables are correct
            manifest["library_tables_kept"] = compiled.library_tables_kept
        write_manifest(paths.manifest, manifest)
        if compiled.result.mynpu_report is not None:
            publish_mynpu_report(compiled.result.mynpu_report, request.mynpu)
        say(f"writing {request.out}")
        final_dir = staged.commit()
    return CompileResult(directory=final_dir, manifest_path=final_dir / paths.manifest.name, manifest=manifest)


def _compile_job(request: _Request, imported: ImportedModel, paths, work: Path):
    """The IREE flags for the target and the job a compile worker runs."""
    from npukit.driver.compile_job import CompileJob
    from npukit.driver.compile_plan import plan_for_target

    plan = plan_for_target(request.target, request.mode, request.execution_model, paths,
                           [*imported.iree_flags, *request.iree_flags])
    if imported.mlir is not None:
        input_path = work / "input.mlirbc"
        input_path.write_bytes(imported.mlir)
    else:
        input_path = imported.path.resolve()
    job = CompileJob(
        input_path=str(input_path),
        flags=plan.flags,
        module_name=request.module_name,
        output_format="vm-bytecode" if request.mode is OutputMode.VMFB else "vm-c",
        output_path=str(work / ("output.vmfb" if request.mode is OutputMode.VMFB else "output.c")),
        environment=plan.environment,
        read_signatures=imported.entry_points is None,
        mynpu=request.mynpu.to_json() if request.mynpu is not None else None,
    )
    return plan, job


@dataclass
class _Compiled:
    """What IREE's compile gave: the worker's result, the pipeline it ran
    (the stock one after a tuned compile failed: ``fallback`` says why) and,
    with the tuned pipeline, the target's kernels."""

    result: "JobResult"
    pipeline: CpuPipeline
    kernels: "TargetKernels | None"
    fallback: str | None = None
    flags: list[str] | None = None  # the IREE flags the compile ran with, where npukit added some
    library_tables_kept: str | None = None  # why a static library keeps IREE's tables (npukit.cpu.library_tables)
    # Tuning database entries left out (measured with other kernel code: npukit.cpu.tuning_database).
    tuning_notes: list[str] = field(default_factory=list)


def _run_iree(request: _Request, job, imported: ImportedModel, work: Path, say: Progress, log,
              tuning_db, kernel_choices) -> _Compiled:
    """IREE's compile in a worker process: with the tuned pipeline first when
    asked, and with the stock one if that fails after the tuned passes ran."""
    from npukit.cpu.kernel_choice import tuned_cpu_job
    from npukit.cpu.target_kernels import TargetKernels
    from npukit.cpu.tuning_database import TuningDatabase

    fallback = None
    stock_flags = list(job.flags)
    try:
        if request.pipeline is CpuPipeline.TUNED:
            try:
                kernels = TargetKernels.build(request.target.cpu)  # once: linked by the executables or merged below
                chosen, tuning_notes = TuningDatabase(tuning_db).choices_with_notes(request.target.cpu)
                for note in tuning_notes:
                    say(note)
                chosen.update(kernel_choices or {})
                objects = [] if request.mode is OutputMode.STATIC else list(kernels.link_objects)
                job.tuned_cpu = tuned_cpu_job(request.target.cpu, objects, chosen, request.flash_budget)
                result = _run_tuned(request, job, work, say, log)
                return _Compiled(result, CpuPipeline.TUNED, kernels, flags=list(job.flags), tuning_notes=tuning_notes)
            except NpukitError as e:
                if isinstance(e, CompileTimeout) or (isinstance(e, CompileError) and not _tuned_passes_ran(e)):
                    raise
                if not isinstance(e, CompileError) and job.tuned_cpu is not None:
                    raise  # refused flags or options: the stock pipeline would refuse them too
                # The safer configuration: IREE's own CPU code for every dispatch.
                fallback = (f"the tuned CPU pipeline failed ({str(e).splitlines()[0]}); compiled with the "
                            "stock pipeline instead")
                say(fallback)
                job.tuned_cpu = None
                job.flags = stock_flags
        return _Compiled(_run_worker(job, work, say, request.deadline, request.seconds, log), CpuPipeline.STOCK,
                         None, fallback)
    except CompileError as e:
        raise _explain_failure(e, imported) from None


def _run_tuned(request: _Request, job, work: Path, say: Progress, log) -> "JobResult":
    """The tuned compile, with convolutions' input padding inside their
    dispatches (npukit.passes.fused_padding) unless the caller's flags say
    otherwise; a padded dispatch left to IREE's code repeats the compile
    with IREE's padded copies."""
    from npukit.driver.compile_plan import flag_name
    from npukit.passes.fused_padding import FUSE_PADDING_FLAG, PADDING_LEFT

    stock_flags = list(job.flags)
    if any(flag_name(f) == flag_name(FUSE_PADDING_FLAG) for f in stock_flags):
        return _run_worker(job, work, say, request.deadline, request.seconds, log)
    job.flags = [*stock_flags, FUSE_PADDING_FLAG]
    try:
        return _run_worker(job, work, say, request.deadline, request.seconds, log)
    except CompileError as e:
        if PADDING_LEFT not in str(e):
            raise
        say("a padded layer is left to IREE's code: compiling with IREE's padded copies")
        job.flags = stock_flags
        return _run_worker(job, work, say, request.deadline, request.seconds, log)


def _output_files(request: _Request, paths, work: Path, compiled: _Compiled,
                  imported: ImportedModel) -> dict[str, Path]:
    """The artifact's files by role, moved into place (the VM module as C
    source, the static library with the kernels merged in, the embedded ELFs)."""
    from npukit.vm_c_module import write_vm_c_module

    result = compiled.result
    files: dict[str, Path] = {}
    if request.mode is OutputMode.VMFB:
        (work / "output.vmfb").replace(paths.vmfb)
        files["vmfb"] = paths.vmfb
    else:
        copies = {f: [{int(k): v for k, v in r.items()} for r in returns]
                  for f, returns in result.vm_return_copies.items()}
        write_vm_c_module((work / "output.c").read_text(), paths.vm_module_c, paths.vm_module_h, copies)
        files["vm_module_c"] = paths.vm_module_c
        files["vm_module_h"] = paths.vm_module_h
    # A program without dispatches (all host-side work) has no executables.
    has_executables = bool(result.dispatches) or paths.static_library.exists()
    if request.mode is OutputMode.STATIC and has_executables:
        if compiled.kernels is not None:
            kept = compiled.kernels.link_into(paths.static_library, result.library_leaves_out)
            if kept:
                compiled.library_tables_kept = f"the static library keeps IREE's executable-library tables: {kept}"
        files["static_library"] = paths.static_library
        files["static_library_h"] = paths.static_library_h
    if request.mode is OutputMode.EMBEDDED:
        elves = sorted(paths.executables_dir.glob("*.so"))
        if not elves and has_executables:
            raise CompileError(f"{imported.path}: IREE produced no embedded executable", result.diagnostics)
        for i, elf in enumerate(elves):
            files["embedded_executable" if i == 0 else f"embedded_executable_{i}"] = elf
    missing = [str(p) for p in files.values() if not p.exists()]
    if missing:
        raise CompileError(f"{imported.path}: IREE did not write {', '.join(missing)}", result.diagnostics)
    return files


def _remove_work_directory(work: Path) -> None:
    for leftover in work.iterdir():
        leftover.unlink()
    work.rmdir()


def _notes(imported: ImportedModel, compiled: _Compiled, say: Progress) -> list[str]:
    """The manifest's warnings besides IREE's: the import's, a fallback, kernels kept out by data tiling."""
    notes = list(imported.notes) + ([compiled.fallback] if compiled.fallback else []) + compiled.tuning_notes
    if compiled.pipeline is CpuPipeline.TUNED and compiled.result.cpu_kernels:
        for note in _kernels_refused(compiled.result.cpu_kernels):
            say(note)
            notes.append(note)
    return notes


def _memory_plan(request: _Request, compiled: _Compiled, entry_points) -> "MemoryPlan | str":
    """The compile-time memory plan of a vm-c module's invocations, or why there is none."""
    from npukit.codegen.memory_plan import plan_memory
    from npukit.codegen.model_wrapper import tensor_bytes

    if not request.mode.is_vm_c:
        return "a .vmfb runs on IREE's runtime, which places its own buffers"
    if request.execution_model is not ExecutionModel.INLINE_DYNAMIC:
        return "plans cover the inline-dynamic execution model"
    program = compiled.result.buffer_allocations or {"refused": "no allocations were listed"}
    if program["refused"]:
        return program["refused"]
    if not entry_points or entry_points[0].name != program["function"]:
        return f"the planned function {program['function']} is not the model's entry point"
    try:
        for t in entry_points[0].inputs:
            tensor_bytes(t)  # refuses dynamic shapes
        if not program["allocations"]:
            return "the function allocates no buffers"
        # Generated models bind their inputs where the caller has them (no copies to plan).
        return plan_memory(program["function"], [],
                           [(a["bytes"], a["lifetime"]) for a in program["allocations"]])
    except ValueError as e:
        return str(e)


def _activations(model: Path) -> dict | None:
    """The model's live activations per operator and their lower bound
    (frontends.activation_liveness); None for MLIR, the reason when the
    model's graph cannot be followed."""
    from npukit.frontends.activation_liveness import activation_liveness

    try:
        liveness = activation_liveness(model)
    except Exception as e:  # a model IREE compiled but this reader cannot follow: the figure is left out
        return {"refused": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
    return liveness.to_json() if liveness is not None else None


def _dispatch_stack(request: _Request, files: dict[str, Path], compiled: _Compiled) -> "DispatchStack | None":
    """The stack one dispatch of a board's static library takes (None for
    other artifacts)."""
    preset = request.target.cpu
    if "static_library" not in files or preset.toolchain is None:
        return None
    from npukit.codegen.model_wrapper import static_library_queries
    from npukit.cpu.archive_build import gcc_for
    from npukit.stack.executables_stack import dispatch_stack

    from npukit.errors import ToolchainError
    from npukit.stack.executables_stack import DispatchStack

    queries = static_library_queries(files["static_library_h"])
    tc = preset.toolchain
    link_flags = [*tc.cflags, *tc.libc_flags, *(["--specs=nano.specs"] if tc.gcc.startswith("arm") else [])]
    kernels = {"cpu_kernels": compiled.result.cpu_kernels} if compiled.result.cpu_kernels else None
    try:
        gcc = gcc_for(preset)
    except ToolchainError as e:  # a stock compile needs no C compiler; the bound then waits for one
        return DispatchStack(None, None, str(e))
    stack = dispatch_stack(files["static_library"], queries[0], gcc, link_flags, kernels)
    if stack.deepest is not None:  # named in the reports as IREE names it
        stack = replace(stack, deepest=compiled.result.export_names.get(stack.deepest, stack.deepest))
    return stack


def _model_wrapper(request: _Request, paths, entry_points, files: dict[str, Path],
                   notes: list[str], memory: "MemoryPlan | str",
                   stack: "DispatchStack | None" = None) -> dict[str, Path]:
    """The C wrapper of a vm-c module's first entry point (none for a .vmfb)."""
    if not request.mode.is_vm_c or not entry_points:
        return {}
    from npukit.codegen.model_wrapper import write_model_wrapper

    try:
        header, source = write_model_wrapper(
            paths.directory, request.module_name, entry_points[0], files.get("static_library_h"),
            embedded=request.mode is OutputMode.EMBEDDED,
            mynpu_sram_bytes=request.mynpu.sram_kib * 1024 if request.mynpu is not None else None,
            memory_plan=memory if not isinstance(memory, str) else None,
            dispatch_stack=stack,
        )
    except ValueError as e:
        notes.append(f"no C model wrapper: {e}")
        return {}
    return {"model_wrapper_h": header, "model_wrapper_c": source}


def _manifest(request: _Request, imported: ImportedModel, plan, compiled: _Compiled, entry_points,
              files: dict[str, Path], paths, notes: list[str]) -> dict:
    result = compiled.result
    return {
        "schema": SCHEMA_VERSION,
        "npukit_version": __version__,
        "iree_version": _iree_version(),
        "name": request.module_name,
        "vm_module": request.module_name,
        "model": {"path": str(request.model.resolve()), "format": imported.format.value},
        "target": request.target.to_json(),
        "mode": request.mode.value,
        "execution_model": request.execution_model.value,
        "entry_points": [e.to_json() for e in entry_points],
        "files": {role: describe_file(p, paths.directory) for role, p in files.items()},
        "dispatches": result.dispatches,
        # vm-c output: each export's name in the generated code (short, what the
        # firmware holds) -> IREE's name, which the dispatches above and every
        # report use (passes.short_export_names; npukit.manifest.long_export_names).
        "export_names": result.export_names,
        # Multiply-accumulates of one inference (contractions of all dispatches, times their calls).
        "macs": sum(d.get("macs", 0) * d.get("calls", 1) for d in result.dispatches),
        "iree_flags": plan.flags if compiled.flags is None else compiled.flags,
        "mynpu": result.mynpu_report,
        "cpu_pipeline": compiled.pipeline.value,
        "cpu_kernels": result.cpu_kernels,
        # IREE's constant pools once the replaced dispatches' constants are dropped (passes.unread_constants).
        "constant_pools": result.constant_pools,
        # Inline execution: IREE's transient slabs packed in program order (passes.transient_packing).
        "transient_slabs": result.transient_slabs,
        # The layer kernels' blocks: bytes, the budget, how many layers have int16 weights (cpu.flash_budget).
        "kernel_constants": result.kernel_constants,
        "compile_seconds": round(time.monotonic() - request.started, 3),
        "warnings": [w.splitlines()[0] for w in result.warnings] + notes,
    }


def publish_mynpu_report(report: dict, options) -> None:
    """Writes the report to ``options.report`` and lists CPU dispatches on stderr when asked."""
    from npukit.mynpu.report import cpu_operations_text

    if options.report:
        path = Path(options.report)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(report, indent=2) + "\n")
        tmp.replace(path)
    if options.show_cpu_operations:
        print(cpu_operations_text(report), file=sys.stderr)


def _iree_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("iree-base-compiler")
    except PackageNotFoundError:
        return "unknown"


__all__ = ["compile", "NpukitError"]
