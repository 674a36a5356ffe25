"""``npukit deploy``: a model to firmware running on a QEMU board, with its costs.

The steps: compile the model for the board's CPU (with --npu, for the NPU
and that CPU); compile it for the host and run it there for the expected
outputs (IREE's stock runtime; with --npu, npukit's runtime and the NPU
simulator); write a firmware
project (samples/model/main.c, the input and expected outputs in
model_data.h); build it; run it under QEMU; read back the outputs, the
instruction counts, the arena and stack high-water marks, and the flash split
from the linker map.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

import npukit
from npukit.artifact import CompileResult
from npukit.deploy import firmware_build, model_data, qemu_runner
from npukit.targets.boards import Board, get_board
from npukit.targets.cpu_pipeline import DEFAULT_CPU_PIPELINE
from npukit.deploy.firmware_build import BoardCapacityError, check_toolchain, require_tool
from npukit.deploy.firmware_project import FirmwareProject, write_project
from npukit.deploy.firmware_stack import DEFAULT_STACK_SIZE, FirmwareStack, firmware_stack, stack_size_for
from npukit.deploy.firmware_size import FlashSplit, classify_by_path, firmware_size, flash_split
from npukit.errors import NpukitError, RunError, TargetError
from npukit.manifest import by_long_export_name
from npukit.runtime.sources import runtime_source_root

if TYPE_CHECKING:
    from npukit.cpu.kernel_choice import KernelChoice
    from npukit.mynpu.options import MynpuOptions

Progress = Callable[[str], None]

EXIT_MATCH, EXIT_DIFFER, EXIT_ERROR = 0, 1, 2
EXIT_FAULT = 120  # NPUKIT_BOARD_EXIT_FAULT in bare_metal/include/npukit/board.h
_ARENA_EXHAUSTED = re.compile(r"arena exhausted: (\d+) bytes requested, (\d+) of (\d+) in use, largest free block (\d+)")


@dataclass(frozen=True)
class RamUse:
    static_data: int  # .data + .bss of the whole firmware (not the arena, not the stack)
    arena_high_water: int
    stack_high_water: int
    arena_capacity: int
    stack_size: int
    # With --npu: the simulated NPU SRAM inside the arena high-water. A real
    # NPU has that SRAM of its own, so the total leaves it out.
    simulated_npu_sram: int = 0
    # The compile-time memory plan's block (inside the arena high-water,
    # counted once) and the largest offset + length the runs used in it.
    buffer_plan_size: int = 0
    buffer_plan_high_water: int = 0

    @property
    def runtime_arena(self) -> int:
        """The arena high-water mark without the simulated NPU SRAM."""
        return self.arena_high_water - self.simulated_npu_sram

    @property
    def without_stack(self) -> int:
        """Static data and the arena (the planned block counted once), without the simulated NPU SRAM."""
        return self.static_data + self.runtime_arena

    @property
    def total(self) -> int:
        return self.without_stack + self.stack_high_water


@dataclass(frozen=True)
class NpuUse:
    """The NPU's share of one steady-state inference, as its simulator counted it."""
    name: str
    cycles: int
    macs: int
    dispatches: int
    simulation_instructions: int  # board CPU instructions spent simulating the NPU
    clock_mhz: int

    @property
    def microseconds(self) -> float:
        return self.cycles / self.clock_mhz


@dataclass
class Sample:
    """One input set the firmware ran: its outputs on the board and on the host."""

    inputs: list[np.ndarray]
    outputs: list[np.ndarray]
    host_outputs: list[np.ndarray]

    @property
    def matches_host(self) -> bool:
        return model_data.outputs_match(self.outputs, self.host_outputs)

    @property
    def identical_to_host(self) -> bool:
        return model_data.outputs_identical(self.outputs, self.host_outputs)


