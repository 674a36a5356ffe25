"""Building and running the samples and test programs on the QEMU boards."""

from __future__ import annotations

from pathlib import Path

import pytest

import npukit
from npukit.deploy import firmware_build, qemu_runner
from npukit.targets.boards import Board
from npukit.deploy.firmware_project import FirmwareProject, write_project

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
SIMPLE_MUL = SAMPLES / "static_library" / "simple_mul.mlir"
# The directory of each sample's main.c by artifact mode.
SAMPLE_DIRS = {"static": SAMPLES / "static_library", "embedded": SAMPLES / "embedded_elf"}


def build_program(board: Board, mode: str, app_sources: list[Path], directory: Path) -> FirmwareProject:
    """Compiles simple_mul for |board| in |mode| and builds a firmware with |app_sources|."""
    artifact = npukit.compile(SIMPLE_MUL, target=board.cpu.name, output=mode, out_dir=directory / "artifact")
    project = write_project(directory / "firmware", board, artifact, app_sources, name="program")
    firmware_build.build(project)
    return project


def build_sample(board: Board, mode: str, directory: Path) -> FirmwareProject:
    """The static-library (mode static) or embedded-ELF (mode embedded) sample."""
    sources = [SAMPLE_DIRS[mode] / "main.c", SAMPLES / "static_library" / "simple_mul_check.h"]
    return build_program(board, mode, sources, directory)


def run_expecting(board: Board, elf: Path, status: int = 0) -> qemu_runner.FirmwareRun:
    """Runs |elf| on |board|; fails the test with the console when the exit status differs."""
    run = qemu_runner.run(board, elf, timeout=300)
    if run.exit_status != status:
        pytest.fail(f"expected exit status {status} on {board.name}, got {run.exit_status}\n{run.report()}")
    return run
