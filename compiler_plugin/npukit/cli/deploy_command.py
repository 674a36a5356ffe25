"""``npukit deploy``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from npukit.cli.compile_command import add_cpu_pipeline_argument, add_input_shape_argument, add_mynpu_arguments, \
    add_output_arguments, mynpu_options
from npukit.cli.console import Console
from npukit.errors import NpukitError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "deploy",
        help="compile a model, build firmware for a QEMU board, run it and report flash, RAM and instructions",
        description="Compile a model for a board's CPU, build a firmware around npukit's runtime with the "
        "model's input built in, run it under QEMU (-icount: deterministic instruction counts), check its "
        "outputs against the host's and print what it costs: flash (model code, constants, runtime), RAM "
        "(static data, arena and stack high-water marks), instructions per inference and per MAC. With --npu "
        "mynpu the model is compiled for the NPU and the board's CPU: the NPU's dispatches run on the mynpu "
        "simulator linked into the firmware, and its counted cycles are reported beside the CPU's instructions.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  npukit deploy --list-boards\n"
        "  npukit deploy model.onnx --board mps2-an386\n"
        "  npukit deploy model.onnx --board virt-rv32imf --mode embedded --input x.npy --json report.json\n"
        "  npukit deploy model.onnx --board mps2-an386 --keep fw/   # keep the CMake firmware project\n"
        "  npukit deploy model.onnx --board mps2-an386 --plot plots/  # memory.png and flash.png\n"
        "  npukit deploy model.onnx --board mps2-an386 --npu mynpu --mynpu-sram-kib 64\n"
        "\n"
        "exit status: 0 when the board's outputs match the host's, 1 on an error or when they differ.",
    )
    p.add_argument("model", nargs="?", help="the model file (.onnx, .tflite, .mlir, .mlirbc)")
    p.add_argument("-b", "--board", help="the board (see --list-boards)")
    p.add_argument("--list-boards", action="store_true", help="list the boards with their memory and exit")
    p.add_argument(
        "-m", "--mode", choices=["static", "embedded"],
        help="static: executables linked into the firmware, constants and the NPU's streams in flash (the "
        "default); embedded: ELF executables the runtime loads into RAM",
    )
    p.add_argument(
        "--npu", choices=["mynpu"],
        help="compile for this NPU plus the board's CPU (mynpu+CPU) and run the NPU's dispatches on its "
        "simulator in the firmware",
    )
    p.add_argument(
        "-i", "--input", action="append", default=[], metavar="FILE",
        help="a .npy file per model input, in order (default: seeded random inputs)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default: 0)")
    p.add_argument(
        "--samples", type=int, default=1, metavar="N",
        help="run N random input sets (seeds SEED, SEED+1, ...) on the board and check each against the host; "
        "the figures come from the first (default: 1)",
    )
    p.add_argument("--json", metavar="FILE", help="also write the figures and outputs as JSON")
    p.add_argument(
        "--plot", metavar="DIR",
        help="write DIR/memory.png (live activations per layer: the lower bound beside the memory plan and the "
        "RAM used) and DIR/flash.png (the flash split)",
    )
    p.add_argument(
        "--keep", metavar="DIR",
        help="keep the firmware project in DIR (a new directory): CMake sources, the built ELF and map, the "
        "compiled model and the input and host outputs as .npy",
    )
    p.add_argument(
        "--execution-model", choices=["inline-dynamic", "async"],
        help="inline-dynamic (the small runtime path, default) or async (IREE's full HAL)",
    )
    p.add_argument("--stack-size", type=int, default=None,
                   help="bytes of stack for the firmware (default: the stack bound read from the firmware's code "
                   "and 1 KiB, or 32768 when there is no bound)")
    p.add_argument(
        "--arena-limit", type=int, metavar="BYTES",
        help="cap the runtime's arena at BYTES, to check that the model fits a part with less RAM",
    )
    p.add_argument(
        "--status-messages", action="store_true",
        help="build the firmware with error messages (they cost about 7 KiB of flash; without them an error "
        "carries only its code; --arena-limit turns them on)",
    )
    p.add_argument(
        "--iree-flag", action="append", default=[], metavar="FLAG",
        help="a stock iree-compile flag for the board's compile (repeatable)",
    )
    add_input_shape_argument(p)
    add_cpu_pipeline_argument(p)
    add_mynpu_arguments(p)
    add_output_arguments(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from npukit.targets.boards import list_boards
    from npukit.deploy.deploy_report import format_board_list, format_outputs, format_table

    if args.list_boards:
        print(format_board_list(list_boards()))
        return 0
    if not args.model or not args.board:
        raise NpukitError("deploy needs a model and --board BOARD (see `npukit deploy --help`, "
                          "`npukit deploy --list-boards`)")
    from npukit.deploy.deploy_model import deploy

    result = deploy(
        args.model, args.board, mode=args.mode, npu=args.npu, mynpu=mynpu_options(args), inputs=args.input,
        seed=args.seed, samples=args.samples, keep=args.keep, execution_model=args.execution_model, iree_flags=args.iree_flag, stack_size=args.stack_size,
        arena_limit=args.arena_limit, status_messages=args.status_messages, progress=console.progress,
        cpu_pipeline=args.cpu_pipeline, flash_budget=args.flash_budget, input_shapes=args.input_shape,
        input_values=args.input_value,
    )
    console.clear_status()
    if not args.quiet:
        print(format_outputs(result))
        print()
    print(format_table(result))
    if result.project_dir is not None:
        print(f"firmware project kept in {result.project_dir} (see its README.md)")
    if args.plot:
        from npukit.deploy.memory_plots import write_plots

        written = write_plots(result, Path(args.plot))
        print(f"plots written: {', '.join(str(p) for p in written)}")
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result.to_json(), indent=2) + "\n")
    if not result.outputs_match_host:
        raise NpukitError(f"the outputs on {result.board.name} differ from the host's")
    return 0
