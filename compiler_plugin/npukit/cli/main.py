"""``npukit``: compile models, run them, deploy them to boards, tune the kernels, explore NPU
configurations, list targets.

Every user error becomes one line on stderr and a non-zero exit; no traceback.
"""

from __future__ import annotations

import argparse
import sys

from npukit import __version__
from npukit.cli import (compile_command, deploy_command, explore_command, run_command, targets_command,
                        tune_command)
from npukit.errors import NpukitError

COMMANDS = (compile_command, run_command, deploy_command, tune_command, explore_command, targets_command)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except NpukitError as e:
        print(f"npukit: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("npukit: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
