"""``npukit run``."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from npukit.cli.compile_command import add_output_arguments
from npukit.cli.console import Console


def add_parser(sub) -> None:
    p = sub.add_parser(
        "run",
        help="run a compiled artifact on inputs from .npy files",
        description="Run a compiled artifact on this machine and print its outputs.",
    )
    p.add_argument("artifact", help="the artifact: its directory, manifest or .vmfb")
    p.add_argument("inputs", nargs="*", help="one .npy file per model input, in order")
    p.add_argument("--function", help="entry point to call (default: the only one)")
    p.add_argument(
        "--runtime",
        default="stock",
        choices=["stock", "npukit"],
        help="stock: IREE's runtime on a .vmfb (default); npukit: npukit's C runtime on a static or "
        "embedded artifact compiled for the host",
    )
    p.add_argument("--save", metavar="DIR", help="also write the outputs as DIR/output_<i>.npy")
    add_output_arguments(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    import npukit

    from npukit.run_model import load_npy

    inputs = [load_npy(p) for p in args.inputs]
    outputs = npukit.run(args.artifact, *inputs, runtime=args.runtime, function=args.function)
    np.set_printoptions(threshold=64, linewidth=100)
    for i, out in enumerate(outputs):
        print(f"output {i}: {out.dtype}[{'x'.join(map(str, out.shape))}]")
        print(out)
    if args.save:
        d = Path(args.save)
        d.mkdir(parents=True, exist_ok=True)
        for i, out in enumerate(outputs):
            np.save(d / f"output_{i}.npy", out)
    return 0
