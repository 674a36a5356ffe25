"""Input padding read inside the layers against IREE's padded copies, on the boards.

    python benchmarks/fused_padding.py [--models kws_int8.tflite,mobilenet_v1_025_96_rgb-int8,...]
                                       [--boards mps2-an386,virt-rv32imf] [--npu]
                                       [--out benchmarks/reports/boards]

Each model is deployed twice with ``npukit deploy`` (static, tuned pipeline,
seeded random input): as tuned compiles run by default, with each
convolution's ``tensor.pad`` left inside its dispatch
(``--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops``,
npukit/passes/fused_padding.py: the kernels or the NPU read the padding),
and with that flag set to false (IREE's fill and copy into a padded buffer
before the layer). The report gives, for both: RAM without the stack
(static data + the arena's high-water mark), the planned block, the peak
stack, instructions per inference (QEMU ``-icount``; with ``--npu`` the
CPU's instructions beside the NPU's cycles), the model's flash (its code
and constants), and
whether the board's outputs equal the host's.

Models: names of the shared models (``kws_int8.tflite``) or of the zoo's
cached entries (``mobilenet_v1_025_96_rgb-int8``). Writes
``fused_padding.md`` and ``fused_padding.json``. A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FLAG = "--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops"
DEFAULT_MODELS = "kws_int8.tflite,mobilenet_v1_025_96_rgb-int8,mobilenet_v1_025_96_gray-int8"


def _model_path(name: str) -> Path:
    models_dir = Path(os.environ.get("NPUKIT_MODELS_DIR", REPO.parent / "shared" / "models"))
    if (models_dir / name).exists():
        return models_dir / name
    sys.path.insert(0, str(REPO / "tests"))
    from zoo.catalogue import entries

    for e in entries():
        if Path(e.name).stem == name:
            return e.path()
    raise SystemExit(f"no model {name!r} among the shared models or the zoo")


def measure(name: str, model: Path, board: str, fused: bool, npu: bool) -> dict:
    from npukit.deploy.deploy_model import deploy

    started = time.monotonic()
    row = {"model": name, "board": board, "build": "npu" if npu else "cpu", "padding": "in the layers" if fused
           else "padded copies"}
    try:
        result = deploy(model, board, npu="mynpu" if npu else None, seed=0,
                        iree_flags=() if fused else (f"{FLAG}=false",))
    except Exception as e:  # a failed build is a figure too
        return {**row, "error": str(e).splitlines()[0]}
    flags = result.artifact.manifest["iree_flags"]
    row.update({
        "flag_kept": FLAG in flags,
        "ram_without_stack": result.ram.without_stack,
        "arena_planned": result.arena_planned,
        "stack": result.ram.stack_high_water,
        "instructions": result.cpu_instructions,
        "npu_cycles": result.npu.cycles if npu and result.npu is not None else None,
        "model_flash": result.flash.model_code + result.flash.constants,
        "activation_lower_bound": result.activation_lower_bound,
        "outputs_identical_to_host": result.outputs_identical_to_host,
        "seconds": round(time.monotonic() - started, 1),
    })
    return row


def _n(value) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else (
        "n/a" if value is None else str(value))


def markdown(rows: list[dict]) -> str:
    lines = [
        "# Input padding in the layers against IREE's padded copies",
        "",
        "`npukit deploy` (static, tuned pipeline, seeded random input), once as tuned compiles run (each "
        "convolution reads its input padding itself: `--iree-dispatch-creation-enable-fuse-padding-into-linalg-"
        "consumer-ops`, `flag kept` yes) and once with that flag false (IREE's fill and copy into a padded "
        "buffer). RAM without the stack = static data + the arena's high-water mark; instructions per inference "
        "(QEMU -icount, the board counter's steps; NPU builds: the CPU's, without the simulator's); model flash = the "
        "model's code and constants (text + rodata).",
        "",
        "| model | board | build | padding | flag kept | RAM w/o stack | planned | lower bound | stack | "
        "instructions | NPU cycles | model flash | identical to host |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['board']} | {r['build']} | {r['padding']} | error: {r['error']} "
                         "||||||||")
            continue
        lines.append(
            f"| {r['model']} | {r['board']} | {r['build']} | {r['padding']} | {'yes' if r['flag_kept'] else 'no'} | "
            f"{_n(r['ram_without_stack'])} | {_n(r['arena_planned'])} | {_n(r['activation_lower_bound'])} | "
            f"{_n(r['stack'])} | {_n(r['instructions'])} | {_n(r['npu_cycles'])} | {_n(r['model_flash'])} | "
            f"{'yes' if r['outputs_identical_to_host'] else 'no'} |")
    lines += ["", "Bytes and instructions. Written by `benchmarks/fused_padding.py`.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=DEFAULT_MODELS)
    parser.add_argument("--boards", default="mps2-an386")
    parser.add_argument("--npu", action="store_true", help="NPU builds (--npu mynpu) instead of CPU ones")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "boards")
    args = parser.parse_args()
    rows = []
    for name in args.models.split(","):
        model = _model_path(name)
        for board in args.boards.split(","):
            for fused in (True, False):
                rows.append(measure(name, model, board, fused, args.npu))
                print(json.dumps(rows[-1]), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fused_padding.json").write_text(json.dumps(rows, indent=1) + "\n")
    (args.out / "fused_padding.md").write_text(markdown(rows))


if __name__ == "__main__":
    main()
