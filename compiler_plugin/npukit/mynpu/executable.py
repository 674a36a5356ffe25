"""Writing ``mynpu-v1`` executables (docs/mynpu-isa.md, "The mynpu-v1
executable"). Reading and validating them is the C device's job:
``npukit.mynpu.simulator.validate_executable`` calls it."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from npukit.mynpu.isa import PARALLELISM_CODES, HardwareConfig

FORMAT = "mynpu-v1"
MAGIC = b"MNPU"
# 1.1: short commands, three-dimensional DMA, exports named by hash; 1.2: 16-byte
# exports (the binding table after the stream), registers reset to isa.REGISTER_DEFAULTS.
VERSION = (1, 2)
HEADER_BYTES = 64
EXPORT_BYTES = 16
MAX_BINDINGS = 8
HOST_CODE_ALIGNMENT = 64  # as IREE aligns executables in a module
#: Host code that is a name (a static library's), not code: 8-byte aligned,
#: the least the format requires.
NAMED_HOST_FORMATS = ("static",)
NAMED_HOST_CODE_ALIGNMENT = 8


@dataclass(frozen=True)
class Export:
    """One entry point: its command stream and the minimum size of each of
    its bindings (the dispatch's buffers, in the export's binding order)."""

    name: str
    stream: bytes
    binding_sizes: tuple[int, ...]


def name_hash(name: str) -> int:
    """The 32-bit FNV-1a hash of an export's name (docs/mynpu-isa.md)."""
    h = 2166136261
    for byte in name.encode():
        h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return h


@dataclass
class Executable:
    """NPU exports, their constants, and optionally the CPU code of the
    executable's other dispatches (``host_code`` in ``host_format``: an
    embedded ELF, or the name of a static library in format ``static``;
    npukit's runtime runs those exports from it)."""

    config: HardwareConfig
    exports: list[Export] = field(default_factory=list)
    constants: bytes = b""
    host_format: str = ""
    host_code: bytes = b""
    #: Store the name of each export the host code has too (``host_names``,
    #: every export name of the host code) as its hash, the string being the
    #: host code's; only where no two of the names share a hash. The other
    #: exports' names are stored.
    hashed_names: bool = False
    host_names: tuple[str, ...] = ()

    def to_bytes(self) -> bytes:
        if len({e.name for e in self.exports}) != len(self.exports):
            raise ValueError("mynpu-v1 export names must be unique")
        if any(len(e.binding_sizes) > MAX_BINDINGS for e in self.exports):
            raise ValueError(f"a mynpu-v1 export has at most {MAX_BINDINGS} bindings")
        names = {e.name for e in self.exports} | set(self.host_names)
        hashing = (self.hashed_names and bool(self.host_code)
                   and len({name_hash(n) for n in names}) == len(names))
        body = bytearray()
        at = HEADER_BYTES + EXPORT_BYTES * len(self.exports)

        def place(data: bytes, alignment: int = 4) -> int:
            nonlocal at
            pad = -(at + len(body)) % alignment
            body.extend(b"\0" * pad)
            offset = at + len(body)
            body.extend(data)
            return offset

        # The 4-byte aligned parts first (streams, binding tables, constants),
        # then the strings (stored names, the host format) packed without
        # padding, then the host code.
        placed = [(place(export.stream),
                   place(struct.pack(f"<{len(export.binding_sizes)}I", *export.binding_sizes)))
                  for export in self.exports]
        constants_at = place(self.constants)
        table = bytearray()
        for export, (stream_at, sizes_at) in zip(self.exports, placed):
            assert sizes_at == stream_at + len(export.stream)  # where version 1.2 reads the binding table
            hashed = hashing and export.name in self.host_names
            name = b"" if hashed else export.name.encode()
            if len(name) > 0xFFFF:
                raise ValueError(f"a mynpu-v1 export name of {len(name)} bytes (at most 65535)")
            name_ref = place(name, 1) if name else name_hash(export.name)
            table += struct.pack("<IHBBII", name_ref, len(name), len(export.binding_sizes), 0, stream_at,
                                 len(export.stream))
        if bool(self.host_format) != bool(self.host_code):
            raise ValueError("host code needs its format name, and a format name needs host code")
        host_format = self.host_format.encode()
        format_at = place(host_format, 1)
        host_at = place(self.host_code, NAMED_HOST_CODE_ALIGNMENT if self.host_format in NAMED_HOST_FORMATS
                        else HOST_CODE_ALIGNMENT)
        total = at + len(body)
        c = self.config
        header = MAGIC + struct.pack("<HHI6I3I4I", VERSION[0], VERSION[1], total, c.pes, c.sram_bytes,
                                     PARALLELISM_CODES[c.parallelism], c.dma_bytes_per_cycle, c.clock_mhz,
                                     c.instruction_mask, len(self.exports), constants_at, len(self.constants),
                                     format_at, len(host_format), host_at, len(self.host_code))
        assert len(header) == HEADER_BYTES
        return bytes(header + table + body)
