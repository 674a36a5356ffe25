"""What an ELF object says about itself: machine, class, float ABI, sizes.

Used to check that compiled executables match their target and to report the
flash/RAM an artifact needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

_EF_ARM_ABI_FLOAT_SOFT = 0x200
_EF_ARM_ABI_FLOAT_HARD = 0x400
_EF_RISCV_FLOAT_ABI = {0x0: "soft", 0x2: "single", 0x4: "double", 0x6: "quad"}


@dataclass
class ElfInfo:
    path: Path
    machine: str  # e_machine name as pyelftools spells it: EM_ARM, EM_RISCV, EM_X86_64
    elf_class: int  # 32 or 64
    type: str  # ET_REL (object), ET_DYN (shared object), ET_EXEC
    float_abi: str  # hard/soft (Arm), soft/single/double (RISC-V), "" otherwise
    sizes: dict[str, int] = field(default_factory=dict)  # text, rodata, data, bss

    def to_json(self) -> dict:
        return {
            "machine": self.machine,
            "class": self.elf_class,
            "type": self.type,
            "float_abi": self.float_abi,
            "sizes": self.sizes,
        }


def _arm_float_abi(elf: ELFFile) -> str:
    flags = elf.header["e_flags"]
    if flags & _EF_ARM_ABI_FLOAT_HARD:
        return "hard"
    if flags & _EF_ARM_ABI_FLOAT_SOFT:
        return "soft"
    # Relocatable objects carry the ABI in their build attributes instead.
    section = elf.get_section_by_name(".ARM.attributes")
    if section is not None and hasattr(section, "iter_subsections"):
        for sub in section.iter_subsections():
            for subsub in sub.iter_subsubsections():
                for attr in subsub.iter_attributes():
                    if attr.tag == "TAG_ABI_VFP_ARGS":
                        return "hard" if attr.value == 1 else "soft"
    return "soft"


def _sizes(elf: ELFFile) -> dict[str, int]:
    sizes = {"text": 0, "rodata": 0, "data": 0, "bss": 0}
    for s in elf.iter_sections():
        flags = s["sh_flags"]
        if not flags & SH_FLAGS.SHF_ALLOC:
            continue
        if s["sh_type"] == "SHT_NOBITS":
            sizes["bss"] += s["sh_size"]
        elif flags & SH_FLAGS.SHF_EXECINSTR:
            sizes["text"] += s["sh_size"]
        elif flags & SH_FLAGS.SHF_WRITE:
            sizes["data"] += s["sh_size"]
        else:
            sizes["rodata"] += s["sh_size"]
    return sizes


def read_elf(path: "str | Path") -> ElfInfo:
    path = Path(path)
    with path.open("rb") as f:
        elf = ELFFile(f)
        machine = elf.header["e_machine"]
        if machine == "EM_ARM":
            float_abi = _arm_float_abi(elf)
        elif machine == "EM_RISCV":
            float_abi = _EF_RISCV_FLOAT_ABI[elf.header["e_flags"] & 0x6]
        else:
            float_abi = ""
        return ElfInfo(
            path=path,
            machine=machine,
            elf_class=elf.elfclass,
            type=elf.header["e_type"],
            float_abi=float_abi,
            sizes=_sizes(elf),
        )
