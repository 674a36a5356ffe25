"""``npukit tune``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from npukit.cli.compile_command import add_output_arguments
from npukit.cli.console import Console
from npukit.errors import NpukitError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "tune",
        help="measure the tuned CPU pipeline's kernel choices per layer and store the best in the tuning database",
        description="For every layer of MODEL that npukit's int8 kernels run, measure each way the kernels can "
        "run it on TARGET and record the best in the tuning database, which every later tuned compile for that "
        "target reads (npukit compile, deploy, iree-compile --npukit-cpu-pipeline=tuned). A layer is matched by "
        "its geometry (shapes, strides, layouts), so the results also serve other models with the same layers.\n\n"
        "The choices: on Cortex-M cores with the DSP extension, int8 weights or weights widened to int16 at "
        "compile time (fewer instructions per MAC, twice the weight flash); on the x86 host, the vector "
        "convolution's packed or direct form.\n\n"
        "A board is measured under QEMU -icount: each dispatch's instructions, deterministic, one firmware per "
        "round of choices, then the winners are built once more and checked against the host's outputs. The "
        "host is measured by timing each dispatch over repeated runs on npukit's runtime; a choice must be at "
        "least 3%% faster than the default to replace it.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  npukit tune kws_int8.onnx --target mps2-an386\n"
        "  npukit tune resnet8_int8.tflite --target host --runs 500\n"
        "  npukit tune model.onnx --target mps2-an386 --database tuning.json   # a project's own database\n"
        "\n"
        "The database is $NPUKIT_TUNING_DB, or tuning.json in npukit's cache directory; compiles read the same\n"
        "file (npukit.compile(..., tuning_db=...) names another).",
    )
    p.add_argument("model", help="the model file (.onnx, .tflite, .mlir, .mlirbc)")
    p.add_argument("-t", "--target", required=True,
                   help="'host', or a board to measure on under QEMU (see `npukit deploy --list-boards`)")
    p.add_argument("--database", metavar="FILE", help="the tuning database to update (default: the one compiles read)")
    p.add_argument("-m", "--mode", choices=["static", "embedded"], help="a board's deploy mode (default: static)")
    p.add_argument("--runs", type=int, default=200, metavar="N",
                   help="host only: timed runs per round (default: 200)")
    p.add_argument("--json", metavar="FILE", help="also write what was measured as JSON")
    add_output_arguments(p)
    p.set_defaults(handler=run)


def _table(result) -> str:
    unit = "instructions" if result.unit == "instructions" else "us"
    scale = 1.0 if result.unit == "instructions" else 1e6
    lines = [f"tuned {len(result.layers)} layers for {result.target} in {result.seconds:.0f} s "
             f"(figures: {unit} per inference of each layer's dispatches)"]
    for r in result.layers:
        figures = ", ".join(f"{c.describe()}: {m * scale:,.{0 if scale == 1.0 else 1}f}" for c, m in
                            zip(r.candidates, r.measured))
        lines.append(f"  {r.choice.describe():<26} {r.key}\n      {figures}")
    if result.default_total and result.tuned_total:
        lines.append(f"instructions per inference: {result.default_total:,.0f} with the defaults, "
                     f"{result.tuned_total:,.0f} tuned")
    lines += result.notes
    lines.append(f"database: {result.database}")
    return "\n".join(lines)


def run(args: argparse.Namespace, console: Console) -> int:
    from tqdm import tqdm

    from npukit.tuning.tuning_search import tune

    if args.runs < 1:
        raise NpukitError(f"--runs must be at least 1, not {args.runs}")
    # A bar on a terminal (erased at the end); progress lines with --verbose.
    bar = None if args.quiet or console.verbose or not console.interactive else \
        tqdm(total=1, desc="npukit tune", unit="build", file=console.stream, leave=False)

    def progress(message: str) -> None:
        if bar is not None:
            bar.set_postfix_str(message)
        else:
            console.progress(message)

    def step(done: int, total: int) -> None:
        if bar is not None:
            bar.total = max(total, done)
            bar.update(done - bar.n)

    try:
        result = tune(args.model, args.target, database=args.database, mode=args.mode, runs=args.runs,
                      progress=progress, step=step)
    finally:
        if bar is not None:
            bar.close()
        console.clear_status()
    print(_table(result))
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result.to_json(), indent=2) + "\n")
    return 0
