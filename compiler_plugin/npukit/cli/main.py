"""``npukit``: compile models, run them, deploy them to boards, tune the kernels, explore NPU
configurations, list targets.

Every refusal (a bad flag, an unreadable or malformed model, an operator
nothing supports, an IREE error or crash) is one line on stderr and exit
status 1; no traceback, and nothing else on stderr (see cli.console;
``--verbose`` shows the logs and details).
"""

from __future__ import annotations

import argparse
import sys

from npukit import __version__
from npukit.cli import (compile_command, deploy_command, explore_command, run_command, targets_command,
                        tune_command)
from npukit.cli.console import Console, one_line

COMMANDS = (compile_command, run_command, deploy_command, tune_command, explore_command, targets_command)


class UsageError(Exception):
    """A command line argparse refused."""


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose refusals are one line (raised, not printed)."""

    def error(self, message: str):  # type: ignore[override]
        command = self.prog.removeprefix("npukit").strip()
        raise UsageError(f"{command + ': ' if command else ''}{one_line(message)} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="npukit",
        description="Compile models with IREE for the host, Cortex-M and RISC-V cores and the mynpu NPU, "
        "and run the results.",
        epilog="Run `npukit COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"npukit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as e:
        print(f"npukit: error: {e}", file=sys.stderr)
        return 1
    console = Console(verbose=getattr(args, "verbose", False) and args.command != "targets",
                      quiet=getattr(args, "quiet", False))
    try:
        with console.captured_stderr():
            return int(args.handler(args, console) or 0)
    except KeyboardInterrupt:
        console.clear_status()
        print("npukit: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - NpukitError, or a fault of npukit's own: one line either way
        console.error(e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
