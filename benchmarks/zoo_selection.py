"""The zoo's models the benchmarks measure (for the NPU and kernel ones: the
int8 .tflite models, recurrent ones excluded), optionally narrowed to named
ones."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "tests") not in sys.path:
    sys.path.insert(0, str(REPO / "tests"))


def zoo_models(model_format: str, keep, selected: set[str] | None = None) -> list:
    """(name, record) of every zoo model of ``model_format`` whose record
    ``keep`` accepts, or of those whose name or stem is in ``selected``."""
    from zoo.catalogue import entries, read_record

    found = []
    for entry in entries():
        if entry.format != model_format or (selected and not {entry.name, Path(entry.name).stem} & selected):
            continue
        record = read_record(entry)
        if keep(record):
            found.append((entry.name, record))
    return found


def int8_tflite_models(selected: set[str] | None = None) -> list:
    """(name, record) of every int8, non-recurrent .tflite zoo model, or of
    those whose name or stem is in ``selected``."""
    return zoo_models("tflite", lambda record: record.arithmetic == "int8" and not record.recurrent, selected)
