"""Where the runtime's C sources are: the repository (editable installs) or
the copy packaged into the wheel."""

from __future__ import annotations

from pathlib import Path

from npukit.errors import ToolchainError

_PACKAGE = Path(__file__).resolve().parent.parent
_CANDIDATES = (
    _PACKAGE / "_c",  # wheel
    _PACKAGE.parent.parent,  # repository: compiler_plugin/npukit -> repo root
)


def runtime_source_root() -> Path:
    for root in _CANDIDATES:
        if (root / "emitc_vm" / "CMakeLists.txt").is_file() and (root / "hal_driver" / "CMakeLists.txt").is_file():
            return root
    raise ToolchainError(
        "npukit's C runtime sources (emitc_vm/, hal_driver/) are missing from this installation; "
        "reinstall npukit"
    )


def include_dirs(root: Path) -> list[Path]:
    return [root / "emitc_vm" / "include", root / "hal_driver" / "include"]


def source_files(root: Path) -> list[Path]:
    files = []
    for part in ("emitc_vm", "hal_driver"):
        files += sorted((root / part).rglob("*.[ch]"))
        files.append(root / part / "CMakeLists.txt")
    files.append(root / "CMakeLists.txt")
    return files