@dataclass
class DeployResult:
    board: Board
    artifact: CompileResult
    samples: list[Sample]  # the first is the one measured
    flash: FlashSplit
    ram: RamUse
    instructions: int  # one steady-state inference
    first_run_instructions: int
    load_instructions: int
    instruction_step: int  # the board counter's resolution
    dispatches: int
    project_dir: Path | None  # the kept firmware project, if any
    console: str
    stack: "FirmwareStack | None" = None  # the stack bound read from the firmware before it ran
    npu: "NpuUse | None" = None  # with --npu: what the NPU did in that inference
    # With profile_dispatches: export -> its instructions in that inference.
    dispatch_instructions: dict[str, int] = field(default_factory=dict)

    @property
    def cpu_instructions(self) -> int:
        """The CPU's instructions per inference, without those the NPU
        simulator itself executes on the board's CPU."""
        return self.instructions - (self.npu.simulation_instructions if self.npu else 0)

    @property
    def macs(self) -> int:
        return int(self.artifact.manifest.get("macs", 0))

    @property
    def arena_planned(self) -> int | None:
        """<NAME>_ARENA_SIZE: the block the compile-time memory plan fixed (None without a plan)."""
        plan = self.artifact.manifest.get("memory_plan") or {}
        return plan.get("arena_size")

    @property
    def activation_lower_bound(self) -> int | None:
        """The largest sum of the model's simultaneously live activations (None when unknown)."""
        activations = self.artifact.manifest.get("activations") or {}
        return activations.get("lower_bound")

    @property
    def instructions_per_mac(self) -> float | None:
        return self.instructions / self.macs if self.macs else None

    @property
    def inputs(self) -> list[np.ndarray]:
        return self.samples[0].inputs

    @property
    def outputs(self) -> list[np.ndarray]:
        return self.samples[0].outputs

    @property
    def host_outputs(self) -> list[np.ndarray]:
        return self.samples[0].host_outputs

    @property
    def outputs_match_host(self) -> bool:
        """Every sample's outputs match the host's (floats within 1e-4, 8-bit within 1)."""
        return all(s.matches_host for s in self.samples)

    @property
    def outputs_identical_to_host(self) -> bool:
        return all(s.identical_to_host for s in self.samples)

    def to_json(self) -> dict:
        ipm = self.instructions_per_mac
        return {
            "board": self.board.name,
            "cpu": self.board.cpu.name,
            "model": self.artifact.name,
            "mode": self.artifact.mode,
            "execution_model": self.artifact.manifest["execution_model"],
            "flash_bytes": self.flash.total,
            "flash": {
                "model_code": self.flash.model_code,
                "constants": self.flash.constants,
                "runtime": self.flash.runtime,
                "other": self.flash.other,
                "npu_simulator": self.flash.npu_simulator,
            },
            "kernel_constants": self.artifact.manifest.get("kernel_constants"),
            "constant_pools": self.artifact.manifest.get("constant_pools"),
            "ram_bytes": self.ram.total,
            "ram_without_stack": self.ram.without_stack,
            "arena_planned": self.arena_planned,
            "arena_plan_high_water": self.ram.buffer_plan_high_water if self.arena_planned is not None else None,
            "activation_lower_bound": self.activation_lower_bound,
            "ram_without_stack_over_lower_bound": (round(self.ram.without_stack / self.activation_lower_bound, 3)
                                                   if self.activation_lower_bound else None),
            "memory_plan_refused": (self.artifact.manifest.get("memory_plan") or {}).get("refused"),
            "stack_bound": self.stack.to_json() if self.stack else None,
            "ram": {
                "static_data": self.ram.static_data,
                "arena_high_water": self.ram.arena_high_water,
                "stack_high_water": self.ram.stack_high_water,
                "arena_capacity": self.ram.arena_capacity,
                "stack_size": self.ram.stack_size,
                "simulated_npu_sram": self.ram.simulated_npu_sram,
                "buffer_plan_size": self.ram.buffer_plan_size,
                "buffer_plan_high_water": self.ram.buffer_plan_high_water,
            },
            "instructions": self.instructions,
            "first_run_instructions": self.first_run_instructions,
            "load_instructions": self.load_instructions,
            "instruction_step": self.instruction_step,
            "macs": self.macs,
            "instructions_per_mac": round(ipm, 4) if ipm is not None else None,
            "dispatches": self.dispatches,
            "outputs": [o.tolist() for o in self.outputs],
            "output_dtypes": [str(o.dtype) for o in self.outputs],
            "outputs_match_host": self.outputs_match_host,
            "outputs_identical_to_host": self.outputs_identical_to_host,
            "samples": len(self.samples),
            "samples_matching_host": sum(s.matches_host for s in self.samples),
            "samples_identical_to_host": sum(s.identical_to_host for s in self.samples),
            "project": str(self.project_dir) if self.project_dir else None,
            "npu": None if self.npu is None else {
                "name": self.npu.name,
                "cycles": self.npu.cycles,
                "microseconds": round(self.npu.microseconds, 3),
                "macs": self.npu.macs,
                "dispatches": self.npu.dispatches,
                "cpu_instructions": self.cpu_instructions,
                "simulation_instructions": self.npu.simulation_instructions,
                "sram_bytes": self.ram.simulated_npu_sram,
            },
        }


