"""``npukit.compile``: a model file in, an artifact directory with a manifest out."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from npukit import __version__
from npukit.artifact import CompileResult
from npukit.errors import CompileError, CompileTimeout, NpukitError, TargetError
from npukit.frontends.imported_model import ImportedModel
from npukit.manifest import SCHEMA_VERSION, describe_file, write_manifest
from npukit.targets.cpu_pipeline import DEFAULT_CPU_PIPELINE, CpuPipeline
from npukit.targets.output_modes import ExecutionModel, OutputMode
from npukit.targets.target_spec import Target

if TYPE_CHECKING:
    from npukit.cpu.kernel_choice import KernelChoice
    from npukit.driver.worker_process import LogSink
    from npukit.mynpu.options import MynpuOptions

Progress = Callable[[str], None]

_ERRORS = {cls.__name__: cls for cls in (CompileError, TargetError)}


def _default_execution_model(target: Target, mode: OutputMode) -> ExecutionModel:
    if mode is OutputMode.VMFB:
        return ExecutionModel.ASYNC
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

    cls = type(error)
    explained = cls(explain_compile_error(imported, str(error), error.diagnostics))
    explained.diagnostics, explained.phase = error.diagnostics, error.phase
    return explained


def _tuned_cpu(target: Target, mode: OutputMode, tuning_db, kernel_choices) -> dict:
    from npukit.cpu.kernel_choice import tuned_cpu_job
    from npukit.cpu.layer_kernels import kernel_link_objects
    from npukit.cpu.tuning_database import TuningDatabase

    chosen = TuningDatabase(tuning_db).choices(target.cpu)
    chosen.update(kernel_choices or {})
    objects = [] if mode is OutputMode.STATIC else kernel_link_objects(target.cpu)
    return tuned_cpu_job(target.cpu, objects, chosen)


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
    then the preset's default.

    The import and IREE's compile run in child processes: a crash in either
    is an error here, and ``time_limit`` seconds (default: the limit in
    npukit.frontends.limits, 30 minutes) stop a compile that runs too long
    (CompileTimeout). ``log`` receives what IREE and the libraries print
    (none of it reaches this process's stderr).
    """
    from npukit.driver.compile_job import CompileJob
    from npukit.driver.compile_plan import OutputPaths, plan_for_target
    from npukit.frontends.isolated_import import import_isolated
    from npukit.frontends.limits import limits
    from npukit.frontends.model_format import detect_format
    from npukit.frontends.signature import EntryPoint
    from npukit.passes.module_naming import c_identifier
    from npukit.staging import StagedOutput
    from npukit.vm_c_module import write_vm_c_module

    say = progress or (lambda _msg: None)
    started = time.monotonic()
    tgt = Target.parse(target)
    if mynpu is not None and tgt.npu is None:
        raise TargetError(f"mynpu options were given but the target '{tgt.name}' has no NPU (use 'mynpu+{tgt.name}')")
    if tgt.npu is not None:
        from npukit.mynpu.options import MynpuOptions

        mynpu = mynpu if mynpu is not None else MynpuOptions()
    mode = OutputMode.parse(output)
    pipeline = CpuPipeline.parse(cpu_pipeline)
    model_em = ExecutionModel.parse(execution_model) if execution_model else _default_execution_model(tgt, mode)
    for flag in iree_flags:
        if not isinstance(flag, str) or not flag.startswith("-"):
            raise TargetError(f"iree_flags must be iree-compile flags such as '--iree-...=value', got {flag!r}")

    seconds = float(time_limit) if time_limit is not None else limits().seconds
    if not seconds > 0:
        raise TargetError(f"the time limit must be a positive number of seconds, got {time_limit!r}")
    deadline = started + seconds
    model_path = Path(model)
    detect_format(model_path)  # a missing or unrecognised file is refused before anything is written
    module_name = c_identifier(name or model_path.stem)
    out = Path(out_dir) if out_dir is not None else Path(f"{module_name}-{tgt.name}-{mode.value}")

    with StagedOutput(out) as staged:
        work = staged.directory / ".work"
        work.mkdir()
        say(f"importing {model}")
        imported = import_isolated(model_path, name, work, seconds, log)
        paths = OutputPaths(staged.directory, module_name)
        plan = plan_for_target(tgt, mode, model_em, paths, [*imported.iree_flags, *iree_flags])
        if imported.mlir is not None:
            input_path = work / "input.mlirbc"
            input_path.write_bytes(imported.mlir)
        else:
            input_path = imported.path.resolve()
        raw_output = work / ("output.vmfb" if mode is OutputMode.VMFB else "output.c")
        job = CompileJob(
            input_path=str(input_path),
            flags=plan.flags,
            module_name=module_name,
            output_format="vm-bytecode" if mode is OutputMode.VMFB else "vm-c",
            output_path=str(raw_output),
            environment=plan.environment,
            read_signatures=imported.entry_points is None,
            mynpu=mynpu.to_json() if mynpu is not None else None,
        )
        say(f"compiling {imported.name} for {tgt.name} ({mode.value}, {model_em.value})")
        fallback = None
        try:
            if pipeline is CpuPipeline.TUNED:
                try:
                    job.tuned_cpu = _tuned_cpu(tgt, mode, tuning_db, kernel_choices)
                    result = _run_worker(job, work, say, deadline, seconds, log)
                except NpukitError as e:
                    if isinstance(e, CompileTimeout) or (isinstance(e, CompileError) and not _tuned_passes_ran(e)):
                        raise
                    if not isinstance(e, CompileError) and job.tuned_cpu is not None:
                        raise  # refused flags or options: the stock pipeline would refuse them too
                    # The safer configuration: IREE's own CPU code for every dispatch.
                    fallback = (f"the tuned CPU pipeline failed ({str(e).splitlines()[0]}); compiled with the "
                                "stock pipeline instead")
                    say(fallback)
                    pipeline, job.tuned_cpu = CpuPipeline.STOCK, None
            if pipeline is CpuPipeline.STOCK:
                result = _run_worker(job, work, say, deadline, seconds, log)
        except CompileError as e:
            raise _explain_failure(e, imported) from None

        files: dict[str, Path] = {}
        if mode is OutputMode.VMFB:
            raw_output.replace(paths.vmfb)
            files["vmfb"] = paths.vmfb
        else:
            write_vm_c_module(raw_output.read_text(), paths.vm_module_c, paths.vm_module_h)
            files["vm_module_c"] = paths.vm_module_c
            files["vm_module_h"] = paths.vm_module_h
        # A program without dispatches (all host-side work) has no executables.
        has_executables = bool(result.dispatches) or paths.static_library.exists()
        if mode is OutputMode.STATIC and has_executables:
            if pipeline is CpuPipeline.TUNED:
                from npukit.cpu.static_library_link import link_kernels_into

                link_kernels_into(paths.static_library, tgt.cpu)
            files["static_library"] = paths.static_library
            files["static_library_h"] = paths.static_library_h
        if mode is OutputMode.EMBEDDED:
            elves = sorted(paths.executables_dir.glob("*.so"))
            if not elves and has_executables:
                raise CompileError(f"{imported.path}: IREE produced no embedded executable", result.diagnostics)
            for i, elf in enumerate(elves):
                files["embedded_executable" if i == 0 else f"embedded_executable_{i}"] = elf
        missing = [str(p) for p in files.values() if not p.exists()]
        if missing:
            raise CompileError(f"{imported.path}: IREE did not write {', '.join(missing)}", result.diagnostics)
        for leftover in work.iterdir():
            leftover.unlink()
        work.rmdir()

        entry_points = imported.entry_points or [EntryPoint.from_json(e) for e in result.entry_points]
        notes = list(imported.notes) + ([fallback] if fallback else [])
        if pipeline is CpuPipeline.TUNED and result.cpu_kernels:
            for note in _kernels_refused(result.cpu_kernels):
                say(note)
                notes.append(note)
        if mode.is_vm_c and entry_points:
            from npukit.codegen.model_wrapper import write_model_wrapper

            try:
                header, source = write_model_wrapper(
                    paths.directory, module_name, entry_points[0],
                    files.get("static_library_h"),
                    embedded=mode is OutputMode.EMBEDDED,
                    mynpu_sram_bytes=mynpu.sram_kib * 1024 if mynpu is not None else None,
                )
                files["model_wrapper_h"], files["model_wrapper_c"] = header, source
            except ValueError as e:
                notes.append(f"no C model wrapper: {e}")
        manifest = {
            "schema": SCHEMA_VERSION,
            "npukit_version": __version__,
            "iree_version": _iree_version(),
            "name": module_name,
            "vm_module": module_name,
            "model": {"path": str(Path(model).resolve()), "format": imported.format.value},
            "target": tgt.to_json(),
            "mode": mode.value,
            "execution_model": model_em.value,
            "entry_points": [e.to_json() for e in entry_points],
            "files": {role: describe_file(p, paths.directory) for role, p in files.items()},
            "dispatches": result.dispatches,
            # Multiply-accumulates of one inference (contractions of all dispatches, times their calls).
            "macs": sum(d.get("macs", 0) * d.get("calls", 1) for d in result.dispatches),
            "iree_flags": plan.flags,
            "mynpu": result.mynpu_report,
            "cpu_pipeline": pipeline.value,
            "cpu_kernels": result.cpu_kernels,
            "compile_seconds": round(time.monotonic() - started, 3),
            "warnings": [w.splitlines()[0] for w in result.warnings] + notes,
        }
        write_manifest(paths.manifest, manifest)
        if result.mynpu_report is not None:
            publish_mynpu_report(result.mynpu_report, mynpu)
        say(f"writing {out}")
        final_dir = staged.commit()
    return CompileResult(directory=final_dir, manifest_path=final_dir / paths.manifest.name, manifest=manifest)


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
