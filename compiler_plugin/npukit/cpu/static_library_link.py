"""Gives a static library the layer kernels its dispatches call.

IREE writes a static library as one object and cannot add others to it, so
with the tuned CPU pipeline the kernels are merged in afterwards: a
relocatable link of the library with the kernels' archive (only the members
it calls), then every symbol but the library's query function is made local,
so that several models can be linked into one firmware.
"""

from __future__ import annotations

import os
from pathlib import Path

from npukit.cpu.archive_build import binutil, gcc_for, preset_cflags, run_tool
from npukit.cpu.layer_kernels import kernel_library
from npukit.targets.cpu_presets import CpuPreset


def link_kernels_into(static_library: Path, preset: CpuPreset) -> None:
    merged = static_library.with_name(static_library.name + ".merged")
    # The GCC driver picks the linker emulation of the preset's multilib.
    run_tool([gcc_for(preset), *preset_cflags(preset), "-nostdlib", "-r", "-Wl,-z,noexecstack", "-o", str(merged),
              str(static_library), str(kernel_library(preset))])
    run_tool([binutil(preset, "objcopy"), "--wildcard", "--keep-global-symbol=*_library_query", str(merged)])
    os.replace(merged, static_library)
