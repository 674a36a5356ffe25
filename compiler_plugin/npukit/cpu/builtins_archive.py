"""Builds the libraries linked into embedded ELF executables for a CPU preset.

``embedded_builtins.c`` is compiled with the preset's cross GCC into a small
archive, cached per compiler, flags and source; the toolchain's libgcc for the
same multilib follows it on the link line.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

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


def cache_dir() -> Path:
    root = os.environ.get("NPUKIT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "npukit"
    )
    return Path(root)


def _gcc(preset: CpuPreset) -> str:
    tc = preset.toolchain
    if tc is None:
        raise ToolchainError(f"target {preset.name} has no cross toolchain")
    gcc = shutil.which(tc.gcc)
    if gcc is None:
        raise ToolchainError(
            f"{tc.gcc} is needed to link embedded executables for {preset.name}; "
            f"install it with `{tc.describe_install()}`"
        )
    return gcc


def _run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ToolchainError(f"`{' '.join(cmd)}` failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def libgcc_path(preset: CpuPreset) -> Path:
    gcc = _gcc(preset)
    path = Path(_run([gcc, *preset.toolchain.cflags, "-print-libgcc-file-name"]))
    if not path.is_file():
        raise ToolchainError(f"{gcc} has no libgcc for {' '.join(preset.toolchain.cflags)} (looked at {path})")
    return path


def builtins_archive(preset: CpuPreset) -> Path:
    """npukit's builtins for ``preset`` as a static archive (built on first use)."""
    gcc = _gcc(preset)
    source = SOURCE.read_bytes()
    version = _run([gcc, "-dumpfullversion"])
    flags = [*preset.toolchain.cflags, *_CFLAGS]
    key = hashlib.sha256("\0".join([gcc, version, *flags]).encode() + source).hexdigest()[:16]
    archive = cache_dir() / "embedded-builtins" / f"{preset.name}-{key}" / "libnpukit_builtins.a"
    if archive.is_file():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    ar = gcc[: -len("gcc")] + "ar" if gcc.endswith("gcc") else "ar"
    with tempfile.TemporaryDirectory(dir=archive.parent) as tmp:
        obj = Path(tmp) / "embedded_builtins.o"
        lib = Path(tmp) / archive.name
        _run([gcc, *flags, "-c", str(SOURCE), "-o", str(obj)])
        _run([ar, "rcs", str(lib), str(obj)])
        os.replace(lib, archive)
    return archive


def embedded_link_libraries(preset: CpuPreset) -> list[Path]:
    """What to append to an embedded ELF link for ``preset`` (may be empty)."""
    if not preset.embedded_needs_builtins:
        return []
    return [builtins_archive(preset), libgcc_path(preset)]