def check_tools(board: Board) -> None:
    """Fails early, before any compile, when a tool the deploy needs is missing."""
    check_toolchain(board)
    require_tool(board.spec.qemu_system, board.spec.qemu_package, f"to run firmware on {board.name}")


def load_inputs(given: Sequence[str | Path | np.ndarray], artifact: CompileResult, seed: int) -> list[np.ndarray]:
    """The inputs (arrays or .npy files, checked against the model), or seeded random ones."""
    from npukit.run_model import check_inputs, load_npy

    entry = artifact.entry_points[0]
    if not given:
        return model_data.random_inputs(entry.inputs, seed)
    arrays = [item if isinstance(item, np.ndarray) else load_npy(item) for item in given]
    return check_inputs(entry, tuple(arrays))


def _embedded_code_bytes(artifact: CompileResult) -> int:
    """Code inside the embedded ELFs, which the linker sees as the vm-c module's rodata."""
    total = 0
    for role, f in artifact.manifest["files"].items():
        if role.startswith("embedded_executable") and "elf" in f:
            total += int(f["elf"]["sizes"]["text"])
    return total


def _measure_flash(project: FirmwareProject, artifact: CompileResult) -> tuple[FlashSplit, int]:
    size = firmware_size(project.map_file, classify_by_path(artifact.name))
    split = flash_split(size)
    moved = min(_embedded_code_bytes(artifact), split.constants)
    split = replace(split, model_code=split.model_code + moved, constants=split.constants - moved)
    return split, size.total("data") + size.total("bss")


def _run_error(run: qemu_runner.FirmwareRun, board: Board) -> NpukitError:
    m = _ARENA_EXHAUSTED.search(run.console)
    if m:
        requested, in_use, capacity, _largest = map(int, m.groups())
        return BoardCapacityError(
            f"the model does not fit {board.name}'s RAM at run time: the runtime's arena of {capacity} bytes ran "
            f"out with {in_use} bytes in use and {requested} more requested, so it needs at least "
            f"{in_use + requested - capacity} bytes more; console:\n{run.console}"
        )
    if run.exit_status == EXIT_FAULT:
        return RunError(f"the firmware faulted on {board.name}; {run.report()}")
    return RunError(f"the firmware failed on {board.name}; {run.report()}")


NPUS = ("mynpu",)


def _npu_options(npu: str | None, mynpu: "MynpuOptions | None", mode: str | None) -> tuple[str, "MynpuOptions | None"]:
    """The output mode and the mynpu options of a deploy, checked."""
    if npu is None:
        if mynpu is not None:
            raise TargetError("mynpu options were given without --npu mynpu")
        return mode or "static", None
    if npu not in NPUS:
        raise TargetError(f"unknown NPU '{npu}'; npukit knows: {', '.join(NPUS)}")
    from npukit.mynpu.options import MynpuOptions

    # Static by default: the NPU's streams and weights stay in flash, its CPU code is the static library.
    return mode or "static", mynpu if mynpu is not None else MynpuOptions()


