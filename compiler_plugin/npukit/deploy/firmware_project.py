"""Writes a self-contained CMake firmware project for a board.

The project holds copies of npukit's runtime (emitc_vm/, hal_driver/), the
board support (bare_metal/) and the board's toolchain file under ``npukit/``,
the compiled model under ``model/`` and the application under ``app/``; it
builds with CMake and Ninja alone, so a user can copy it into their own tree.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from npukit.artifact import CompileResult
from npukit.targets.boards import Board
from npukit.deploy.environment import template_environment
from npukit.errors import ArtifactError
from npukit.runtime.sources import runtime_source_root

# What of the npukit tree a firmware needs.
_RUNTIME_PARTS = ("emitc_vm", "hal_driver", "bare_metal")
_SKIP = shutil.ignore_patterns("README.md", "__pycache__")


@dataclass(frozen=True)
class FirmwareProject:
    directory: Path
    board: Board
    name: str

    @property
    def build_dir(self) -> Path:
        return self.directory / "build"

    @property
    def elf(self) -> Path:
        return self.build_dir / f"{self.name}.elf"

    @property
    def map_file(self) -> Path:
        return self.build_dir / f"{self.name}.map"

    @property
    def toolchain_file(self) -> Path:
        return self.directory / "npukit" / "toolchains" / f"{self.board.cpu.name}.cmake"


def write_project(
    directory: Path,
    board: Board,
    artifact: CompileResult,
    app_sources: list[Path],
    app_files: dict[str, str] | None = None,
    name: str = "firmware",
    stack_size: int = 32768,
    status_messages: bool = False,
) -> FirmwareProject:
    """Creates |directory| (which must not exist) with everything the firmware needs.

    ``app_sources`` are C files copied into ``app/``; ``app_files`` maps more
    file names in ``app/`` (generated headers) to their text. Errors carry
    their messages only with ``status_messages`` (they cost flash).
    """
    if artifact.mode not in ("static", "embedded"):
        raise ArtifactError(f"{artifact.directory}: firmware needs a static or embedded artifact, not {artifact.mode}")
    if artifact.manifest["target"]["cpu"] != board.cpu.name:
        raise ArtifactError(
            f"{artifact.directory}: compiled for {artifact.manifest['target']['cpu']}, but {board.name} has a "
            f"{board.cpu.name}"
        )
    root = runtime_source_root()
    npukit_dir = directory / "npukit"
    npukit_dir.mkdir(parents=True)
    for part in _RUNTIME_PARTS:
        shutil.copytree(root / part, npukit_dir / part, ignore=_SKIP)
    shutil.copy2(root / "CMakeLists.txt", npukit_dir / "CMakeLists.txt")
    (npukit_dir / "toolchains").mkdir()
    shutil.copy2(root / "toolchains" / f"{board.cpu.name}.cmake", npukit_dir / "toolchains")

    model_dir = directory / "model"
    model_dir.mkdir()
    files = artifact.files
    model_sources, model_objects = [], []
    for role in ("vm_module_c", "vm_module_h", "model_wrapper_c", "model_wrapper_h", "static_library",
                 "static_library_h"):
        if role in files:
            shutil.copy2(files[role], model_dir / files[role].name)
            if role in ("vm_module_c", "model_wrapper_c"):
                model_sources.append(f"model/{files[role].name}")
            elif role == "static_library":
                model_objects.append(f"model/{files[role].name}")
    if "model_wrapper_c" not in files:
        raise ArtifactError(f"{artifact.directory}: the artifact has no C model wrapper; recompile it with npukit")

    app_dir = directory / "app"
    app_dir.mkdir()
    app_names = []
    for src in app_sources:
        shutil.copy2(src, app_dir / src.name)
        if src.suffix == ".c":
            app_names.append(f"app/{src.name}")
    for file_name, text in (app_files or {}).items():
        (app_dir / file_name).write_text(text)
        if file_name.endswith(".c"):
            app_names.append(f"app/{file_name}")

    project = FirmwareProject(directory, board, name)
    env = template_environment()
    context = {
        "name": name,
        "board": board,
        "model": artifact.name,
        "sources": app_names + model_sources,
        "objects": model_objects,
        "full_hal": artifact.manifest.get("execution_model") == "async",
        "stack_size": stack_size,
        "call_values": max([16] + [max(len(e.inputs), len(e.outputs)) for e in artifact.entry_points]),
        "status_messages": status_messages,
        "qemu_command": " ".join(board.qemu_command(Path(f"build/{name}.elf"))),
    }
    (directory / "CMakeLists.txt").write_text(env.get_template("CMakeLists.txt.j2").render(**context))
    (directory / "README.md").write_text(env.get_template("README.md.j2").render(**context))
    run = directory / "run.sh"
    run.write_text(env.get_template("run.sh.j2").render(**context))
    run.chmod(0o755)
    return project
