"""Programs whose executable is a hand-written mynpu-v1 executable, compiled
to vm-c by IREE (with npukit's passes) and run by tests/mynpu/c/npu_dispatch_main.c
on npukit's runtime with the mynpu simulator."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from iree.compiler.api import Output, Session, Source

from npukit.driver import iree_capi
from npukit.driver.phases import PhasedPipeline
from npukit.passes.mynpu_binaries import ReplaceMynpuBinaries
from npukit.passes.registry import passes_for
from npukit.runtime import host_build
from npukit.runtime.sources import include_dirs, runtime_source_root
from npukit.vm_c_module import write_vm_c_module

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO / "tests" / "mynpu" / "c" / "npu_dispatch_main.c"

_X86_TARGET = ('{cpu = "generic", cpu_features = "", data_layout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-'
               'i128:128-f80:128-n8:16:32:64-S128", native_vector_size = 16 : i64, '
               'target_triple = "x86_64-unknown-unknown-eabi-elf"}')
MYNPU_DEVICE = f'#hal.device.target<"local", [#hal.executable.target<"llvm-cpu", "mynpu-v1", {_X86_TARGET}>]>'


def _elementwise(length: int, source: str, result: str, body: str) -> str:
    return f"""
    %e{result} = tensor.empty() : tensor<{length}xi8>
    %{result} = linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                         iterator_types = ["parallel"]}} ins(%{source} : tensor<{length}xi8>)
                         outs(%e{result} : tensor<{length}xi8>) {{
    ^bb0(%a: i8, %unused: i8):
      {body}
      linalg.yield %y : i8
    }} -> tensor<{length}xi8>"""


def elementwise_program(length: int, *bodies: str) -> str:
    """``func @main(tensor<Nxi8>) -> tensor<Nxi8>`` applying each of |bodies|
    (MLIR using %a, yielding %y) elementwise in turn, one dispatch each, all
    compiled for the mynpu-v1 target (IREE links them into one executable)."""
    steps, source = [], "x"
    for i, body in enumerate(bodies):
        steps.append(_elementwise(length, source, f"r{i}", body))
        source = f"r{i}"
        if i + 1 < len(bodies):  # keeps IREE from fusing the steps into one dispatch
            steps.append(f"\n    %b{i} = util.optimization_barrier %{source} : tensor<{length}xi8>")
            source = f"b{i}"
    return f"""
module attributes {{hal.device.targets = [{MYNPU_DEVICE}]}} {{
  func.func @main(%x: tensor<{length}xi8>) -> tensor<{length}xi8> {{{"".join(steps)}
    return %{source} : tensor<{length}xi8>
  }}
}}
"""


@dataclass
class NpuRun:
    output: np.ndarray
    counters: dict[str, int]


@dataclass
class NpuProgram:
    binary: Path
    replaced: list[str]

    def run(self, x: np.ndarray, work: Path, sram_limit: int | None = None, arena: int | None = None) -> NpuRun:
        """Runs main twice; with ``arena``, all memory comes from an arena of that many bytes."""
        src, dst = work / "in.bin", work / "out.bin"
        src.write_bytes(np.ascontiguousarray(x, np.int8).tobytes())
        limits = [str(sram_limit or 16 << 20), str(arena)] if arena else [str(sram_limit)] if sram_limit else []
        args = [str(self.binary), "main", str(src), str(dst)] + limits
        proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(proc.stdout + proc.stderr)
        counters = dict(item.split("=") for item in proc.stdout.split())
        return NpuRun(np.frombuffer(dst.read_bytes(), np.int8), {k: int(v) for k, v in counters.items()})


def build_npu_program(mlir: str, executable: bytes | Callable[[bytes], bytes], execution_model: str,
                      work: Path) -> NpuProgram:
    """Compiles |mlir| with |executable| as its mynpu-v1 binary (or made by
    it from the CPU code IREE compiled for the variant, an embedded ELF) and
    links it with the harness and npukit's runtime."""
    work.mkdir(parents=True, exist_ok=True)
    flags = [f"--iree-execution-model={execution_model}"]
    iree_capi.ensure_global_command_line()
    session = Session()
    session.set_flags(*flags)
    hooks = passes_for(flags, "vm-c")
    make = executable if callable(executable) else (lambda _code: executable)
    replace = ReplaceMynpuBinaries(lambda _name, _format, code: make(code), lambda: "embedded-elf-x86_64")
    hooks.setdefault("hal", []).append(replace)
    inv = PhasedPipeline(session, hooks=hooks).run(Source.wrap_buffer(session, mlir.encode()))
    raw = work / "raw.c"
    out = Output.open_file(str(raw))
    iree_capi.output_vm_c_source(inv, out)
    out.keep()
    out.close()
    write_vm_c_module(raw.read_text(), work / "module.c", work / "module.h")
    _, libs = host_build.runtime_libraries()
    binary = work / "npu_dispatch"
    flags = [f"-I{d}" for d in include_dirs(runtime_source_root())] + [f"-I{work}"]
    subprocess.run(host_build.link_command([work / "module.c", HARNESS], flags, libs, binary), check=True,
                   capture_output=True, text=True)
    return NpuProgram(binary, replace.replaced)
