"""Builds a firmware project with CMake, Ninja and the board's GCC."""

from __future__ import annotations

import re
import shutil
import subprocess

from npukit.targets.boards import Board
from npukit.deploy.firmware_project import FirmwareProject
from npukit.errors import NpukitError, ToolchainError


class BoardCapacityError(NpukitError):
    """The firmware does not fit the board's flash or RAM."""


_OVERFLOW = re.compile(r"region [`'](\w+)' overflowed by (\d+) bytes")


def require_tool(tool: str, package: str, why: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise ToolchainError(f"{tool} is needed {why}; install it with `apt-get install {package}`")
    return path


def check_toolchain(board: Board) -> None:
    toolchain = board.cpu.toolchain
    assert toolchain is not None
    require_tool(toolchain.gcc, " ".join(toolchain.debian_packages), f"to build firmware for {board.name}")
    require_tool("cmake", "cmake", "to build firmware")
    require_tool("ninja", "ninja-build", "to build firmware")


def _capacity_error(project: FirmwareProject, output: str) -> BoardCapacityError | None:
    board = project.board
    for region, over in _OVERFLOW.findall(output):
        if region == "FLASH":
            what, size = "code and constants", board.code_region.length
        elif board.shares_code_and_data:
            what, size = "code, constants, static data and stack", board.data_region.length
        else:
            what, size = "static data and stack", board.data_region.length
        memory = "flash" if region == "FLASH" else "RAM"
        return BoardCapacityError(
            f"the firmware does not fit {board.name}: its {what} overflow the board's {size // 1024} KiB of "
            f"{memory} by {int(over)} bytes"
        )
    return None


def build(project: FirmwareProject, build_type: str = "MinSizeRel", stack_size: int | None = None) -> None:
    """Configures and builds; the ELF and its linker map end up in build/.
    ``stack_size`` sets the stack the linker script reserves (the project's
    own setting otherwise); a change only links again."""
    check_toolchain(project.board)
    stack = [f"-DNPUKIT_STACK_SIZE={stack_size}"] if stack_size is not None else []
    steps = (
        ("configuring", ["cmake", "-S", str(project.directory), "-B", str(project.build_dir), "-G", "Ninja",
                         f"-DCMAKE_TOOLCHAIN_FILE={project.toolchain_file}", f"-DCMAKE_BUILD_TYPE={build_type}",
                         *stack]),
        ("building", ["cmake", "--build", str(project.build_dir)]),
    )
    for what, cmd in steps:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            output = proc.stdout + proc.stderr
            capacity = _capacity_error(project, output)
            if capacity is not None:
                raise capacity
            tail = "\n".join(output.strip().splitlines()[-30:])
            raise ToolchainError(f"{what} the firmware in {project.directory} failed:\n{tail}")
