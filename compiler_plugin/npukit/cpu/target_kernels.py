"""npukit's layer kernels for one CPU target, built once per compile.

The tuned CPU pipeline needs the kernels twice: the executables IREE links
(embedded ELFs, the host's .vmfb) link their archive and the board
toolchain's helpers, and a static library gets the archive merged in after
IREE wrote it. ``TargetKernels.build`` compiles (or finds in the cache) the
archive once and both uses take it from here.

The static merge: IREE writes a static library as one object and cannot add
others to it, so the library is linked relocatably with the kernels' archive
(only the members it calls), then every symbol but the library's query
function is made local, so that several models can be linked into one
firmware. IREE's executable-library tables are replaced by compact ones on
the way (npukit.cpu.library_tables).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from npukit.targets.cpu_presets import CpuPreset


@dataclass(frozen=True)
class TargetKernels:
    preset: CpuPreset
    archive: Path
    # What an executable that calls the kernels links: the archive, then the
    # board toolchain's libgcc (64-bit arithmetic helpers on 32-bit cores),
    # after npukit's embedded builtins where the preset has them (they stub
    # the unwinder's personality routines, which libgcc would otherwise bring
    # in from objects that cannot be linked position-independently).
    link_objects: tuple[Path, ...]

    @classmethod
    def build(cls, preset: CpuPreset) -> "TargetKernels":
        from npukit.cpu.builtins_archive import embedded_link_libraries, libgcc_path
        from npukit.cpu.layer_kernels import kernel_library

        archive = kernel_library(preset)
        if preset.toolchain is None:
            return cls(preset, archive, (archive,))
        return cls(preset, archive, (archive, *(embedded_link_libraries(preset) or [libgcc_path(preset)])))

    def link_into(self, static_library: Path, leave_out: Iterable[str] = ()) -> str | None:
        """Merges the kernels ``static_library`` calls into it (in place) and
        gives it compact executable-library tables (npukit.cpu.library_tables)
        without the exports named in ``leave_out``; returns why IREE's tables
        stayed, if they did."""
        from npukit.cpu.archive_build import binutil, gcc_for, preset_cflags, run_tool
        from npukit.cpu.library_tables import compact_library_tables

        merged = static_library.with_name(static_library.name + ".merged")
        # The GCC driver picks the linker emulation of the preset's multilib.
        run_tool([gcc_for(self.preset), *preset_cflags(self.preset), "-nostdlib", "-r", "-Wl,-z,noexecstack",
                  "-o", str(merged), str(static_library), str(self.archive)])
        kept = compact_library_tables(merged, self.preset, leave_out)
        run_tool([binutil(self.preset, "objcopy"), "--wildcard", "--keep-global-symbol=*_library_query",
                  str(merged)])
        os.replace(merged, static_library)
        return kept
