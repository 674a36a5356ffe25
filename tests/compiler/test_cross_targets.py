"""The MLPerf Tiny models compiled for Cortex-M4 and RV32IMF, static and embedded.

The objects must be for the right machine, class and float ABI, and complete:
a static library leaves only C-library routines for the firmware link, an
embedded ELF has no undefined symbols at all (the loader links nothing).
"""

from __future__ import annotations

import pytest

from npukit.elf_info import read_elf
from npukit.targets.cpu_presets import get_preset
from support.elf_checks import assert_elf_matches, symbol_relocations, undefined_symbols
from support.models import MLPERF_MODELS

TARGETS = ("cortex-m4", "rv32imf")
INLINE_IMPORTS = (
    "hal_inline.buffer.allocate",
    "hal_inline.buffer_view.create",
    "hal_loader.executable.load",
    "hal_loader.executable.dispatch",
)
# What a static library may leave to the firmware's C library and libgcc.
LIBC_SYMBOLS = {"fminf", "fmaxf", "floorf", "roundf", "roundevenf", "expf", "logf", "sqrtf", "memcpy", "memset"}


def _vm_module_checks(result) -> None:
    c_text = result.path("vm_module_c").read_text()
    h_text = result.path("vm_module_h").read_text()
    assert f"iree_status_t {result.name}_create(" in h_text
    assert c_text.startswith("//") and "#define EMITC_IMPLEMENTATION" in c_text
    for name in INLINE_IMPORTS:
        assert f'"{name}"' in c_text, f"inline-dynamic module should import {name}"
    assert '"hal.command_buffer' not in c_text
    # IREE 3.13 drops the constants of inline-dynamic modules; npukit keeps them
    # (passes/keep_constant_globals.py) as a rodata array that __init stores.
    assert f"{result.name}__const[]" in c_text


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", MLPERF_MODELS, ids=lambda m: m.name)
def test_static_library(model, target, shared_models, artifact_cache):
    result = artifact_cache(shared_models / f"{model.name}.onnx", target, "static")
    preset = get_preset(target)
    assert result.manifest["execution_model"] == "inline-dynamic"
    _vm_module_checks(result)
    lib = result.path("static_library")
    assert_elf_matches(lib, preset, "ET_REL")
    query = f"{result.name}_linked_library_query"
    assert query in result.path("static_library_h").read_text()
    with lib.open("rb") as f:
        from elftools.elf.elffile import ELFFile

        elf = ELFFile(f)
        defined = {s.name for s in elf.get_section_by_name(".symtab").iter_symbols() if s["st_shndx"] != "SHN_UNDEF"}
        sections = [s.name for s in elf.iter_sections()]
    assert query in defined
    # Built without debug symbols: IREE's library has no source-location and
    # stage-location tables (24 B per export and their strings in flash),
    # which npukit's runtime never reads (and its other tables are replaced:
    # tests/cpu/test_library_tables.py).
    tables = [s for s in sections if "source_locations" in s or "stage_location" in s or "stage_names" in s]
    assert not tables, tables
    leftover = {s for s in undefined_symbols(lib, dynamic=False) if not s.startswith("__")}
    assert leftover <= LIBC_SYMBOLS, f"unexpected undefined symbols: {sorted(leftover - LIBC_SYMBOLS)}"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", MLPERF_MODELS, ids=lambda m: m.name)
def test_embedded_elf(model, target, shared_models, artifact_cache):
    result = artifact_cache(shared_models / f"{model.name}.onnx", target, "embedded")
    preset = get_preset(target)
    _vm_module_checks(result)
    elf = result.path("embedded_executable")
    assert_elf_matches(elf, preset, "ET_DYN")
    assert undefined_symbols(elf, dynamic=True) == []
    assert symbol_relocations(elf) == []
    described = result.manifest["files"]["embedded_executable"]["elf"]
    assert described == read_elf(elf).to_json()
    # The ELF is also inside the vm-c module as rodata.
    assert result.manifest["files"]["vm_module_c"]["bytes"] > elf.stat().st_size
