"""Compact executable-library tables for static libraries.

IREE's static library carries its executable library (the ABI of
iree/hal/local/executable_library.h) as IREE's LLVM backend lays it out: a
64-byte attribute record per export whatever it holds, and the export names.
npukit's runtime is the only reader of a static library, and with
attributes that hold nothing but the defaults (no workgroup-local memory,
workgroups of 1 x 1 x 1, no push constants, no parameters, no flags) it
needs only the function pointers and the names: the ABI allows the
attribute table to be absent (NULL: every export has the defaults; the
binding count then comes from the dispatch alone). A model with 13 exports
spends 832 B of flash on records that say nothing else.

``compact_library_tables`` reads IREE's tables from the relocatable object
(their sections and relocations: the export functions in order, the names,
the attributes, the constant count, the header's features), writes the same
library without what it does not need as a C file compiled with the
target's GCC, links it into the object under the library's query name and
drops IREE's query function and tables (``ld -r --gc-sections`` with the
new query as the only root). An object whose tables do not read as
expected, or whose attributes say more than the defaults, keeps IREE's
tables, with the reason returned.

``leave_out`` names exports the new table does not have: in a mynpu build
the exports the NPU runs, whose CPU functions are empty (the mynpu-v1
executable names them itself and the runtime finds them there first,
npukit.passes.mynpu_partition). Nothing then references their functions, and
the relocatable link's garbage collection drops them with their pointers and
names.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable

from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection

from npukit.errors import ToolchainError
from npukit.targets.cpu_presets import CpuPreset

ATTRS_BYTES = 64  # sizeof(iree_hal_executable_dispatch_attrs_v0_t)
# iree_hal_executable_dispatch_attrs_v0_t: flags (u64), local_memory_pages
# (u16), constant_count (u8), binding_count (u8), workgroup_size_x/y (u32),
# workgroup_size_z (u16), parameter_count (u16), reserved (5 x u64).
_BINDING_COUNT_OFFSET = 11
_WORKGROUP_SIZE = struct.Struct("<IIH")
_WORKGROUP_SIZE_OFFSET = 12
LIBRARY_VERSION = 6  # IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST of IREE 3.13


@dataclass(frozen=True)
class LibraryTables:
    """What IREE's tables of one static library say."""

    query: str  # the query function, "<library>_library_query"
    library_name: str  # the header's name
    functions: tuple[str, ...]  # the export functions' symbols, in ordinal order
    names: tuple[str, ...]  # the export names, in ordinal order
    attrs: tuple[bytes, ...]  # each export's 64-byte attribute record
    constant_count: int
    features: int
    sanitizer: int


def _default_attrs(record: bytes) -> bool:
    """An attribute record that says no more than a NULL table: only the
    binding count (the dispatch gives it) and workgroup sizes of 0 or 1."""
    rest = bytearray(record)
    rest[_BINDING_COUNT_OFFSET] = 0
    x, y, z = _WORKGROUP_SIZE.unpack_from(rest, _WORKGROUP_SIZE_OFFSET)
    if max(x, y, z) > 1:
        return False
    rest[_WORKGROUP_SIZE_OFFSET:_WORKGROUP_SIZE_OFFSET + _WORKGROUP_SIZE.size] = bytes(_WORKGROUP_SIZE.size)
    return not any(rest)


class _Object:
    def __init__(self, elf: ELFFile):
        self.elf = elf
        self.pointer = 8 if elf.elfclass == 64 else 4
        self.little = elf.little_endian
        self.symtab = elf.get_section_by_name(".symtab")
        self.relocations = {}
        for section in elf.iter_sections():
            if isinstance(section, RelocationSection):
                self.relocations[elf.get_section(section["sh_info"]).name] = section

    def section(self, name: str):
        section = self.elf.get_section_by_name(name)
        if section is None:
            raise ValueError(f"no section {name}")
        return section

    def word(self, data: bytes, offset: int, size: int) -> int:
        return int.from_bytes(data[offset:offset + size], "little" if self.little else "big")

    def targets(self, name: str) -> list[tuple[int, object, int]]:
        """(offset, symbol, addend) of each relocation in section ``name``, by offset."""
        section = self.section(name)
        relocations = self.relocations.get(name)
        if relocations is None:
            return []
        data = section.data()
        out = []
        for r in relocations.iter_relocations():
            addend = r["r_addend"] if r.is_RELA() else self.word(data, r["r_offset"], self.pointer)
            out.append((r["r_offset"], self.symtab.get_symbol(r["r_info_sym"]), addend))
        return sorted(out, key=lambda t: t[0])

    def function(self, symbol, addend: int) -> str:
        """The function a pointer relocation addresses: its symbol, or a
        section symbol plus the function's offset (x86-64 objects)."""
        if symbol["st_info"]["type"] == "STT_FUNC" and not addend:
            return symbol.name
        if symbol["st_info"]["type"] == "STT_SECTION":
            found = [s.name for s in self.symtab.iter_symbols() if s["st_info"]["type"] == "STT_FUNC"
                     and s["st_shndx"] == symbol["st_shndx"] and s["st_value"] == addend]
            if len(found) == 1:
                return found[0]
        raise ValueError("an export pointer is not a function's address")

    def string(self, symbol, addend: int) -> str:
        section = self.elf.get_section(symbol["st_shndx"])
        data = section.data()
        start = symbol["st_value"] + addend
        end = data.index(b"\0", start)
        return data[start:end].decode()