def _npu_use(run: qemu_runner.FirmwareRun, artifact: CompileResult) -> NpuUse:
    hardware = artifact.manifest["mynpu"]["hardware"]
    return NpuUse(
        name="mynpu", cycles=run.number("npu_cycles"), macs=run.number("npu_macs"),
        dispatches=run.number("npu_dispatches"), simulation_instructions=run.number("simulation_instructions"),
        clock_mhz=int(hardware["clock_mhz"]),
    )


def _dispatch_instructions(run: qemu_runner.FirmwareRun, manifest: dict) -> dict[str, int]:
    """Each export's instructions as the firmware printed them, under IREE's
    name for it (the firmware holds the short names)."""
    found = {}
    for value in run.all_values("dispatch_instructions"):
        name, _, count = value.rpartition(" ")
        found[name] = int(count)
    return by_long_export_name(found, manifest)


def _host_outputs(host: CompileResult, sample_inputs: list[list[np.ndarray]], runtime: str) -> list[list[np.ndarray]]:
    """Each sample's outputs on the host, from the calls the firmware makes
    in the order it makes them (samples/model/main.c: the first sample twice,
    its second run checked, then each other sample once) on one loaded
    model: a model with state (an LSTM's, an SVDF's variable tensors) carries
    it from call to call as on the board."""
    loaded = npukit.load(host, runtime=runtime)
    loaded(*sample_inputs[0])
    return [loaded(*arrays) for arrays in sample_inputs]


