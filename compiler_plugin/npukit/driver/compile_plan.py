"""Turns a target, an output mode and user flags into IREE compiler flags.

Both front doors use it: ``iree-compile`` with npukit's additions (the command
line is rewritten) and ``npukit.compile`` (flags are built from scratch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from npukit.cpu.builtins_archive import embedded_link_libraries
from npukit.driver.command_line import CommandLine
from npukit.driver.embedded_linker import LIBS_ENV, MACHINE_ENV, PAGE_SIZE_ENV
from npukit.driver.stock_tools import npukit_tool
from npukit.errors import TargetError
from npukit.targets.cpu_presets import CpuPreset, get_preset
from npukit.targets.output_modes import ExecutionModel, OutputMode
from npukit.targets.target_spec import NPU_NAMES, Target

_CPU_TARGET_FLAGS = (
    "iree-llvmcpu-target-triple",
    "iree-llvmcpu-target-cpu",
    "iree-llvmcpu-target-cpu-features",
)


@dataclass
class CompilePlan:
    """IREE flags plus the environment the compile needs (for the embedded linker)."""

    flags: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    # The CPU preset the flags target, where npukit chose or was told one.
    preset: CpuPreset | None = None


def flag_name(flag: str) -> str:
    return flag.lstrip("-").split("=", 1)[0]


def _flag_value(flags: list[str], name: str) -> str | None:
    value = None
    for f in flags:
        if flag_name(f) == name and "=" in f:
            value = f.split("=", 1)[1]
    return value


def cpu_flags(preset: CpuPreset, given: set[str]) -> list[str]:
    """The preset's flags, leaving out those the user set explicitly."""
    return [f for f in preset.iree_flags() if flag_name(f) not in given]


# The flag static libraries and embedded ELFs for npukit's runtime are built with.
NO_DEBUG_SYMBOLS = "iree-llvmcpu-debug-symbols=false"

# Segment alignment of embedded ELFs for boards (the bare-metal loader's own).
BOARD_EMBEDDED_PAGE_SIZE = 64


def uses_embedded_linker(preset: CpuPreset) -> bool:
    """Board CPUs link embedded ELFs through npukit's linker (builtins, page size)."""
    return preset.toolchain is not None


def embedded_linker(preset: CpuPreset) -> CompilePlan:
    """Flags and environment that link embedded ELFs for a board's CPU: npukit's
    builtins where the core needs them, and segments packed at 64 bytes."""
    if not uses_embedded_linker(preset):
        return CompilePlan()
    environment = {MACHINE_ENV: preset.elf_machine, PAGE_SIZE_ENV: str(BOARD_EMBEDDED_PAGE_SIZE)}
    libs = embedded_link_libraries(preset)
    if libs:
        environment[LIBS_ENV] = ":".join(str(p) for p in libs)
    return CompilePlan(
        flags=[f"--iree-llvmcpu-embedded-linker-path={npukit_tool('npukit-embedded-ld')}"],
        environment=environment,
    )


def links_static(flags: list[str]) -> bool:
    """Whether the flags ask for a static library (--iree-llvmcpu-link-static)."""
    static = _flag_value(flags, "iree-llvmcpu-link-static")
    if any(flag_name(f) == "iree-llvmcpu-link-static" and "=" not in f for f in flags):
        static = "true"
    return static in ("true", "1")


def static_library_path(flags: list[str]) -> str | None:
    return _flag_value(flags, "iree-llvmcpu-static-library-output-path")


def _links_embedded(flags: list[str]) -> bool:
    embedded = _flag_value(flags, "iree-llvmcpu-link-embedded")
    return not links_static(flags) and embedded not in ("false", "0")


