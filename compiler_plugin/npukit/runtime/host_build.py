"""Builds npukit's runtime for this machine, and a model artifact against it.

The runtime libraries are built once per source version with CMake and
Ninja; each artifact becomes a shared library holding its vm-c module, its
executables and the runtime. Both are cached under the npukit cache directory
(``$NPUKIT_CACHE_DIR`` or ``~/.cache/npukit``) by content hash.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from npukit.artifact import CompileResult
from npukit.cpu.archive_build import cache_dir
from npukit.errors import ArtifactError, ToolchainError
from npukit.runtime.sources import include_dirs, runtime_source_root, source_files

_C_FLAGS = ("-std=gnu11", "-O2", "-fPIC", "-fno-strict-aliasing")


def _digest(paths: list[Path], extra: str = "") -> str:
    h = hashlib.sha256(extra.encode())
    for p in paths:
        h.update(str(p.name).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _run(cmd: list[str], what: str, cwd: Path | None = None) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip().splitlines()
        tail = "\n".join(output[-25:])
        raise ToolchainError(f"{what} failed (`{' '.join(cmd[:3])} ...`):\n{tail}")


def _require(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise ToolchainError(f"{tool} is needed to build npukit's runtime; install it with `apt-get install {package}`")
    return path


# Build variants of the runtime: the optimized one the binding loads, and
# the AddressSanitizer + UBSan build (with the C unit tests) the tests use.
_VARIANTS = {
    "release": ["-DCMAKE_BUILD_TYPE=Release", "-DNPUKIT_BUILD_TESTS=OFF"],
    "sanitize": ["-DCMAKE_BUILD_TYPE=Debug", "-DNPUKIT_SANITIZE=ON", "-DNPUKIT_BUILD_TESTS=ON"],
}
SANITIZER_FLAGS = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer")


def runtime_libraries(variant: str = "release") -> tuple[Path, list[Path]]:
    """(build directory, [libnpukit_hal.a, libnpukit_emitc_vm.a]) for this host.

    ``variant`` is ``release`` or ``sanitize`` (which also builds the C unit
    tests into the build directory's ``tests/c``).
    """
    root = runtime_source_root()
    files = source_files(root)
    if variant == "sanitize":
        files += sorted((root / "tests" / "c").glob("*"))
    key = _digest(files, variant)
    build = cache_dir() / "host-runtime" / f"{variant}-{key}"
    libs = [build / "hal_driver" / "libnpukit_hal.a", build / "emitc_vm" / "libnpukit_emitc_vm.a"]
    stamp = build / ".complete"
    if stamp.is_file():
        return build, libs
    cmake = _require("cmake", "cmake")
    ninja = _require("ninja", "ninja-build")
    build.parent.mkdir(parents=True, exist_ok=True)
    # CMake build trees cannot move, so the build happens in place, one
    # process at a time; the stamp marks a finished one.
    with open(build.parent / f"{build.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.is_file():
            return build, libs
        shutil.rmtree(build, ignore_errors=True)
        _run([cmake, "-S", str(root), "-B", str(build), "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}",
              *_VARIANTS[variant]], "configuring the runtime")
        targets = [] if variant == "sanitize" else ["npukit_hal", "npukit_emitc_vm"]
        _run([ninja, "-C", str(build), *targets], "building the runtime")
        stamp.write_text(key)
    return build, libs


def model_sources(result: CompileResult) -> tuple[list[Path], list[str]]:
    """The C files that make up |result| on npukit's runtime (module, wrapper,
    static library) and the compiler flags they need."""
    _check_runs_here(result)
    files = result.files
    sources = [files["vm_module_c"], files["model_wrapper_c"]]
    if "static_library" in files:
        sources.append(files["static_library"])
    flags = ["-DNPUKIT_MODEL_GENERIC_ENTRY_POINTS=1"]
    flags += [f"-I{d}" for d in include_dirs(runtime_source_root())] + [f"-I{result.directory}"]
    return sources, flags


def _check_runs_here(result: CompileResult) -> None:
    if result.manifest["target"]["cpu"] != "host":
        raise ArtifactError(
            f"{result.directory}: compiled for {result.target}; npukit's runtime runs it on a board "
            "(npukit deploy), not on this machine"
        )
    if result.mode not in ("static", "embedded"):
        raise ArtifactError(
            f"{result.directory}: npukit's runtime runs static and embedded artifacts; this one is "
            f"'{result.mode}' (use runtime='stock' for .vmfb)"
        )
    if "model_wrapper_c" not in result.files:
        raise ArtifactError(f"{result.directory}: the artifact has no C model wrapper ({result.manifest['warnings']})")


def link_command(sources: list[Path], flags: list[str], libs: list[Path], output: Path) -> list[str]:
    """gcc command that links |sources| with the runtime |libs| into |output|."""
    return [
        _require("gcc", "gcc"), *_C_FLAGS, *flags, "-w", *map(str, sources),
        "-Wl,--whole-archive", *map(str, libs), "-Wl,--no-whole-archive", "-lm", "-o", str(output),
    ]


def model_library(result: CompileResult) -> Path:
    """The shared library that runs |result| on this machine (built on first use)."""
    sources, flags = model_sources(result)
    _, libs = runtime_libraries()
    headers = [result.files[role] for role in ("vm_module_h", "model_wrapper_h", "static_library_h")
               if role in result.files]
    key = _digest(sources + headers + libs)
    out_dir = cache_dir() / "host-models" / key
    library = out_dir / f"lib{result.name}.so"
    if library.is_file():
        return library
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f".{library.name}.{os.getpid()}"
    _run(link_command(sources, ["-shared", *flags], libs, tmp), f"building {result.name} for npukit's runtime")
    os.replace(tmp, library)
    return library


def runtime_shared_library() -> Path:
    """npukit's runtime as one shared library for this machine (for Python
    access to its C parts, such as the mynpu simulator); built on first use."""
    _, libs = runtime_libraries()
    key = _digest(libs)
    out_dir = cache_dir() / "host-runtime-shared" / key
    library = out_dir / "libnpukit_runtime.so"
    if library.is_file():
        return library
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f".{library.name}.{os.getpid()}"
    _run(link_command([], ["-shared"], libs, tmp), "building npukit's runtime as a shared library")
    os.replace(tmp, library)
    return library
