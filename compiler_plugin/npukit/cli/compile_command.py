"""``npukit compile``."""

from __future__ import annotations

import argparse

from npukit.cli.console import Console
from npukit.targets.output_modes import OutputMode


def add_parser(sub) -> None:
    p = sub.add_parser(
        "compile",
        help="compile a model (.onnx, .tflite, .mlir, .mlirbc) for a target",
        description="Compile a model for a target. The artifact and its manifest "
        "(<name>.manifest.json) are written to the output directory; nothing is written if the "
        "compile fails.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  npukit compile model.onnx                          # host, .vmfb\n"
        "  npukit compile model.onnx -t cortex-m4 -m static   # vm-c module + static library\n"
        "  npukit compile model.onnx -t mynpu                 # the mynpu NPU target",
    )
    p.add_argument("model", help="the model file")
    p.add_argument(
        "-t",
        "--target",
        default="host",
        help="host, cortex-m4, cortex-m7, cortex-m3, rv32imf, rv32imac, mynpu or mynpu+CPU "
        "(default: host; see `npukit targets`)",
    )
    p.add_argument(
        "-m",
        "--mode",
        default="vmfb",
        choices=[m.value for m in OutputMode],
        help="vmfb: VM bytecode for IREE's runtime; static: vm-c module + static library; "
        "embedded: vm-c module with embedded ELF executables (default: vmfb)",
    )
    p.add_argument("-o", "--out-dir", help="output directory (default: ./NAME-TARGET-MODE)")
    p.add_argument("--name", help="module name used in file and C symbol names (default: the model file's name)")
    p.add_argument(
        "--execution-model",
        choices=["inline-dynamic", "async"],
        help="for static/embedded: inline-dynamic (small, the default on boards) or async (IREE's full HAL; "
        "the default on the host)",
    )
    p.add_argument(
        "--iree-flag",
        action="append",
        default=[],
        metavar="FLAG",
        help="a stock iree-compile flag passed through, e.g. --iree-flag=--iree-opt-level=O3 (repeatable)",
    )
    p.add_argument(
        "--time-limit", type=float, metavar="SECONDS",
        help="stop the import or compile after SECONDS with an error (default: $NPUKIT_LIMIT_TIME or 1800)",
    )
    add_input_shape_argument(p)
    add_cpu_pipeline_argument(p)
    add_mynpu_arguments(p)
    add_output_arguments(p)
    p.set_defaults(handler=run)


def add_input_shape_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--input-shape", action="append", default=[], metavar="NAME=SHAPE",
        help="fix an ONNX model input's unknown dimensions, e.g. --input-shape x=1x3x320x320 (repeatable; NAME may "
        "be left out when the model has one input): the model is compiled for that shape instead of with dynamic "
        "shapes, which some operators do not compile with; dimensions the model declares keep their sizes",
    )
    p.add_argument(
        "--input-value", action="append", default=[], metavar="NAME=VALUE",
        help="make an ONNX model's input a constant, e.g. --input-value sr=16000 (repeatable; NAME=V1,V2,... for "
        "an input of several values): what depends on it, such as an If on a sample rate, is settled at import "
        "and the compiled model no longer has that input",
    )


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    """-q and -v: how much a command says on stderr."""
    p.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    p.add_argument(
        "-v", "--verbose", action="store_true",
        help="print progress line by line, IREE's and the libraries' logs, and an error's full diagnostics "
        "(by default a failure is one line on stderr)",
    )


