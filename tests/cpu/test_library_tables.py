"""Static libraries carry compact executable-library tables
(npukit/cpu/library_tables.py): IREE's 64-byte attribute record per export
and its table layout are replaced by function pointers, names and a header,
when the attributes hold only the defaults; otherwise IREE's tables stay."""

from __future__ import annotations

import struct
import subprocess

import pytest
from elftools.elf.elffile import ELFFile

from npukit.cpu.library_tables import ATTRS_BYTES, _default_attrs, compact_library_tables, library_source, \
    LibraryTables, without_exports
from npukit.targets.cpu_presets import get_preset


def _attrs(flags=0, pages=0, constants=0, bindings=0, x=0, y=0, z=0, parameters=0) -> bytes:
    record = struct.pack("<QHBBIIHH", flags, pages, constants, bindings, x, y, z, parameters)
    return record + bytes(ATTRS_BYTES - len(record))


def test_only_default_attributes_are_dropped():
    assert _default_attrs(_attrs())
    assert _default_attrs(_attrs(bindings=3, x=1, y=1, z=1))
    for nondefault in (_attrs(flags=1), _attrs(pages=1), _attrs(constants=1), _attrs(x=4, y=1, z=1),
                       _attrs(z=2), _attrs(parameters=1), _attrs() [:-1] + b"\1"):
        assert not _default_attrs(nondefault)


def test_library_source_keeps_exports_names_and_constants():
    tables = LibraryTables("m_linked_library_query", "m_linked", ("main_dispatch_0", "main_dispatch_1"),
                           ("main_dispatch_0", "main_dispatch_1"), (_attrs(bindings=2),) * 2, 3, 0, 0)
    source = library_source(tables)
    assert "{2u, funcs, 0, 0, 0, names, 0, 0, 0, 0}" in source  # no attribute table
    assert '{"main_dispatch_0", "main_dispatch_1"}' in source and "{3u}" in source
    assert "m_linked_library_query(" in source and '"m_linked"' in source


def test_exports_left_out_keep_the_others_in_order(tmp_path):
    """A mynpu build's library leaves out the exports the NPU runs; one that
    leaves them all out still compiles (one null entry per table, count 0)."""
    from npukit.runtime.sources import include_dirs, runtime_source_root

    tables = LibraryTables("m_linked_library_query", "m_linked", ("f0", "f1", "f2"), ("d0", "d1", "d2"),
                           (_attrs(bindings=1), _attrs(bindings=2), _attrs(bindings=3)), 0, 0, 0)
    kept = without_exports(tables, ["d1"])
    assert kept.functions == ("f0", "f2") and kept.names == ("d0", "d2")
    assert kept.attrs == (_attrs(bindings=1), _attrs(bindings=3))
    assert '{"d0", "d2"}' in library_source(kept) and "f1" not in library_source(kept)
    with pytest.raises(ValueError, match="d7"):
        without_exports(tables, ["d0", "d7"])
    none = without_exports(tables, tables.names)
    source = tmp_path / "none.c"
    source.write_text(library_source(none))
    assert "{0u, funcs, 0, 0, 0, names, 0, 0, 0, 0}" in source.read_text()
    subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", *(f"-I{d}" for d in include_dirs(runtime_source_root())),
                    "-c", str(source), "-o", str(tmp_path / "none.o")], check=True)


def test_an_object_without_iree_tables_is_left_alone(tmp_path):
    source = tmp_path / "other.c"
    source.write_text("int other_library_query(void) { return 1; }\n")
    obj = tmp_path / "other.o"
    subprocess.run(["cc", "-c", str(source), "-o", str(obj)], check=True)
    before = obj.read_bytes()
    reason = compact_library_tables(obj, get_preset("host"))
    assert reason and "not read" in reason
    assert obj.read_bytes() == before


@pytest.mark.parametrize("target", ["cortex-m4", "rv32imf", "host"])
def test_static_library_tables_are_compact(target, shared_models, artifact_cache):
    """kws_int8: 16 exports. IREE's tables (64 B of attributes per export,
    names as separate strings) are gone; what is left is 4 B of pointer and 4
    B of name pointer per export (8 B each on the host), the short names, a
    16 B header and the library record, and the object still exports only
    the query function."""
    result = artifact_cache(shared_models / "kws_int8.tflite", target, "static")
    lib = result.path("static_library")
    query = f"{result.name}_linked_library_query"
    with lib.open("rb") as f:
        elf = ELFFile(f)
        sections = {s.name: s.data_size for s in elf.iter_sections()}
        symbols = list(elf.get_section_by_name(".symtab").iter_symbols())
    assert not [s for s in sections if "_attrs" in s or "__unnamed" in s or query + "_v0" in s], sorted(sections)
    exported = {s.name for s in symbols if s["st_info"]["bind"] == "STB_GLOBAL" and s["st_shndx"] != "SHN_UNDEF"}
    assert exported == {query}
    exports = len(result.dispatches)
    pointer = 8 if target == "host" else 4

    def table(name: str) -> int:  # .rodata.NAME, or .data.rel.ro[.local].NAME in position-independent code
        (size,) = [sections[s] for s in (f".rodata.{name}", f".data.rel.ro.{name}", f".data.rel.ro.local.{name}")
                   if s in sections]
        return size

    assert table("funcs") == table("names") == pointer * exports
    assert table("library") == 16 * pointer
    # The names are the short ones (d0, d1, ...: npukit.passes.short_export_names).
    names = sum(len(short) + 1 for short in result.manifest["export_names"])
    assert len(result.manifest["export_names"]) == exports
    strings = sum(size for name, size in sections.items() if name.startswith(".rodata.str"))
    assert strings <= names + len(result.name) + 32
