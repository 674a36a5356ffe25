"""``npukit.compile``: a model file in, an artifact directory with a manifest out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from npukit import __version__
from npukit.artifact import CompileResult
from npukit.errors import CompileError, NpukitError, TargetError
from npukit.frontends.imported_model import ImportedModel
from npukit.manifest import SCHEMA_VERSION, describe_file, write_manifest
from npukit.targets.cpu_pipeline import DEFAULT_CPU_PIPELINE, CpuPipeline
from npukit.targets.output_modes import ExecutionModel, OutputMode
from npukit.targets.target_spec import Target

if TYPE_CHECKING:
    from npukit.cpu.kernel_choice import KernelChoice
    from npukit.mynpu.options import MynpuOptions

Progress = Callable[[str], None]

_ERRORS = {cls.__name__: cls for cls in (CompileError, TargetError)}


def _default_execution_model(target: Target, mode: OutputMode) -> ExecutionModel:
    if mode is OutputMode.VMFB:
        return ExecutionModel.ASYNC
    return ExecutionModel.parse(target.cpu.default_execution_model)


def _run_worker(job, work_dir: Path, say: Progress):
    """Runs ``job`` in a worker process; returns its JobResult or raises."""
    from npukit.driver.compile_job import JobResult, write_json
    from npukit.driver.crash_report import describe_crash

    job_path, result_path = work_dir / "job.json", work_dir / "result.json"
    write_json(job_path, job.to_json())
    proc = subprocess.Popen(
        [sys.executable, "-m", "npukit.driver.compile_worker", str(job_path), str(result_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    last_phase = None
    assert proc.stdout is not None
    for line in proc.stdout:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("progress"):
            last_phase = record.get("phase")
            say(record["progress"])
    stderr = proc.stderr.read() if proc.stderr else ""
    rc = proc.wait()
    if rc < 0 or not result_path.exists():
        tail = [ln for ln in stderr.strip().splitlines() if ln.strip()][-12:]
        raise CompileError(describe_crash(rc, stderr, last_phase) if rc < 0 else
                           f"the compile worker failed (exit status {rc})", tail)
    result = JobResult.from_json(json.loads(result_path.read_text()))
    job_path.unlink()
    result_path.unlink()
    if not result.ok:
        cls = _ERRORS.get(result.error_kind, CompileError)
        if cls is CompileError:
            raise CompileError(result.error, result.diagnostics)
        raise cls(result.error)
    return result


def _kernels_refused(cpu_kernels: dict[str, dict]) -> list[str]:
    """A warning when IREE's data tiling kept every layer from the kernels."""
    reasons = [entry.get("reason", "") for entry in cpu_kernels.values()]
    if any("operation" in entry for entry in cpu_kernels.values()) or not any("data-tiling" in r for r in reasons):
        return []
    note = ("the tuned CPU pipeline's kernels took no layer: IREE's data tiling (--iree-opt-data-tiling) packed "
            "the tensors in its own layout; leave that flag out to use them")
    return [note]


def _explain_failure(error: CompileError, imported: ImportedModel) -> CompileError:
    """Names the model's file and, for ONNX models, the node that failed."""
    from npukit.frontends.onnx_nodes import describe_onnx_op

    message = f"{imported.path}: {error}"
    hint = describe_onnx_op(imported, "\n".join([str(error), *error.diagnostics]))
    if hint:
        message += f" ({hint})"
    elif "before phase 'input'" in str(error) and imported.onnx_nodes:
        kinds = sorted({t for t, _, _ in imported.onnx_nodes})
        if len(kinds) <= 12:
            message += f"; the model's ONNX operators: {', '.join(kinds)}"
    return CompileError(message, error.diagnostics)


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
    """
    from npukit.driver.compile_job import CompileJob
    from npukit.driver.compile_plan import OutputPaths, plan_for_target
    from npukit.frontends import import_model
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

    say(f"importing {model}")
    imported = import_model(Path(model), name)
    module_name = c_identifier(imported.name)
    out = Path(out_dir) if out_dir is not None else Path(f"{module_name}-{tgt.name}-{mode.value}")

    with StagedOutput(out) as staged:
        paths = OutputPaths(staged.directory, module_name)
        plan = plan_for_target(tgt, mode, model_em, paths, [*imported.iree_flags, *iree_flags])
        work = staged.directory / ".work"
        work.mkdir()
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
                    result = _run_worker(job, work, say)
                except NpukitError as e:
                    # The safer configuration: IREE's own CPU code for every dispatch.
                    fallback = (f"the tuned CPU pipeline failed ({str(e).splitlines()[0]}); compiled with the "
                                "stock pipeline instead")
                    say(fallback)
                    pipeline, job.tuned_cpu = CpuPipeline.STOCK, None
            if pipeline is CpuPipeline.STOCK:
                result = _run_worker(job, work, say)
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
