"""Runs a firmware on its QEMU board and collects the console and exit status."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from npukit.targets.boards import Board
from npukit.deploy.firmware_build import require_tool
from npukit.errors import RunError

# A firmware ends by itself (its exit status is QEMU's); this is only a guard
# against one that hangs.
DEFAULT_TIMEOUT_SECONDS = 900


@dataclass
class FirmwareRun:
    board: str
    command: list[str]
    exit_status: int
    console: str

    def _pairs(self) -> list[tuple[str, str]]:
        pairs = []
        for line in self.console.splitlines():
            if line.startswith("npukit: "):
                key, _, value = line[len("npukit: "):].partition(" ")
                pairs.append((key, value.strip()))
        return pairs

    def values(self) -> dict[str, str]:
        """The "npukit: <key> <value>" lines of the console (the first of each key)."""
        found: dict[str, str] = {}
        for key, value in self._pairs():
            found.setdefault(key, value)
        return found

    def all_values(self, key: str) -> list[str]:
        """Every value printed for |key|, in order."""
        return [value for k, value in self._pairs() if k == key]

    def number(self, key: str) -> int:
        value = self.values().get(key)
        if value is None or not value.isdigit():
            raise RunError(f"the firmware did not report '{key}'; {self.report()}")
        return int(value)

    def report(self) -> str:
        return f"{' '.join(self.command)}\nexit status {self.exit_status}; console:\n{self.console}"


def run(board: Board, firmware: Path, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> FirmwareRun:
    require_tool(board.spec.qemu_system, board.spec.qemu_package, f"to run firmware on {board.name}")
    command = board.qemu_command(firmware)
    try:
        proc = subprocess.run(command, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        console = (e.stdout or b"").decode(errors="replace")
        raise RunError(
            f"{firmware} did not finish on {board.name} within {timeout:.0f} s; console so far:\n{console}"
        ) from None
    console = proc.stdout.decode(errors="replace")
    errors = proc.stderr.decode(errors="replace").strip()
    if errors:
        console += ("" if console.endswith("\n") or not console else "\n") + errors + "\n"
    return FirmwareRun(board.name, command, proc.returncode, console)
