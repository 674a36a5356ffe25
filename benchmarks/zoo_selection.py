"""The zoo's int8 .tflite models the NPU and kernel benchmarks measure
(recurrent models excluded), optionally narrowed to named ones."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "tests") not in sys.path:
    sys.path.insert(0, str(REPO / "tests"))


def int8_tflite_models(selected: set[str] | None = None) -> list:
    """(name, record) of every int8, non-recurrent .tflite zoo model, or of
    those whose name or stem is in ``selected``."""
    from zoo.catalogue import entries, read_record

    found = []
    for entry in entries():
        if entry.format != "tflite" or (selected and not {entry.name, Path(entry.name).stem} & selected):
            continue
        record = read_record(entry)
        if record.arithmetic == "int8" and not record.recurrent:
            found.append((entry.name, record))
    return found
