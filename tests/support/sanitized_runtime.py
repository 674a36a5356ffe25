"""npukit's runtime built with AddressSanitizer and UBSan, and programs that
link one compiled model into tests/c/model_check.c."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from npukit.artifact import CompileResult
from npukit.codegen.model_wrapper import hal_element_type  # noqa: F401 (re-exported for tests)
from npukit.frontends.signature import EntryPoint
from npukit.runtime import host_build

REPO = Path(__file__).resolve().parents[2]
MODEL_CHECK = REPO / "tests" / "c" / "model_check.c"
_HEAP_FUNCTIONS = ("malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc")


def sanitized_build() -> Path:
    """The build directory of the sanitized runtime and C unit tests."""
    build, _ = host_build.runtime_libraries("sanitize")
    return build


@dataclass
class ModelCheck:
    """model_check linked with one artifact."""

    program: Path
    result: CompileResult

    @property
    def entry(self) -> EntryPoint:
        return self.result.entry_points[0]

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        proc = subprocess.run([str(self.program), *args], capture_output=True, text=True, timeout=600)
        proc.report = f"model_check {' '.join(args[:2])} -> exit {proc.returncode}\n{proc.stdout}{proc.stderr}"
        return proc

    def _io_args(self, inputs: list[np.ndarray], work: Path) -> tuple[list[str], list[Path]]:
        args = []
        for i, x in enumerate(inputs):
            path = work / f"in{i}.bin"
            path.write_bytes(np.ascontiguousarray(x).tobytes())
            args.append(str(path))
        args.append("--")
        outs = []
        for i, t in enumerate(self.entry.outputs):
            path = work / f"out{i}.bin"
            size = int(np.prod([int(d) for d in t.shape])) * np.dtype(t.dtype).itemsize
            args.append(f"{size}:{path}")
            outs.append(path)
        return args, outs

    def run(self, inputs: list[np.ndarray], work: Path, arena_bytes: int = 64 << 20):
        """(outputs, statistics line, process)."""
        args, out_paths = self._io_args(inputs, work)
        proc = self._run("run", str(arena_bytes), *args)
        if proc.returncode != 0:
            return None, None, proc
        outputs = [
            np.frombuffer(p.read_bytes(), dtype=np.dtype(t.dtype)).reshape([int(d) for d in t.shape])
            for p, t in zip(out_paths, self.entry.outputs)
        ]
        stats = dict(item.split("=") for item in proc.stdout.split() if "=" in item)
        return outputs, {k: int(v) for k, v in stats.items()}, proc

    def arena_sweep(self, inputs: list[np.ndarray], work: Path, arena_bytes: int, steps: int):
        args, _ = self._io_args(inputs, work)
        return self._run("arena-sweep", str(arena_bytes), str(steps), *args)

    def bad_input(self, specs: list[tuple[int, list[int]]]) -> subprocess.CompletedProcess:
        """Invokes with zero-filled inputs of the given (element type, shape)."""
        return self._run("bad-input", *[f"{etype:08x}:{'x'.join(map(str, shape))}" for etype, shape in specs])

    def load(self) -> subprocess.CompletedProcess:
        return self._run("load")


def model_check(result: CompileResult, out_dir: Path) -> ModelCheck:
    """Builds model_check for |result| with the sanitizers and the heap guard."""
    sources, flags = host_build.model_sources(result)
    _, libs = host_build.runtime_libraries("sanitize")
    out_dir.mkdir(parents=True, exist_ok=True)
    program = out_dir / f"model_check_{result.name}_{result.mode}"
    wraps = ",".join(f"--wrap={f}" for f in _HEAP_FUNCTIONS)
    cmd = host_build.link_command(
        [MODEL_CHECK, *sources],
        [*host_build.SANITIZER_FLAGS, "-O1", "-g", *flags, f"-Wl,{wraps}"],
        libs,
        program,
    )
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"building model_check failed:\n{proc.stderr[-4000:]}")
    return ModelCheck(program, result)
