"""``explore.json`` (every configuration with its layers) and
``explore.csv`` (the same columns without the layers, ``cycles_by_operation``
spread over ``npu_<OP>`` / ``cpu_<OP>`` columns)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from npukit.mynpu.operation_kind import KINDS, LABELS

COLUMNS = ("label", "pes", "sram_kib", "parallel", "depthwise", "dma_bytes_per_cycle", "clock_mhz", "npu_cycles",
           "cpu_cycles", "total_us", "npu_mac_share", "utilisation", "sram_peak", "dma_bytes", "npu_dispatches",
           "macs", "npu_macs")


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def write_json(path: Path, document: dict) -> None:
    _write(path, json.dumps(document, indent=1) + "\n")


def csv_rows(configurations: list[dict]) -> tuple[list[str], list[list]]:
    used = [LABELS[k] for k in KINDS]
    sides = [(side, label) for side in ("npu", "cpu") for label in used
             if any(label in c["cycles_by_operation"][side] for c in configurations)]
    header = [*COLUMNS, *(f"{side}_{label}" for side, label in sides)]
    rows = [[c[k] for k in COLUMNS] + [c["cycles_by_operation"][side].get(label, 0) for side, label in sides]
            for c in configurations]
    return header, rows


def write_csv(path: Path, configurations: list[dict]) -> None:
    header, rows = csv_rows(configurations)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    tmp.replace(path)