def read_library_tables(path: Path) -> LibraryTables:
    """IREE's executable-library tables in the static library ``path``."""
    with path.open("rb") as f:
        obj = _Object(ELFFile(f))
        queries = [s.name for s in obj.symtab.iter_symbols()
                   if s.name.endswith("_library_query") and s["st_info"]["bind"] == "STB_GLOBAL"
                   and s["st_shndx"] != "SHN_UNDEF"]
        if len(queries) != 1:
            raise ValueError(f"{len(queries)} library query functions")
        query = queries[0]
        v0 = f"{query}_v0"
        ptr = obj.pointer
        library = obj.section(f".data.rel.ro.{v0}").data()
        # iree_hal_executable_library_v0_t: header, imports {count, symbols},
        # exports {count, ptrs, attrs, params, occupancy, names, tags,
        # parameter_names, source_locations, stage_locations}, constants
        # {count}, sources {count, files}.
        imports_count = obj.word(library, ptr, 4)
        exports_at = 3 * ptr
        export_count = obj.word(library, exports_at, 4)
        constants_at = exports_at + 10 * ptr
        if len(library) != constants_at + 3 * ptr:
            raise ValueError(f"a library record of {len(library)} bytes")
        if imports_count:
            raise ValueError(f"{imports_count} imports")
        referenced = {offset: symbol.name for offset, symbol, _ in obj.targets(f".data.rel.ro.{v0}")}
        fields = {exports_at + ptr: "ptrs", exports_at + 2 * ptr: "attrs", exports_at + 5 * ptr: "names"}
        unknown = [offset for offset in referenced if offset not in fields and offset != 0]
        if unknown:
            raise ValueError(f"library fields at offsets {unknown} are set (tags, locations or sources)")
        functions = [obj.function(symbol, addend) for _, symbol, addend in obj.targets(f".data.rel.ro.{v0}_funcs")]
        names = [obj.string(symbol, addend) for _, symbol, addend in obj.targets(f".data.rel.ro.{v0}_names")]
        attrs_data = obj.section(f".rodata.{v0}_attrs").data() if exports_at + 2 * ptr in referenced else b""
        attrs = [attrs_data[i:i + ATTRS_BYTES] for i in range(0, len(attrs_data), ATTRS_BYTES)]
        if not (len(functions) == len(names) == export_count) or (attrs and len(attrs) != export_count):
            raise ValueError(f"{export_count} exports, {len(functions)} functions, {len(names)} names, "
                             f"{len(attrs)} attribute records")
        header = obj.section(f".data.rel.ro.{v0}_header").data()
        ((offset, header_name, addend),) = obj.targets(f".data.rel.ro.{v0}_header")
        if offset != ptr:
            raise ValueError("the header's name is not where the ABI puts it")
        return LibraryTables(
            query=query,
            library_name=obj.string(header_name, addend),
            functions=tuple(functions),
            names=tuple(names),
            attrs=tuple(attrs),
            constant_count=obj.word(library, constants_at, 4),
            features=obj.word(header, 2 * ptr, 4),
            sanitizer=obj.word(header, 2 * ptr + 4, 4),
        )


def _c_string(text: str) -> str:
    return '"' + "".join(c if c.isalnum() or c in "_-. " else f"\\{ord(c):03o}" for c in text) + '"'