def deploy(
    model: str | Path,
    board: str | Board,
    *,
    mode: str | None = None,
    npu: str | None = None,
    mynpu: "MynpuOptions | None" = None,
    inputs: Sequence[str | Path | np.ndarray] = (),
    seed: int = 0,
    samples: int = 1,
    keep: str | Path | None = None,
    execution_model: str | None = None,
    iree_flags: Sequence[str] = (),
    stack_size: int | None = None,
    arena_limit: int | None = None,
    status_messages: bool = False,
    progress: Progress | None = None,
    cpu_pipeline: str = DEFAULT_CPU_PIPELINE.value,
    profile_dispatches: bool = False,
    tuning_db: str | Path | None = None,
    kernel_choices: "dict[str, KernelChoice] | None" = None,
    flash_budget: int | None = None,
    input_shapes: "Mapping[str | None, Sequence[int]] | Sequence[str] | None" = None,
    input_values: "Mapping[str, object] | Sequence[str] | None" = None,
) -> DeployResult:
    """Compiles |model| for |board|, builds the firmware, runs it under QEMU and measures it.

    ``mode`` is static (the default) or embedded. ``npu="mynpu"`` compiles
    for ``mynpu+<the board's CPU>`` (static by default: the NPU's streams and
    weights stay in flash and its CPU code is the static library; embedded
    loads the CPU code's ELF into RAM; ``mynpu`` holds the hardware
    configuration): the NPU's dispatches run on the mynpu simulator linked
    into the firmware, whose counted cycles are reported beside the CPU's
    instructions, and the expected outputs come from the same NPU compile run
    on npukit's runtime on the host.

    ``inputs`` are arrays or .npy files, one per model input (default: seeded
    random inputs). ``samples`` random input sets (seeds ``seed``,
    ``seed + 1``, ...) run on the board one after the other and are each
    checked against the host, which makes the same calls in the same order
    (a model with variable tensors carries its state alike); the figures
    come from the first.

    Before it runs, the firmware's stack is bounded from its machine code
    (npukit.deploy.firmware_stack: ``stack``); without ``stack_size`` the
    firmware's stack is that bound and a margin (32 KiB when there is no
    bound), else ``stack_size`` bytes.

    ``keep`` is a directory (which must not exist yet) that receives the
    firmware project, the model compiled for the board and the host's
    reference outputs; without it everything is temporary. ``arena_limit``
    caps the runtime's arena (bytes), to see whether the model fits a part
    with less RAM than the QEMU board (and builds the firmware with error
    messages, so that an exhausted arena says how much more it needs);
    ``status_messages`` builds it with error messages in any case (by
    default a board's errors carry only their codes, which saves flash).
    ``cpu_pipeline`` (tuned or stock)
    applies to the board's compile and to the host's that gives the expected
    outputs; ``tuning_db``, ``kernel_choices`` and ``flash_budget`` to the
    board's tuned compile (see npukit.compile); ``input_shapes`` and
    ``input_values`` to every compile (an ONNX model's unknown input
    dimensions, inputs made constants). ``profile_dispatches`` has the firmware
    count each dispatch's instructions (``dispatch_instructions``; the
    counting adds a few dozen instructions per dispatch to the total).
    """
    say = progress or (lambda _m: None)
    board = board if isinstance(board, Board) else get_board(board)
    if mode not in (None, "static", "embedded"):
        raise TargetError(f"unknown deploy mode '{mode}'; use static or embedded")
    mode, mynpu = _npu_options(npu, mynpu, mode)
    keep_dir = Path(keep) if keep is not None else None
    if keep_dir is not None and keep_dir.exists() and (not keep_dir.is_dir() or any(keep_dir.iterdir())):
        raise NpukitError(f"{keep_dir} already exists and is not empty; give --keep a new directory")
    check_tools(board)
    if arena_limit is not None and arena_limit < 0:
        raise NpukitError(f"the arena limit must be a number of bytes, not {arena_limit}")
    if not Path(model).is_file():
        raise NpukitError(f"{model}: no such model file")
    if samples < 1:
        raise NpukitError(f"the number of samples must be at least 1, not {samples}")
    if samples > 1 and inputs:
        raise NpukitError("--samples runs seeded random inputs; give either --input files or --samples")

    with tempfile.TemporaryDirectory(prefix="npukit-deploy-") as tmp:
        work = Path(tmp)
        target = f"{npu}+{board.cpu.name}" if npu else board.cpu.name
        say(f"compiling {Path(model).name} for {board.name} ({target}, {mode})")
        artifact = npukit.compile(
            model, target=target, output=mode, out_dir=work / "model",
            execution_model=execution_model, iree_flags=iree_flags, mynpu=mynpu, cpu_pipeline=cpu_pipeline,
            tuning_db=tuning_db, kernel_choices=kernel_choices, flash_budget=flash_budget, input_shapes=input_shapes,
            input_values=input_values,
        )
        sample_inputs = [load_inputs(inputs, artifact, seed + k) for k in range(samples)]
        if npu:
            say(f"computing the expected outputs on the host ({npu} on npukit's runtime with the simulator)")
            quiet = replace(mynpu, report=None, show_cpu_operations=False)
            host = npukit.compile(model, target=npu, output="embedded", out_dir=work / "host",
                                  execution_model=execution_model, mynpu=quiet, cpu_pipeline=cpu_pipeline,
                                  input_shapes=input_shapes, input_values=input_values)
            host_outputs = _host_outputs(host, sample_inputs, runtime="npukit")
        else:
            say("computing the expected outputs on the host (IREE's runtime)")
            host = npukit.compile(model, target="host", output="vmfb", out_dir=work / "host",
                                  cpu_pipeline=cpu_pipeline, input_shapes=input_shapes, input_values=input_values)
            host_outputs = _host_outputs(host, sample_inputs, runtime="stock")

        project_dir = work / "firmware"
        say(f"writing the firmware project for {board.name}")
        project = write_project(
            project_dir, board, artifact,
            [runtime_source_root() / "samples" / "model" / "main.c"],
            {"model_data.h": model_data.render(
                artifact.name, sample_inputs, host_outputs, arena_limit,
                mynpu_sram_bytes=artifact.manifest["mynpu"]["hardware"]["sram_bytes"] if npu else None,
                profile_dispatches=profile_dispatches)},
            name=artifact.name, stack_size=stack_size if stack_size is not None else DEFAULT_STACK_SIZE,
            # An arena limit asks how much RAM the model needs: the arena's
            # message says it when it runs out.
            status_messages=status_messages or arena_limit is not None,
        )
        say("building the firmware")
        firmware_build.build(project)
        stack = firmware_stack(project.elf, artifact.name, artifact.manifest)
        if stack_size is None and stack_size_for(stack.bytes) != DEFAULT_STACK_SIZE:
            say(f"linking it with the stack bounded to {stack.bytes:,} B and a margin")
            sized = stack_size_for(stack.bytes)
            cmake = project.directory / "CMakeLists.txt"  # a kept project configures with the same stack
            cmake.write_text(cmake.read_text().replace(f"set(NPUKIT_STACK_SIZE {DEFAULT_STACK_SIZE} ",
                                                       f"set(NPUKIT_STACK_SIZE {sized} "))
            firmware_build.build(project, stack_size=sized)
        flash, static_data = _measure_flash(project, artifact)
        say(f"running it on {board.name} under QEMU" + (f" ({samples} samples)" if samples > 1 else ""))
        run = qemu_runner.run(board, project.elf, timeout=qemu_runner.DEFAULT_TIMEOUT_SECONDS * (1 + samples) / 2)
        if run.exit_status not in (EXIT_MATCH, EXIT_DIFFER):
            raise _run_error(run, board)
        outputs = model_data.read_outputs(run.all_values("output"), host_outputs)
        result = DeployResult(
            board=board,
            artifact=artifact,
            samples=[Sample(*s) for s in zip(sample_inputs, outputs, host_outputs)],
            flash=flash,
            ram=RamUse(
                static_data=static_data,
                arena_high_water=run.number("arena_high_water"),
                stack_high_water=run.number("stack_high_water"),
                arena_capacity=run.number("arena_capacity"),
                stack_size=run.number("stack_size"),
                simulated_npu_sram=run.number("npu_sram_bytes") if npu else 0,
                buffer_plan_size=run.number("buffer_plan_size"),
                buffer_plan_high_water=run.number("buffer_plan_high_water"),
            ),
            instructions=run.number("instructions"),
            first_run_instructions=run.number("first_run_instructions"),
            load_instructions=run.number("load_instructions"),
            instruction_step=run.number("instruction_step"),
            dispatches=run.number("dispatches"),
            project_dir=None,
            console=run.console,
            stack=stack,
            npu=_npu_use(run, artifact) if npu else None,
            dispatch_instructions=_dispatch_instructions(run, artifact.manifest),
        )
        if (run.exit_status == EXIT_MATCH) != result.outputs_match_host:
            raise RunError(f"the firmware and the host disagree on whether the outputs match; {run.report()}")
        if keep_dir is not None:
            _keep(keep_dir, project, artifact, result.samples)
            result.project_dir = keep_dir
            result.artifact = npukit.load_artifact(keep_dir / "model-artifact")
        return result


