"""``npukit targets``."""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser(
        "targets",
        help="list the compile targets",
        description="List the CPU targets npukit compiles for and how to pair them with the mynpu NPU.",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="also show triple, CPU, features and ABI")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, _console=None) -> int:
    from npukit.targets.cpu_presets import list_presets

    presets = list_presets()
    width = max(len(p.name) for p in presets)
    print("CPU targets:")
    for p in presets:
        print(f"  {p.name:<{width}}  {p.description}")
        if args.verbose:
            print(f"  {'':<{width}}    core={p.core} triple={p.triple or 'host'} llvm-cpu={p.cpu or '(none: ISA from features)'} features={p.features}"
                  f"{' abi=' + p.abi if p.abi else ''}{' float-abi=' + p.float_abi if p.float_abi else ''}"
                  f" vm-index-bits={p.index_bits} default execution model={p.default_execution_model}")
    print("NPU targets:")
    print(f"  {'mynpu':<{width}}  the mynpu NPU with the host CPU for the layers it does not run")
    print(f"  {'mynpu+CPU':<{width}}  the mynpu NPU beside a CPU target, e.g. mynpu+cortex-m4")
    return 0
