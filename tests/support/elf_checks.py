"""Checks that compiled executables are what their target needs."""

from __future__ import annotations

from pathlib import Path

from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection

from npukit.elf_info import read_elf
from npukit.targets.cpu_presets import CpuPreset


def assert_elf_matches(path: Path, preset: CpuPreset, elf_type: str) -> None:
    info = read_elf(path)
    assert info.machine == preset.elf_machine, f"{path.name}: machine {info.machine}, want {preset.elf_machine}"
    assert info.elf_class == preset.elf_class, f"{path.name}: ELF{info.elf_class}, want ELF{preset.elf_class}"
    assert info.type == elf_type, f"{path.name}: {info.type}, want {elf_type}"
    assert info.float_abi == preset.elf_float_abi, (
        f"{path.name}: float ABI {info.float_abi!r}, want {preset.elf_float_abi!r}"
    )
    assert info.sizes["text"] > 0


def undefined_symbols(path: Path, dynamic: bool) -> list[str]:
    with path.open("rb") as f:
        elf = ELFFile(f)
        table = elf.get_section_by_name(".dynsym" if dynamic else ".symtab")
        if table is None:
            return []
        return sorted(
            s.name for s in table.iter_symbols() if s.name and s["st_shndx"] == "SHN_UNDEF"
        )


def symbol_relocations(path: Path) -> list[str]:
    """Dynamic relocations that name a symbol (they need a lookup at load time)."""
    names = []
    with path.open("rb") as f:
        elf = ELFFile(f)
        for section in elf.iter_sections():
            if not isinstance(section, RelocationSection) or not section.name.startswith((".rel", ".rela")):
                continue
            symtab = elf.get_section(section["sh_link"])
            for rel in section.iter_relocations():
                if rel["r_info_sym"]:
                    names.append(symtab.get_symbol(rel["r_info_sym"]).name)
    return names
