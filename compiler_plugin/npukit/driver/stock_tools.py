"""Paths of IREE's own binaries, bypassing npukit's IREE_TOOL_PATH entry."""

from __future__ import annotations

import os
from pathlib import Path


def _mlir_libs_dir() -> Path:
    import iree.compiler._mlir_libs as libs

    return Path(list(libs.__path__)[0])


def stock_tool(name: str) -> Path:
    """IREE's binary ``name`` (iree-compile, iree-lld, ...) as the wheel ships it."""
    path = _mlir_libs_dir() / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise FileNotFoundError(f"IREE's {name} is not at {path}; reinstall iree-base-compiler==3.13.0")
    return path


def npukit_tool(name: str) -> Path:
    """One of npukit's driver scripts (iree-compile, npukit-embedded-ld)."""
    from npukit.driver.tool_path import TOOLS_DIR

    return Path(TOOLS_DIR) / name
