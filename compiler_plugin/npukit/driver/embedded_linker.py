"""The linker npukit gives IREE for embedded ELF executables.

IREE links each embedded executable with ``iree-lld`` and no libraries, so
calls LLVM emits to runtime routines (fminf, software floating point) stay
undefined on cores that lack the instructions. IREE is told to use this
program as its embedded linker (``--iree-llvmcpu-embedded-linker-path``); it
runs iree-lld with the same arguments and, when the objects are for the
target's machine, appends the libraries named in ``NPUKIT_EMBEDDED_LINK_LIBS``
and a small page size (``NPUKIT_EMBEDDED_LINK_PAGE_SIZE``). lld aligns each
segment to the target's page size (64 KiB on Arm, 4 KiB on RISC-V), which on
a board without an MMU only wastes RAM: the loader copies the whole span.

The machine check matters: the same compile also links host executables for
constant evaluation, which must not get the target's libraries.
"""

from __future__ import annotations

import os
import struct
import sys

LIBS_ENV = "NPUKIT_EMBEDDED_LINK_LIBS"
MACHINE_ENV = "NPUKIT_EMBEDDED_LINK_MACHINE"
PAGE_SIZE_ENV = "NPUKIT_EMBEDDED_LINK_PAGE_SIZE"

ELF_MACHINES = {"EM_X86_64": 62, "EM_ARM": 40, "EM_RISCV": 243, "EM_AARCH64": 183}


def elf_machine(path: str) -> int | None:
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    endian = "<" if head[5] == 1 else ">"
    return struct.unpack(endian + "H", head[18:20])[0]


def link_command(args: list[str], environ=os.environ) -> list[str]:
    from npukit.driver.stock_tools import stock_tool

    command = [str(stock_tool("iree-lld")), *args]
    libs = [p for p in environ.get(LIBS_ENV, "").split(os.pathsep) if p]
    wanted = ELF_MACHINES.get(environ.get(MACHINE_ENV, ""))
    objects = [a for a in args if a.endswith(".o")]
    if wanted is not None and objects and elf_machine(objects[0]) == wanted:
        page = environ.get(PAGE_SIZE_ENV, "")
        if page:
            command += ["-z", f"max-page-size={page}", "-z", f"common-page-size={page}"]
        command.extend(libs)
    return command


def main() -> None:
    command = link_command(sys.argv[1:])
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
