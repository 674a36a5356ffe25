"""Compiles npukit's C for a CPU preset into a static archive, cached per
compiler, flags and sources: the builtins that embedded ELFs link and the
layer kernels that tuned dispatches call.

Board presets use their Debian cross GCC; the host uses the host's ``cc``.
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

_HOST_INSTALL = "apt-get install gcc binutils"


def cache_dir() -> Path:
    root = os.environ.get("NPUKIT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "npukit"
    )
    return Path(root)


def run_tool(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ToolchainError(f"`{' '.join(cmd)}` failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def gcc_for(preset: CpuPreset) -> str:
    """The C compiler for ``preset``'s code (its cross GCC, or the host's)."""
    tc = preset.toolchain
    name, install = (tc.gcc, tc.describe_install()) if tc is not None else ("gcc", _HOST_INSTALL)
    gcc = shutil.which(name)
    if gcc is None:
        raise ToolchainError(f"{name} is needed to build npukit's C for {preset.name}; install it with `{install}`")
    return gcc


def binutil(preset: CpuPreset, tool: str) -> str:
    """``ar``, ``ld``, ``objcopy`` ... beside ``preset``'s GCC."""
    gcc = gcc_for(preset)
    found = shutil.which(gcc[: -len("gcc")] + tool if gcc.endswith("gcc") else tool)
    if found is None:
        raise ToolchainError(f"{tool} beside {gcc} is missing for {preset.name}")
    return found


def preset_cflags(preset: CpuPreset) -> tuple[str, ...]:
    return preset.toolchain.cflags if preset.toolchain is not None else ()


def c_archive(preset: CpuPreset, name: str, sources: list[Path], include_dirs: list[Path],
              flags: tuple[str, ...], headers: list[Path] = ()) -> Path:
    """``sources`` compiled for ``preset`` into ``lib<name>.a`` (built on first use)."""
    gcc = gcc_for(preset)
    version = run_tool([gcc, "-dumpfullversion"])
    all_flags = [*preset_cflags(preset), *flags, *(f"-I{d}" for d in include_dirs)]
    digest = hashlib.sha256("\0".join([gcc, version, *all_flags]).encode())
    for path in [*sources, *headers]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    archive = cache_dir() / name / f"{preset.name}-{digest.hexdigest()[:16]}" / f"lib{name.replace('-', '_')}.a"
    if archive.is_file():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=archive.parent) as tmp:
        objects = []
        for source in sources:
            obj = Path(tmp) / (source.stem + ".o")
            run_tool([gcc, *all_flags, "-c", str(source), "-o", str(obj)])
            objects.append(str(obj))
        lib = Path(tmp) / archive.name
        run_tool([binutil(preset, "ar"), "rcs", str(lib), *objects])
        os.replace(lib, archive)
    return archive