def add_cpu_pipeline_argument(p: argparse.ArgumentParser) -> None:
    from npukit.targets.cpu_pipeline import DEFAULT_CPU_PIPELINE, CpuPipeline

    p.add_argument(
        "--cpu-pipeline", choices=[c.value for c in CpuPipeline], default=DEFAULT_CPU_PIPELINE.value,
        help="tuned: int8 convolutions, depthwise and fully connected layers, average pools and int8 elementwise "
        "operations of one tensor (as 256-entry tables) call npukit's "
        "kernels (chosen per layer by `npukit tune` results where there are any) and all quantized arithmetic is "
        "TFLite's integer arithmetic; stock: IREE's own CPU code, to compare against "
        f"(default: {DEFAULT_CPU_PIPELINE.value})",
    )
    p.add_argument(
        "--flash-budget", type=int, metavar="BYTES",
        help="flash the tuned kernels' constants (weights in the kernels' layout, biases, requantization tables) "
        "may take: on DSP cores the layers that save the most instructions per byte get int16-widened weights "
        "while the total fits; an error if the layers need more with int8 weights (default: no budget, int8 "
        "weights, one copy of each, except where `npukit tune` chose int16)",
    )


def add_mynpu_arguments(p: argparse.ArgumentParser) -> None:
    """The --mynpu-* options (hardware configuration and report) of mynpu targets."""
    from npukit.mynpu.options import MYNPU_FLAGS

    group = p.add_argument_group("mynpu targets (mynpu, mynpu+CPU)")
    for flag, text in MYNPU_FLAGS.items():
        if flag == "mynpu-show-cpu-operations":
            group.add_argument(f"--{flag}", action="store_true", help=text)
        else:
            group.add_argument(f"--{flag}", metavar="VALUE", help=text)


def mynpu_options(args: argparse.Namespace):
    """MynpuOptions from the parsed --mynpu-* options, or None when none was given."""
    from npukit.mynpu.options import MYNPU_FLAGS, MynpuOptions

    given = {}
    for flag in MYNPU_FLAGS:
        value = getattr(args, flag.replace("-", "_"))
        if value not in (None, False):
            given[flag] = "true" if value is True else value
    return MynpuOptions.from_flags(given) if given else None


def run(args: argparse.Namespace, console: Console) -> int:
    from dataclasses import replace

    import npukit
    from npukit.mynpu.report import cpu_operations_text

    mynpu = mynpu_options(args)
    show_cpu_operations = mynpu is not None and mynpu.show_cpu_operations
    if show_cpu_operations:
        mynpu = replace(mynpu, show_cpu_operations=False)  # printed below, on stdout
    result = npukit.compile(
        args.model,
        target=args.target,
        output=args.mode,
        out_dir=args.out_dir,
        name=args.name,
        execution_model=args.execution_model,
        iree_flags=args.iree_flag,
        progress=console.progress,
        mynpu=mynpu,
        cpu_pipeline=args.cpu_pipeline,
        flash_budget=args.flash_budget,
        input_shapes=args.input_shape,
        input_values=args.input_value,
        time_limit=args.time_limit,
        log=console.log,
    )
    console.clear_status()
    if show_cpu_operations and result.manifest.get("mynpu") is not None:
        print(cpu_operations_text(result.manifest["mynpu"]))
    if args.quiet:
        return 0
    m = result.manifest
    print(f"{result.name}: {m['target']['name']} {m['mode']} ({m['execution_model']}) in {result.directory}")
    for role, f in m["files"].items():
        extra = ""
        if "elf" in f:
            s = f["elf"]["sizes"]
            extra = f"  text {s['text']} rodata {s['rodata']} data {s['data']} bss {s['bss']}"
        print(f"  {f['path']:<44} {f['bytes']:>9} bytes{extra}")
    for e in result.entry_points:
        ins = ", ".join(f"{t.dtype}[{'x'.join('?' if d is None else str(d) for d in t.shape)}]" for t in e.inputs)
        outs = ", ".join(f"{t.dtype}[{'x'.join('?' if d is None else str(d) for d in t.shape)}]" for t in e.outputs)
        print(f"  entry {e.name}({ins}) -> {outs}")
    print(f"  {len(result.dispatches)} dispatches, compiled in {m['compile_seconds']:.1f} s")
    for w in m["warnings"]:
        print(f"  warning: {w}")
    return 0