def library_source(tables: LibraryTables) -> str:
    """The C of the compact library: the same exports, names and constant
    count, no attribute table, nothing else."""
    count = len(tables.functions)
    lines = [
        "// The executable library of a static library, rewritten by npukit",
        "// (npukit/cpu/library_tables.py): IREE's exports without their",
        "// attribute records, which held only the defaults.",
        '#include "iree/hal/local/executable_library.h"',
        "",
    ]
    for f in tables.functions:
        lines.append(f"int {f}(const iree_hal_executable_environment_v0_t*, "
                     "const iree_hal_executable_dispatch_state_v0_t*, const iree_hal_executable_workgroup_state_v0_t*);")
    # A library of no exports (the NPU runs them all) keeps one null entry of each table, never read.
    lines.append(f"static const iree_hal_executable_dispatch_v0_t funcs[{max(count, 1)}] = {{"
                 + (", ".join(tables.functions) or "0") + "};")
    lines.append(f"static const char* const names[{max(count, 1)}] = {{"
                 + (", ".join(_c_string(n) for n in tables.names) or "0") + "};")
    lines += [
        "static const iree_hal_executable_library_header_t header = {",
        f"    {LIBRARY_VERSION}u, {_c_string(tables.library_name)}, {tables.features}u, "
        f"(iree_hal_executable_library_sanitizer_kind_t){tables.sanitizer}}};",
        "static const iree_hal_executable_library_v0_t library = {",
        "    &header, {0, 0},",
        f"    {{{count}u, funcs, 0, 0, 0, names, 0, 0, 0, 0}},",
        f"    {{{tables.constant_count}u}}, {{0, 0}}}};",
        f"const iree_hal_executable_library_header_t** {tables.query}(",
        "    iree_hal_executable_library_version_t max_version, const iree_hal_executable_environment_v0_t* environment) {",
        "  (void)environment;",
        f"  return max_version == {LIBRARY_VERSION}u ? (const iree_hal_executable_library_header_t**)&library : 0;",
        "}",
        "",
    ]
    return "\n".join(lines)


def without_exports(tables: LibraryTables, leave_out: Iterable[str]) -> LibraryTables:
    """``tables`` without the exports named in ``leave_out`` (every one of
    which must be there), the others keeping their order."""
    leave_out = set(leave_out)
    missing = leave_out - set(tables.names)
    if missing:
        raise ValueError(f"no exports named {', '.join(sorted(missing))} to leave out")
    kept = [i for i, name in enumerate(tables.names) if name not in leave_out]
    return replace(tables, functions=tuple(tables.functions[i] for i in kept),
                   names=tuple(tables.names[i] for i in kept),
                   attrs=tuple(tables.attrs[i] for i in kept) if tables.attrs else ())


def compact_library_tables(static_library: Path, preset: CpuPreset, leave_out: Iterable[str] = ()) -> str | None:
    """Replaces IREE's tables in ``static_library`` (in place) by the compact
    ones, without the exports named in ``leave_out``; returns why not when it
    keeps IREE's (every export then stays)."""
    from npukit.cpu.archive_build import binutil, gcc_for, preset_cflags, run_tool
    from npukit.runtime.sources import include_dirs, runtime_source_root

    try:
        tables = read_library_tables(static_library)
    except (ValueError, KeyError, StopIteration) as e:
        return f"IREE's library tables were not read: {e}"
    if any(not _default_attrs(a) for a in tables.attrs):
        return "an export's attributes differ from the defaults"
    try:
        tables = without_exports(tables, leave_out)
    except ValueError as e:
        return f"IREE's library tables do not match the exports to leave out: {e}"
    work = static_library.with_name(static_library.name + ".tables")
    source, table_object, renamed, linked = (work.with_suffix(s) for s in (".c", ".o", ".iree.o", ".linked.o"))
    try:
        source.write_text(library_source(tables))
        run_tool([gcc_for(preset), *preset_cflags(preset), "-std=c11", "-ffreestanding", "-Os", "-ffunction-sections", "-fdata-sections",
                  *(f"-I{d}" for d in include_dirs(runtime_source_root())), "-c", str(source), "-o", str(table_object)])
        objcopy = binutil(preset, "objcopy")
        # IREE's query gives its name to the new one; its functions become
        # global for the new table to reference them (made local again by the
        # caller, like every symbol but the query).
        run_tool([objcopy, f"--redefine-sym={tables.query}={tables.query}_iree", str(static_library), str(renamed)])
        run_tool([objcopy, f"--localize-symbol={tables.query}_iree",
                  *(f"--globalize-symbol={f}" for f in tables.functions), str(renamed)])
        run_tool([gcc_for(preset), *preset_cflags(preset), "-nostdlib", "-r", "-Wl,-z,noexecstack", "-Wl,--gc-sections",
                  f"-Wl,--undefined={tables.query}", "-o", str(linked), str(renamed), str(table_object)])
        os.replace(linked, static_library)
    except ToolchainError as e:
        # objcopy can leave a symbol table the linker refuses (a globalized local after the globals, seen
        # on a one-dispatch library): IREE's tables stay, which are correct, only larger.
        detail = " ".join(str(e).split())
        return f"the compact tables did not link ({detail[-160:]})"
    finally:
        for p in (source, table_object, renamed, linked):
            p.unlink(missing_ok=True)
    return None
