"""Builds the libraries linked into embedded ELF executables for a CPU preset.

``embedded_builtins.c`` is compiled with the preset's cross GCC into a small
archive (npukit.cpu.archive_build); the toolchain's libgcc for the same
multilib follows it on the link line.
"""

from __future__ import annotations

from pathlib import Path

from npukit.cpu.archive_build import c_archive, gcc_for, run_tool
from npukit.errors import ToolchainError
from npukit.targets.cpu_presets import CpuPreset

SOURCE = Path(__file__).with_name("embedded_builtins.c")
_CFLAGS = (
    "-O2",
    "-fPIC",
    "-fvisibility=hidden",
    "-ffreestanding",
    "-fno-exceptions",
    "-fno-unwind-tables",
    "-fno-asynchronous-unwind-tables",
)


def libgcc_path(preset: CpuPreset) -> Path:
    if preset.toolchain is None:
        raise ToolchainError(f"target {preset.name} has no cross toolchain")
    gcc = gcc_for(preset)
    path = Path(run_tool([gcc, *preset.toolchain.cflags, "-print-libgcc-file-name"]))
    if not path.is_file():
        raise ToolchainError(f"{gcc} has no libgcc for {' '.join(preset.toolchain.cflags)} (looked at {path})")
    return path


def builtins_archive(preset: CpuPreset) -> Path:
    """npukit's builtins for ``preset`` as a static archive (built on first use)."""
    if preset.toolchain is None:
        raise ToolchainError(f"target {preset.name} has no cross toolchain")
    return c_archive(preset, "npukit-builtins", [SOURCE], [], _CFLAGS)


def embedded_link_libraries(preset: CpuPreset) -> list[Path]:
    """What to append to an embedded ELF link for ``preset`` (may be empty)."""
    if not preset.embedded_needs_builtins:
        return []
    return [builtins_archive(preset), libgcc_path(preset)]
