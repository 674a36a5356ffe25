"""Writes an artifact all at once or not at all.

A compile writes into a hidden staging directory beside the output directory;
only when everything succeeded are the files moved into place. A failed
compile leaves nothing behind, not even a new empty output directory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


class StagedOutput:
    def __init__(self, out_dir: Path):
        self.out_dir = Path(out_dir)
        self._created_parents: list[Path] = []
        parent = self.out_dir.absolute().parent
        missing = []
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        for p in reversed(missing):
            p.mkdir()
            self._created_parents.append(p)
        self.directory = Path(tempfile.mkdtemp(prefix=f".{self.out_dir.name}.staging-", dir=self.out_dir.absolute().parent))

    def commit(self) -> Path:
        """Moves every staged file into the output directory, replacing old ones."""
        self.out_dir.mkdir(exist_ok=True)
        for item in sorted(self.directory.rglob("*")):
            rel = item.relative_to(self.directory)
            dest = self.out_dir / rel
            if item.is_dir():
                dest.mkdir(exist_ok=True)
            else:
                os.replace(item, dest)
        shutil.rmtree(self.directory, ignore_errors=True)
        self._created_parents.clear()
        return self.out_dir

    def discard(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
        for p in reversed(self._created_parents):
            try:
                p.rmdir()
            except OSError:
                break
        self._created_parents.clear()

    def __enter__(self) -> "StagedOutput":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None or self.directory.exists():
            self.discard()