def plan_for_command_line(cl: CommandLine) -> CompilePlan:
    """Rewrites an iree-compile command line that uses npukit's additions."""
    given = cl.flag_names()
    flags: list[str] = []
    for f in cl.iree_flags:
        if flag_name(f) == "iree-hal-target-backends" and "=" in f:
            backends = []
            for b in f.split("=", 1)[1].split(","):
                b = b.strip()
                b = "llvm-cpu" if b in NPU_NAMES else b
                if b and b not in backends:
                    backends.append(b)
            f = f"--iree-hal-target-backends={','.join(backends)}"
        flags.append(f)

    preset: CpuPreset | None = None
    if "npukit-target" in cl.npukit:
        preset = Target.parse(cl.npukit["npukit-target"]).cpu
    elif (cl.npu is not None or "npukit-cpu-pipeline" in cl.npukit) and not given.intersection(_CPU_TARGET_FLAGS):
        preset = get_preset("host")
    plan = CompilePlan(flags=flags, preset=preset)
    if preset is not None:
        plan.flags.extend(cpu_flags(preset, given))
        if uses_embedded_linker(preset) and _links_embedded(flags) and (
            "iree-llvmcpu-embedded-linker-path" not in given
        ):
            linker = embedded_linker(preset)
            plan.flags.extend(linker.flags)
            plan.environment.update(linker.environment)
    model = _flag_value(flags, "iree-execution-model")
    if model and model.startswith("inline") and "iree-torch-emit-async-entry-points" not in given:
        plan.flags.append("--iree-torch-emit-async-entry-points=false")
    return plan


@dataclass
class OutputPaths:
    """Where a compile writes its files (inside a staging directory)."""

    directory: Path
    name: str

    @property
    def vmfb(self) -> Path:
        return self.directory / f"{self.name}.vmfb"

    @property
    def vm_module_c(self) -> Path:
        return self.directory / f"{self.name}_module.c"

    @property
    def vm_module_h(self) -> Path:
        return self.directory / f"{self.name}_module.h"

    @property
    def static_library(self) -> Path:
        return self.directory / f"{self.name}_executables.o"

    @property
    def static_library_h(self) -> Path:
        return self.directory / f"{self.name}_executables.h"

    @property
    def executables_dir(self) -> Path:
        return self.directory / "executables"

    @property
    def manifest(self) -> Path:
        return self.directory / f"{self.name}.manifest.json"


def plan_for_target(
    target: Target,
    mode: OutputMode,
    execution_model: ExecutionModel,
    paths: OutputPaths,
    extra_flags: list[str] | tuple[str, ...] = (),
) -> CompilePlan:
    """Flags for ``npukit.compile``; ``extra_flags`` are stock IREE flags that win."""
    given = {flag_name(f) for f in extra_flags}
    preset = target.cpu
    plan = CompilePlan(flags=["--iree-hal-target-backends=llvm-cpu"])
    plan.flags.extend(cpu_flags(preset, given))
    if mode is OutputMode.VMFB:
        if execution_model is not ExecutionModel.ASYNC:
            raise TargetError(
                "a .vmfb runs on IREE's stock runtime, which needs the async execution model; "
                "use --mode static or embedded for inline-dynamic"
            )
    else:
        plan.flags.extend(execution_model.iree_flags())
    if mode is OutputMode.STATIC:
        plan.flags += [
            "--iree-llvmcpu-link-embedded=false",
            "--iree-llvmcpu-link-static",
            f"--iree-llvmcpu-static-library-output-path={paths.static_library}",
        ]
    elif mode is OutputMode.EMBEDDED:
        plan.flags.append(f"--iree-hal-dump-executable-binaries-to={paths.executables_dir}")
    if mode is not OutputMode.VMFB and "iree-llvmcpu-debug-symbols" not in given:
        # Without debug symbols IREE's executable library leaves out its
        # source-location and stage-location tables and their strings (24 B
        # and a path per export), which npukit's runtime never reads; the
        # code and the export names stay the same.
        plan.flags.append(f"--{NO_DEBUG_SYMBOLS}")
    if mode is not OutputMode.STATIC and uses_embedded_linker(preset) and (
        "iree-llvmcpu-embedded-linker-path" not in given
    ):
        linker = embedded_linker(preset)
        plan.flags.extend(linker.flags)
        plan.environment.update(linker.environment)
    plan.flags.extend(extra_flags)
    return plan