def _keep(keep_dir: Path, project: FirmwareProject, artifact: CompileResult, samples: list[Sample]) -> None:
    """Copies the project to |keep_dir| (written complete or not at all): its
    sources, the built ELF and map in build/, the compiled artifact with its
    manifest in model-artifact/, and the inputs and host outputs as .npy
    (input_<i>.npy, host_output_<i>.npy; sample_<k>_... for further samples)."""
    staging = keep_dir.with_name(f".{keep_dir.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    # CMake's build tree holds absolute paths: the user configures anew.
    shutil.copytree(project.directory, staging, ignore=shutil.ignore_patterns("build"))
    (staging / "build").mkdir()
    shutil.copy2(project.elf, staging / "build")
    shutil.copy2(project.map_file, staging / "build")
    shutil.copytree(artifact.directory, staging / "model-artifact")
    for k, sample in enumerate(samples):
        prefix = f"sample_{k}_" if k else ""
        for i, a in enumerate(sample.inputs):
            np.save(staging / f"{prefix}input_{i}.npy", a)
        for i, a in enumerate(sample.host_outputs):
            np.save(staging / f"{prefix}host_output_{i}.npy", a)
    if keep_dir.exists():
        keep_dir.rmdir()  # empty, checked before the deploy started
    staging.rename(keep_dir)
