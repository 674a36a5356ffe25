"""The CMake toolchain files in toolchains/, one per cross CPU preset.

They are generated from the presets (the one place a core's flags are
written down) and committed, so that a C project can use them without
Python; a test checks that the committed files are current.

    python -m npukit.deploy.toolchain_files [DIR]   # rewrites DIR (default: toolchains/)
"""

from __future__ import annotations

import sys
from pathlib import Path

from npukit.targets.cpu_presets import CpuPreset, list_presets

_LIBC = {"arm-none-eabi-gcc": "newlib (nano)", "riscv64-unknown-elf-gcc": "picolibc"}


def cross_presets() -> list[CpuPreset]:
    return [p for p in list_presets() if p.toolchain is not None]


def render(preset: CpuPreset) -> str:
    tc = preset.toolchain
    assert tc is not None
    processor = "arm" if tc.gcc.startswith("arm") else "riscv32"
    cpu_flags = " ".join((*tc.cflags, *tc.libc_flags))
    # CMake links with the C flags too; newlib-nano is chosen at link time only.
    link_flags = "--specs=nano.specs" if tc.gcc.startswith("arm") else ""
    return f"""\
# {preset.name}: {preset.description}.
# Debian's {tc.gcc} with {_LIBC[tc.gcc]}; install with `{tc.describe_install()}`.
# Generated from compiler_plugin/npukit/targets/cpu_presets.py by
# `python -m npukit.deploy.toolchain_files`; edit the preset, not this file.
#
#   cmake -S . -B build -G Ninja -DCMAKE_TOOLCHAIN_FILE=toolchains/{preset.name}.cmake -DNPUKIT_BOARD=<board>
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR {processor})
set(CMAKE_C_COMPILER {tc.gcc})
set(CMAKE_ASM_COMPILER {tc.gcc})
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

set(NPUKIT_CPU {preset.name})
set(NPUKIT_BARE_METAL ON CACHE BOOL "Build for a bare-metal board" FORCE)
set(NPUKIT_CPU_FLAGS "{cpu_flags}")
set(CMAKE_C_FLAGS_INIT "${{NPUKIT_CPU_FLAGS}} -ffunction-sections -fdata-sections")
set(CMAKE_ASM_FLAGS_INIT "${{NPUKIT_CPU_FLAGS}}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "{link_flags}")
"""


def write_all(directory: Path) -> list[Path]:
    written = []
    for preset in cross_presets():
        path = directory / f"{preset.name}.cmake"
        path.write_text(render(preset))
        written.append(path)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[3] / "toolchains"
    for p in write_all(target):
        print(p)
