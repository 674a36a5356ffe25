"""The stack one dispatch of a model's static library takes, known at compile
time: the library (IREE's generated code with npukit's layer kernels merged
in) linked on its own with the board's C library and libgcc, and each
function of its export table bounded (npukit.stack.stack_bound). The
largest is what the model's executables add to the stack of the runtime
that calls them; the generated header states it
(``<NAME>_DISPATCH_STACK_SIZE``).
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from npukit.stack.dynamic_frames import dynamic_bounds
from npukit.stack.indirect_calls import kinds_of
from npukit.stack.stack_bound import StackBoundError, bound, read_call_graph


@dataclass(frozen=True)
class DispatchStack:
    bytes: int | None
    deepest: str | None  # the export that takes it
    reason: str | None = None  # why there is no bound

    def to_json(self) -> dict:
        return {"dispatch_stack": self.bytes, "deepest_dispatch": self.deepest, "reason": self.reason}


def _link(gcc: str, flags: list[str], library: Path, entry: str, out: Path) -> None:
    # Room for any library: picolibc's default linker script has a small flash region.
    room = ["-Wl,--defsym=__flash_size=0x10000000", "-Wl,--defsym=__ram_size=0x1000000"]
    cmd = [gcc, *flags, *room, "-nostartfiles", "-Wl,--emit-relocs", f"-Wl,-e,{entry}", "-Wl,--gc-sections",
           "-o", str(out), str(library), "-lm", "-lc", "-lgcc"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        errors = [line for line in proc.stderr.splitlines() if "warning:" not in line and "NOTE:" not in line]
        raise StackBoundError(f"linking {library.name} on its own failed: {' '.join(errors)[:300]}")


def dispatch_stack(library: Path, query: str, gcc: str, link_flags: list[str], manifest: dict | None) -> DispatchStack:
    """The deepest stack of one call of an export of the static |library|
    (query function |query|), linked with |gcc| and |link_flags| (the
    preset's CPU and C library flags)."""
    try:
        with tempfile.TemporaryDirectory(prefix="npukit-stack-") as tmp:
            elf = Path(tmp) / "library.elf"
            _link(gcc, link_flags, library, query, elf)
            graph = read_call_graph(elf)
    except StackBoundError as e:
        return DispatchStack(None, None, str(e))
    exports = sorted({graph.functions[a].name for a in graph.address_taken
                      if "library_export" in kinds_of(graph.functions[a].name)})
    if not exports:
        return DispatchStack(None, None, "no dispatch function found in the library's export table")
    dynamic = dynamic_bounds(manifest)
    deepest: tuple[int, str] | None = None
    for name in exports:
        if len(graph.named(name)) != 1:
            return DispatchStack(None, None, f"{len(graph.named(name))} functions named {name}")
        b = bound(graph, name, dynamic_bounds=dynamic)
        if b.bytes is None:
            return DispatchStack(None, name, b.reason)
        if deepest is None or b.bytes > deepest[0]:
            deepest = (b.bytes, name)
    return DispatchStack(deepest[0], deepest[1])
