"""The JSON manifest written beside every artifact.

It says what was compiled (model, target, mode, flags), what the entry points
take and return, which files were produced and how large they are, and which
dispatches IREE formed. Tools (``npukit run``, deploy, benchmarks) read the
artifact through it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from npukit.elf_info import read_elf

SCHEMA_VERSION = 1


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def describe_file(path: Path, root: Path) -> dict:
    """Name, size and (for ELF files) machine, float ABI and section sizes."""
    entry: dict = {"path": path.relative_to(root).as_posix(), "bytes": path.stat().st_size}
    with path.open("rb") as f:
        is_elf = f.read(4) == b"\x7fELF"
    if is_elf:
        entry["elf"] = read_elf(path).to_json()
    return entry


def write_manifest(path: Path, manifest: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    tmp.replace(path)


def read_manifest(path: Path) -> dict:
    data = json.loads(path.read_text())
    if data.get("schema") != SCHEMA_VERSION:
        raise ValueError(f"{path}: manifest schema {data.get('schema')} is not {SCHEMA_VERSION}")
    return data


def long_export_names(manifest: dict) -> dict[str, str]:
    """Each export's name in the generated code -> IREE's name for it, which
    the manifest's dispatches, the profile, tuning and the reports use. A
    vm-c module's exports have short names (passes.short_export_names); an
    artifact without the table (a .vmfb, or one written before it) keeps
    IREE's names, which then map to themselves."""
    return dict(manifest.get("export_names") or {})


def by_long_export_name(values: dict, manifest: dict) -> dict:
    """``values`` keyed by export names as the generated code has them (a
    firmware's or the runtime's per-dispatch profile), keyed by IREE's names."""
    names = long_export_names(manifest)
    return {names.get(name, name): value for name, value in values.items()}
