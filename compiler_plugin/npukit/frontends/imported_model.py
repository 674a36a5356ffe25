"""A model made ready for IREE: MLIR (text, bytecode or in-memory) plus what the
frontend knows about its entry points."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from iree.compiler.api import Session, Source

from npukit.errors import ModelError
from npukit.frontends.model_format import ModelFormat
from npukit.frontends.signature import EntryPoint


@dataclass
class ImportedModel:
    path: Path
    format: ModelFormat
    name: str
    # MLIR bytecode or text produced by a frontend; None means read ``path``.
    mlir: bytes | None = None
    # Entry points as the frontend saw them (names and signed dtypes); None
    # when they are read from the MLIR itself.
    entry_points: list[EntryPoint] | None = None
    notes: list[str] = field(default_factory=list)
    # For ONNX models: (op_type, node name, outputs) of
    # every graph node, to name the node an error is about.
    onnx_nodes: list[tuple[str, str, list[str]]] = field(default_factory=list)
    # iree-compile flags the imported program needs (added before the caller's).
    iree_flags: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """Everything but the MLIR itself (which travels as a file)."""
        return {
            "path": str(self.path),
            "format": self.format.value,
            "name": self.name,
            "entry_points": None if self.entry_points is None else [e.to_json() for e in self.entry_points],
            "notes": list(self.notes),
            "onnx_nodes": [[t, n, list(o)] for t, n, o in self.onnx_nodes],
            "iree_flags": list(self.iree_flags),
        }

    @staticmethod
    def from_json(d: dict, mlir: bytes | None) -> "ImportedModel":
        entries = d["entry_points"]
        return ImportedModel(
            path=Path(d["path"]),
            format=ModelFormat(d["format"]),
            name=d["name"],
            mlir=mlir,
            entry_points=None if entries is None else [EntryPoint.from_json(e) for e in entries],
            notes=list(d["notes"]),
            onnx_nodes=[(t, n, list(o)) for t, n, o in d["onnx_nodes"]],
            iree_flags=list(d["iree_flags"]),
        )

    def open_source(self, session: Session) -> Source:
        if self.mlir is None:
            try:
                return Source.open_file(session, str(self.path))
            except ValueError as e:
                raise ModelError(f"{self.path}: cannot open: {e}") from None
        return Source.wrap_buffer(session, self.mlir)

