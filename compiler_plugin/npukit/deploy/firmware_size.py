"""Where a firmware's bytes come from, read from its GNU ld map file.

Every input section the linker kept is attributed to the file it came from,
and files to parts: the model's code (its executables and its vm-c module's
code), the model's constants (the rodata of both: weights, biases,
quantization tables), npukit's runtime, the mynpu simulator (which stands in
for the NPU and its driver), the board support and the C library.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

_INPUT_SECTION = re.compile(r"^ (\.(?:text|rodata|srodata|data|sdata|bss|sbss|got)\S*)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S.*)$")
_NAME_ONLY = re.compile(r"^ (\.(?:text|rodata|srodata|data|sdata|bss|sbss|got)\S*)$")
_CONTINUATION = re.compile(r"^\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S.*)$")
# The mynpu simulator's objects, members of npukit's HAL library.
_NPU_SIMULATOR = re.compile(r"libnpukit_hal\.a\((?:stream|simulator_backend)\.c\.o(?:bj)?\)$")
_KINDS = {"text": "text", "rodata": "rodata", "srodata": "rodata", "data": "data", "sdata": "data", "got": "data",
          "bss": "bss", "sbss": "bss"}


def map_sections(map_text: str) -> list[tuple[str, str, int]]:
    """(kind: text/rodata/data/bss, input file, bytes) of every kept input section."""
    start = map_text.find("Linker script and memory map")
    lines = map_text[start:].splitlines() if start >= 0 else []
    out: list[tuple[str, str, int]] = []
    pending = None
    for line in lines:
        if pending:
            m = _CONTINUATION.match(line)
            if m:
                out.append((pending, m.group(2), int(m.group(1), 16)))
            pending = None
            continue
        m = _INPUT_SECTION.match(line)
        if m:
            out.append((m.group(1), m.group(3), int(m.group(2), 16)))
            continue
        m = _NAME_ONLY.match(line)
        if m:
            pending = m.group(1)
    return [(_kind(section), path, size) for section, path, size in out if size]


def _kind(section: str) -> str:
    # The boards' linker scripts put .data.rel.ro (address tables, read-only
    # once linked) with the constants.
    if section == ".data.rel.ro" or section.startswith(".data.rel.ro."):
        return "rodata"
    return _KINDS[section.split(".")[1]]


@dataclass
class PartSize:
    text: int = 0
    rodata: int = 0
    data: int = 0
    bss: int = 0

    @property
    def flash(self) -> int:
        return self.text + self.rodata + self.data  # .data's initial values live in flash too


@dataclass
class FirmwareSize:
    parts: dict[str, PartSize] = field(default_factory=dict)

    def part(self, name: str) -> PartSize:
        return self.parts.setdefault(name, PartSize())

    def total(self, kind: str) -> int:
        return sum(getattr(p, kind) for p in self.parts.values())


def classify_by_path(model_name: str) -> Callable[[str], str]:
    """The part a linked input file belongs to, for a firmware built by
    firmware_project (objects keep their source paths in CMake's build tree)."""

    def classify(path: str) -> str:
        base = path.split("(")[0]
        name = Path(base).name
        if _NPU_SIMULATOR.search(path):
            return "npu simulator"
        if "/emitc_vm/" in base or "/hal_driver/" in base or name in ("libnpukit_emitc_vm.a", "libnpukit_hal.a"):
            return "runtime"
        if "/bare_metal/" in base or name == "libnpukit_board.a":
            return "board"
        if name.startswith(f"{model_name}_executables") or f"/model/{model_name}_" in base:
            return "model"
        if "/app/" in base:
            return "application"
        return "C library"

    return classify


def firmware_size(map_file: Path, classify: Callable[[str], str]) -> FirmwareSize:
    size = FirmwareSize()
    for kind, path, nbytes in map_sections(map_file.read_text()):
        part = size.part(classify(path))
        setattr(part, kind, getattr(part, kind) + nbytes)
    return size


@dataclass
class FlashSplit:
    """Flash (text + rodata) as the deploy table shows it."""

    model_code: int
    constants: int
    runtime: int
    other: int  # board support, application and C library
    npu_simulator: int = 0  # stands in for the NPU (and its driver) with --npu

    @property
    def total(self) -> int:
        return self.model_code + self.constants + self.runtime + self.other + self.npu_simulator


def flash_split(size: FirmwareSize) -> FlashSplit:
    model = size.parts.get("model", PartSize())
    runtime = size.parts.get("runtime", PartSize())
    simulator = size.parts.get("npu simulator", PartSize())
    other = sum(p.text + p.rodata for name, p in size.parts.items() if name not in ("model", "runtime", "npu simulator"))
    return FlashSplit(model.text, model.rodata, runtime.text + runtime.rodata, other,
                      simulator.text + simulator.rodata)
