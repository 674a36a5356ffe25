"""A compiled artifact on disk: its directory and its manifest."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from npukit.errors import ArtifactError
from npukit.frontends.signature import EntryPoint
from npukit.manifest import read_manifest


@dataclass
class CompileResult:
    """What ``npukit.compile`` returns; also what ``load_artifact`` reads back."""

    directory: Path
    manifest_path: Path
    manifest: dict

    @property
    def name(self) -> str:
        return self.manifest["name"]

    @property
    def target(self) -> str:
        return self.manifest["target"]["name"]

    @property
    def mode(self) -> str:
        return self.manifest["mode"]

    @property
    def entry_points(self) -> list[EntryPoint]:
        return [EntryPoint.from_json(e) for e in self.manifest["entry_points"]]

    @property
    def files(self) -> dict[str, Path]:
        """Artifact files by role (vmfb, vm_module_c, static_library, ...)."""
        return {role: self.directory / f["path"] for role, f in self.manifest["files"].items()}

    def path(self, role: str) -> Path:
        files = self.files
        if role not in files:
            raise ArtifactError(
                f"{self.directory}: the {self.mode} artifact has no {role} file "
                f"(it has: {', '.join(sorted(files))})"
            )
        return files[role]

    @property
    def dispatches(self) -> list[dict]:
        return self.manifest["dispatches"]

    def __repr__(self) -> str:
        return f"CompileResult({self.name!r}, target={self.target!r}, mode={self.mode!r}, directory='{self.directory}')"


def load_artifact(artifact: "CompileResult | str | Path") -> CompileResult:
    """Opens an artifact given as a CompileResult, its directory or its manifest."""
    if isinstance(artifact, CompileResult):
        return artifact
    path = Path(artifact)
    if path.is_dir():
        manifests = sorted(path.glob("*.manifest.json"))
        if not manifests:
            raise ArtifactError(f"{path}: no *.manifest.json here; is this an npukit compile output directory?")
        if len(manifests) > 1:
            names = ", ".join(m.name for m in manifests)
            raise ArtifactError(f"{path}: holds several artifacts ({names}); pass the manifest you mean")
        path = manifests[0]
    elif path.suffix == ".vmfb":
        candidate = path.with_name(path.stem + ".manifest.json")
        if not candidate.exists():
            raise ArtifactError(f"{path}: no manifest beside it ({candidate.name}); compile it with npukit")
        path = candidate
    if not path.exists():
        raise ArtifactError(f"{path}: no such artifact")
    try:
        manifest = read_manifest(path)
    except (ValueError, json.JSONDecodeError, KeyError) as e:
        raise ArtifactError(f"{path}: not a readable npukit manifest: {e}") from None
    result = CompileResult(directory=path.parent, manifest_path=path, manifest=manifest)
    missing = [str(p) for p in result.files.values() if not p.exists()]
    if missing:
        raise ArtifactError(f"{path}: artifact files are missing: {', '.join(missing)}")
    return result
