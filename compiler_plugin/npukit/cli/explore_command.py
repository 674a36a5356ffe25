"""``npukit explore``."""

from __future__ import annotations

import argparse

from npukit.cli.compile_command import add_output_arguments
from npukit.cli.console import Console
from npukit.errors import NpukitError


def _list(kind):
    def parse(text: str) -> list:
        try:
            values = [kind(v.strip()) for v in text.split(",") if v.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}") from None
        if not values:
            raise argparse.ArgumentTypeError("expected at least one value")
        return values

    return parse


def add_parser(sub) -> None:
    from npukit.exploration.explore_model import PAPER_DEPTHWISE, PAPER_PARALLEL, PAPER_PES, PAPER_SRAM_KIB

    def joined(values) -> str:
        return ",".join(str(v) for v in values)

    p = sub.add_parser(
        "explore",
        help="sweep mynpu hardware configurations for a model: cycles per layer and configuration, with plots",
        description="Compiles MODEL once for the mynpu target, up to the NPU's partitioning, and evaluates every "
        "combination of the hardware axes: per configuration only the NPU's predicates, scheduling, tiling, "
        "stream generation and the device's cycle model run (on all cores), giving exactly the figures "
        "`npukit compile -t mynpu --mynpu-...` reports for that configuration. Layers left on the CPU are "
        "costed from npukit's tuned kernels' measured instructions per MAC on --cpu at --cpu-clock-mhz, "
        "reported apart from the NPU's cycles and added into the total time.\n\n"
        "Writes to DIR: explore.json (every configuration with its layers), explore.csv, cycles.png (the NPU's "
        "cycles and the time per inference by operation type per configuration, labelled like 512K-64-O: SRAM, "
        "PEs, parallelism), pareto.png (time against PEs x SRAM) and layers.png (per-layer time of the best and "
        "the worst configuration).\n\n"
        "The defaults are the design-space study of 'Compiler Toolchains for Deep Learning Workloads on "
        "Embedded Platforms' (TinyML 2021): 3 depthwise scenarios x 2 PE counts x 3 SRAM sizes x 2 "
        "parallelisms.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  npukit explore mobilenet_v1.tflite -o mobilenet-explore\n"
        "  npukit explore kws_int8.onnx --pes 64,128 --sram-kib 32,256 --parallel input,output,output-pixels \\\n"
        "      --depthwise npu,cpu -o kws-explore",
    )
    p.add_argument("model", help="the model file (.onnx, .tflite, .mlir, .mlirbc)")
    p.add_argument("-o", "--output", metavar="DIR", help="output directory (default: ./<model>-explore)")
    p.add_argument("--pes", type=_list(int), default=list(PAPER_PES), metavar="N,...",
                   help=f"processing elements (default: {joined(PAPER_PES)})")
    p.add_argument("--sram-kib", type=_list(int), default=list(PAPER_SRAM_KIB), metavar="KIB,...",
                   help=f"SRAM sizes in KiB (default: {joined(PAPER_SRAM_KIB)})")
    p.add_argument("--parallel", type=_list(str), default=list(PAPER_PARALLEL), metavar="MODE,...",
                   help=f"input, output, output-pixels (default: {joined(PAPER_PARALLEL)})")
    p.add_argument("--depthwise", type=_list(str), default=list(PAPER_DEPTHWISE), metavar="MODE,...",
                   help=f"npu, per-channel, cpu (default: {joined(PAPER_DEPTHWISE)})")
    p.add_argument("--dma-bytes-per-cycle", type=_list(int), default=[16], metavar="N,...",
                   help="DMA bandwidths (default: 16)")
    p.add_argument("--clock-mhz", type=_list(int), default=[500], metavar="MHZ,...",
                   help="NPU clocks (default: 500)")
    p.add_argument("--cpu", default="cortex-m4", metavar="CORE",
                   help="the core that runs what the NPU does not (measured: cortex-m4, cortex-m7, rv32imf; "
                        "default: cortex-m4)")
    p.add_argument("--cpu-clock-mhz", type=float, default=100.0, metavar="MHZ",
                   help="that core's clock (default: 100)")
    p.add_argument("-t", "--target", default="mynpu",
                   help="the compile target, 'mynpu' or 'mynpu+<cpu>' as `npukit compile -t` takes it "
                        "(default: mynpu)")
    p.add_argument("-j", "--jobs", type=int, metavar="N", help="worker processes (default: every core)")
    p.add_argument("--no-plots", action="store_true", help="write only explore.json and explore.csv")
    add_output_arguments(p)
    p.set_defaults(handler=run)


def _table(result) -> str:
    doc = result.document
    best = result.best()
    lines = [f"{'configuration':<14} {'depthwise':<11} {'NPU cycles':>12} {'CPU cycles':>13} {'total us':>11} "
             f"{'util':>6} {'on NPU':>7}"]
    for c in result.configurations:
        mark = "  <- fastest" if c is best else ""
        lines.append(f"{c['label']:<14} {c['depthwise']:<11} {c['npu_cycles']:>12,} {c['cpu_cycles']:>13,} "
                     f"{c['total_us']:>11,.1f} {100 * c['utilisation']:>5.1f}% {100 * c['npu_mac_share']:>6.1f}%"
                     f"{mark}")
    cpu = doc["cpu"]
    lines.append(f"{len(result.configurations)} configurations x {doc['layers']} layers: compile "
                 f"{doc['seconds']['compile']:.1f} s, sweep {doc['seconds']['sweep']:.2f} s "
                 f"({doc['layer_configurations_per_second']:,.0f} layer-configurations/s); CPU: {cpu['core']} at "
                 f"{cpu['clock_mhz']:g} MHz")
    lines.append(f"written: {', '.join(str(p) for p in result.files.values())}")
    return "\n".join(lines)


def run(args: argparse.Namespace, console: Console) -> int:
    from npukit.exploration.explore_model import explore

    if args.jobs is not None and args.jobs < 1:
        raise NpukitError(f"--jobs must be at least 1, not {args.jobs}")

    def step(done: int, total: int) -> None:
        console.progress(f"configurations: {done} of {total}")

    result = explore(args.model, args.output, pes=args.pes, sram_kib=args.sram_kib, parallel=args.parallel,
                     depthwise=args.depthwise, dma_bytes_per_cycle=args.dma_bytes_per_cycle,
                     clock_mhz=args.clock_mhz, cpu=args.cpu, cpu_clock_mhz=args.cpu_clock_mhz,
                     target=args.target, jobs=args.jobs, plots=not args.no_plots, progress=console.progress,
                     step=step)
    console.clear_status()
    print(_table(result))
    return 0
