"""npukit's demo: compile the bundled int8 digits CNN and run it on real images.

    make demo            # or: python samples/digits/demo.py

Compiles ``digits_int8.onnx`` (trained by ``train.py`` on scikit-learn's
handwritten digits) for this machine with npukit, runs it on the 360 held-out
test images with IREE's runtime, and prints predictions, accuracy and timing.
Then deploys it to the Cortex-M4 board ``mps2-an386`` under QEMU with the first
test image built in, and prints the board's prediction and what the firmware
costs: flash, RAM and instructions.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SHADES = " .:-=+*#%@"


def render(image: np.ndarray) -> list[str]:
    """An 8x8 image in [0, 1] as 8 lines of text."""
    return ["".join(SHADES[min(int(v * (len(SHADES) - 1) + 0.5), len(SHADES) - 1)] * 2 for v in row) for row in image]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=HERE / "digits_int8.onnx")
    parser.add_argument("--target", default="host", help="compile target (default: host)")
    parser.add_argument("--out-dir", type=Path, default=Path("build/demo"))
    parser.add_argument("--show", type=int, default=4, help="how many test images to draw")
    parser.add_argument("--board", default="mps2-an386", help="board to deploy to (default: mps2-an386; "
                        "'none' to skip)")
    args = parser.parse_args(argv)

    import npukit

    data = np.load(HERE / "digits_test.npz")
    images, labels = data["images"], data["labels"]

    print(f"npukit demo: {args.model.name} -> {args.target}")
    t0 = time.perf_counter()
    result = npukit.compile(args.model, target=args.target, out_dir=args.out_dir / args.target,
                            progress=lambda m: print(f"  {m}", flush=True))
    compile_s = time.perf_counter() - t0
    vmfb = result.files["vmfb"]
    print(f"  compiled in {compile_s:.1f} s: {vmfb} ({vmfb.stat().st_size} bytes, "
          f"{len(result.dispatches)} dispatches)")

    model = npukit.load(result)
    model(images[0][None])  # first call initialises the module
    predictions = []
    latencies = []
    for image in images:
        t = time.perf_counter()
        (logits,) = model(image[None])
        latencies.append(time.perf_counter() - t)
        predictions.append(int(np.argmax(logits)))
    predictions = np.array(predictions)

    shown = min(args.show, len(images))
    if shown:
        print()
        rows = [render(images[i][0]) for i in range(shown)]
        for line in range(8):
            print("  " + "   ".join(r[line] for r in rows))
        print("  " + "   ".join(f"label {labels[i]} -> {predictions[i]}".ljust(16) for i in range(shown)))
        print()

    accuracy = float((predictions == labels).mean())
    lat = np.array(latencies) * 1e6
    print(f"  accuracy: {accuracy * 100:.2f}% on {len(labels)} held-out images "
          f"({int((predictions != labels).sum())} wrong)")
    print(f"  latency per inference: median {np.median(lat):.1f} us, p90 {np.percentile(lat, 90):.1f} us "
          f"(IREE runtime, local-sync, this machine)")

    if args.board != "none":
        deploy_to_board(args.model, args.board, images[0][None], int(labels[0]))
    return 0


def deploy_to_board(model: Path, board: str, image: np.ndarray, label: int) -> None:
    from npukit.deploy.deploy_model import deploy
    from npukit.deploy.deploy_report import format_table

    print(f"\nnpukit demo: deploying {model.name} to {board} (QEMU)")
    result = deploy(model, board, inputs=[image], progress=lambda m: print(f"  {m}", flush=True))
    prediction = int(np.argmax(result.outputs[0]))
    same = "the same as" if result.outputs_match_host else "DIFFERENT from"
    print(f"  the board predicts {prediction} for the first test image (label {label}); its logits are {same} "
          "the host's")
    print()
    print(format_table(result))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # one line, no traceback, for user errors
        from npukit.errors import NpukitError

        if isinstance(e, NpukitError):
            print(f"demo: error: {e}", file=sys.stderr)
            sys.exit(1)
        raise
