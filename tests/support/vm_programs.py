"""VM-dialect programs on both runtimes: IREE's own (bytecode, through
iree.runtime in this process) and npukit's (IREE's vm-c output linked with the
runtime, built with AddressSanitizer and UBSan, in a child process).

Calls carry scalar arguments and results as bits: ``Call(function, "ii", "i",
(a, b))`` calls ``function`` with two i32 and reads one i32 back.
"""

from __future__ import annotations

import re
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from npukit.driver.stock_tools import stock_tool
from npukit.runtime import host_build
from npukit.vm_c_module import write_vm_c_module

REPO = Path(__file__).resolve().parents[2]
VM_CALL = REPO / "tests" / "c" / "vm_call.c"
_MASKS = {"i": 0xFFFFFFFF, "f": 0xFFFFFFFF, "I": (1 << 64) - 1, "F": (1 << 64) - 1}
_REFUSED = re.compile(r"within split at [^:\n]*:(\d+) offset :\d+:\d+: error: failed to legalize operation '([\w.]+)'")


@dataclass(frozen=True)
class Call:
    function: str
    args: str  # calling-convention letters of the arguments
    results: str  # ... of the results
    values: tuple[int, ...]  # the arguments' bits


#: A call's outcome: ("ok", result bits...) or ("error",).
Outcome = tuple


def compile_vm(source: Path, output: Path, output_format: str = "vm-bytecode") -> None:
    """Compiles a VM-dialect program with IREE's own iree-compile (--compile-mode=vm)."""
    proc = subprocess.run([str(stock_tool("iree-compile")), "--compile-mode=vm", f"--output-format={output_format}",
                           str(source), "-o", str(output)], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"iree-compile {source.name} ({output_format}) failed:\n{proc.stderr[-4000:]}")


def emitc_refused(chunks: list[str], work: Path) -> dict[int, str]:
    """Which of |chunks| (VM modules, compiled independently so that every
    refusal is reported) IREE's vm-c emitter cannot convert: chunk index ->
    the first operation it has no conversion for."""
    separator = "\n// -----\n"
    work.mkdir(parents=True, exist_ok=True)
    source = work / "split.mlir"
    source.write_text(separator.join(chunks))
    starts, line = [], 1
    for chunk in chunks:
        starts.append(line)
        line += chunk.count("\n") + separator.count("\n")
    proc = subprocess.run([str(stock_tool("iree-compile")), "--split-input-file", "--compile-mode=vm",
                           "--output-format=vm-c", str(source), "-o", str(work / "split.c")],
                          capture_output=True, text=True, timeout=600)
    refused: dict[int, str] = {}
    for at, op in _REFUSED.findall(proc.stderr):
        # The location is that of the separator line before the chunk.
        index = max(i for i, start in enumerate(starts) if start <= int(at) + 1)
        refused.setdefault(index, op)
    if proc.returncode != 0 and not refused:
        raise AssertionError(f"iree-compile --split-input-file failed otherwise:\n{proc.stderr[-4000:]}")
    return refused


def helper_calls(vm_c: str) -> set[str]:
    """The vm_* helpers that generated C calls."""
    return set(re.findall(r"\b(vm_[a-z0-9_]+)\(", vm_c))


def runtime_helpers() -> set[str]:
    """The vm_* functions npukit's runtime headers define (after the
    preprocessor, so that macro-generated definitions count as written)."""
    from npukit.runtime.sources import include_dirs, runtime_source_root

    root = runtime_source_root()
    ops_h = root / "emitc_vm" / "include" / "iree" / "vm" / "ops.h"
    proc = subprocess.run(["gcc", "-E", "-P", *[f"-I{d}" for d in include_dirs(root)], str(ops_h)],
                          capture_output=True, text=True, check=True)
    names = re.findall(r"\bstatic inline [\w ]+?\**\s*\b(vm_[a-z0-9_]+)\(", proc.stdout)
    return {n for n in names if not n.endswith("_")}  # a trailing _ marks a private helper


class NpukitProgram:
    """A vm-c module linked into tests/c/vm_call.c with the sanitized runtime."""

    def __init__(self, vm_c: str, module: str, work: Path):
        work.mkdir(parents=True, exist_ok=True)
        c_path, h_path = work / f"{module}_module.c", work / f"{module}_module.h"
        write_vm_c_module(vm_c, c_path, h_path)
        from npukit.runtime.sources import include_dirs, runtime_source_root

        _, libs = host_build.runtime_libraries("sanitize")
        self.program = work / f"vm_call_{module}"
        flags = [*host_build.SANITIZER_FLAGS, "-O1", "-g", "-Werror=implicit-function-declaration",
                 f"-DVM_CALL_MODULE_CREATE={module}_create", f'-DVM_CALL_MODULE_NAME="{module}"',
                 *[f"-I{d}" for d in include_dirs(runtime_source_root())]]
        cmd = [c for c in host_build.link_command([VM_CALL, c_path], flags, libs, self.program) if c != "-w"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise AssertionError(f"building vm_call for {module} failed:\n{proc.stderr[-4000:]}")

    def call(self, calls: list[Call]) -> list[Outcome]:
        lines = [f"{c.function} {c.args or 'v'} {c.results or 'v'} " +
                 " ".join(f"{v & _MASKS[t]:x}" for v, t in zip(c.values, c.args)) for c in calls]
        proc = subprocess.run([str(self.program)], input="\n".join(lines) + "\n", capture_output=True, text=True,
                              timeout=600)
        if proc.returncode != 0:
            raise AssertionError(f"vm_call exited with {proc.returncode}:\n{proc.stderr[-4000:]}")
        outcomes = []
        for line in proc.stdout.splitlines():
            word, *rest = line.split()
            outcomes.append(("ok", *(int(v, 16) for v in rest)) if word == "ok" else ("error", int(rest[0])))
        assert len(outcomes) == len(calls), proc.stdout[-2000:]
        return outcomes


def _to_python(bits: int, letter: str):
    if letter == "i":
        return bits - (1 << 32) if bits & (1 << 31) else bits
    if letter == "I":
        return bits - (1 << 64) if bits & (1 << 63) else bits
    if letter == "f":
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _to_bits(value, letter: str) -> int:
    if letter in "iI":
        return int(value) & _MASKS[letter]
    if letter == "f":
        return struct.unpack("<I", struct.pack("<f", value))[0]
    return struct.unpack("<Q", struct.pack("<d", value))[0]


class StockProgram:
    """The same program as IREE bytecode on IREE's runtime, in this process.

    Calls that IREE's VM leaves undefined and its runtime traps on (integer
    division by zero, INT_MIN / -1) must not be made here."""

    def __init__(self, vmfb: Path):
        import iree.runtime as ireert

        self._rt = ireert
        self.instance = ireert.VmInstance()
        self.module = ireert.VmModule.copy_buffer(self.instance, vmfb.read_bytes())
        self.context = ireert.VmContext(self.instance, modules=[self.module])

    def call(self, calls: list[Call]) -> list[Outcome]:
        outcomes = []
        for c in calls:
            function = self.module.lookup_function(c.function)
            args = self._rt.VmVariantList(len(c.values))
            for bits, letter in zip(c.values, c.args):
                value = _to_python(bits & _MASKS[letter], letter)
                (args.push_int if letter in "iI" else args.push_float)(value)
            results = self._rt.VmVariantList(len(c.results))
            try:
                self.context.invoke(function, args, results)
            except Exception:
                outcomes.append(("error",))
                continue
            outcomes.append(("ok", *(_to_bits(results.get_variant(i), letter) for i, letter in enumerate(c.results))))
        return outcomes
