"""The shared int8 models compiled for mynpu: what goes to the NPU, its cycles,
the board's CPU work beside it, and the outputs against TFLite, in one run.

    python benchmarks/mynpu_models.py [--models DIR] [--board mps2-an386] [--inputs 20]

Per model, with the default hardware configuration (64 PEs, 256 KiB SRAM,
output parallelism, 16 B/cycle, 500 MHz):

- the compiler's report: dispatches and MACs on the NPU, estimated cycles;
- ``npukit deploy --npu mynpu`` on the board (static, its default; QEMU
  ``-icount``): the NPU cycles the simulator counted, the CPU's instructions
  without the simulation's, flash and RAM;
- the same with ``--mode embedded`` (the CPU code an ELF loaded into RAM):
  flash and RAM beside the static build's;
- the CPU-only build on the same board (``npukit deploy``, embedded and
  static): instructions per inference, for comparison;
- the mynpu build on seeded random inputs, on the host (npukit's runtime
  with the simulator) and on the board (the deploy's samples), against the
  TFLite interpreter, both with its reference kernels (TFLite Micro's integer
  arithmetic) and with its default XNNPACK delegate: the largest difference
  in LSB and how many inputs agree exactly.

Writes ``models.md`` and ``models.json`` to the output directory. A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
MODELS = ("kws_int8", "resnet8_int8")


def _tflite(path: Path, resolver):
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path), experimental_op_resolver_type=resolver)
    interpreter.allocate_tensors()
    source, sink = interpreter.get_input_details()[0], interpreter.get_output_details()[0]

    def run(x: np.ndarray) -> np.ndarray:
        interpreter.set_tensor(source["index"], x.reshape(source["shape"]))
        interpreter.invoke()
        return interpreter.get_tensor(sink["index"]).copy()

    return run


def against_tflite(models_dir: Path, name: str, inputs: list, outputs: list) -> dict:
    """Largest difference in LSB and exact agreements with the TFLite
    interpreter, with its reference kernels and with its default delegate."""
    from ai_edge_litert.interpreter import OpResolverType

    figures = {}
    for label, resolver in (("reference", OpResolverType.BUILTIN_REF), ("default", OpResolverType.AUTO)):
        tflite = _tflite(models_dir / f"{name}.tflite", resolver)
        lsb = [int(np.abs(y.astype(np.int32) - tflite(x).reshape(y.shape).astype(np.int32)).max())
               for x, y in zip(inputs, outputs)]
        figures[label] = {"max_lsb": max(lsb), "exact": sum(d == 0 for d in lsb), "inputs": len(inputs)}
    return figures


def measure(models_dir: Path, name: str, board: str, count: int) -> dict:
    from npukit.deploy.deploy_model import deploy

    model = models_dir / f"{name}.onnx"
    print(f"{name}: deploying with mynpu on {board} ({count} samples)", file=sys.stderr, flush=True)
    npu = deploy(model, board, npu="mynpu", seed=0, samples=count)
    report = npu.artifact.manifest["mynpu"]
    print(f"{name}: deploying with mynpu on {board} (embedded)", file=sys.stderr, flush=True)
    memory = {"static": npu.to_json(), "embedded": deploy(model, board, npu="mynpu", mode="embedded", seed=0).to_json()}
    cpu_only = {}
    for mode in ("embedded", "static"):
        print(f"{name}: deploying CPU-only ({mode}) on {board}", file=sys.stderr, flush=True)
        cpu_only[mode] = deploy(model, board, mode=mode, seed=0).instructions
    # The deploy computed each sample's expected outputs with the same mynpu
    # compile on the host (npukit's runtime with the simulator).
    print(f"{name}: {count} inputs against TFLite on the host and the board", file=sys.stderr, flush=True)
    inputs = [s.inputs[0] for s in npu.samples]
    tflite = {"host": against_tflite(models_dir, name, inputs, [s.host_outputs[0] for s in npu.samples]),
              "board": against_tflite(models_dir, name, inputs, [s.outputs[0] for s in npu.samples])}
    return {
        "model": name,
        "board": board,
        "summary": report["summary"],
        "hardware": report["hardware"],
        "cpu_dispatches": [{"name": r["name"], "macs": r["macs"], "reason": r["reason"],
                            "requantization": r.get("cpu_requantization", "none")}
                           for r in report["dispatches"] if r["device"] == "cpu"],
        "deploy": npu.to_json(),
        "cpu_only_instructions": cpu_only,
        "memory": {mode: {"flash": d["flash"], "flash_bytes": d["flash_bytes"], "ram": d["ram"],
                          "ram_bytes": d["ram_bytes"]} for mode, d in memory.items()},
        "tflite": tflite,
    }


def write_report(rows: list[dict], out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "models.json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = [
        "# The shared int8 models on mynpu",
        "",
        "Default hardware configuration (64 PEs, 256 KiB SRAM, output parallelism, 16 B/cycle, 500 MHz). "
        "Board figures: `npukit deploy --npu mynpu` under QEMU `-icount` (static, inline-dynamic); "
        "CPU instructions leave out those the simulator executes. Generated by `benchmarks/mynpu_models.py`.",
        "",
        "| model | NPU dispatches | NPU share of MACs | NPU cycles / inference | NPU time | CPU instructions "
        "with mynpu | CPU-only instructions (embedded / static) | CPU work removed | flash | RAM |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s, d = r["summary"], r["deploy"]
        cpu = d["npu"]["cpu_instructions"]
        only = r["cpu_only_instructions"]
        lines.append(
            f"| {r['model']} | {s['npu_dispatches']} of {s['dispatches']} | {100 * s['npu_mac_share']:.2f}% "
            f"({s['npu_macs']:,} of {s['macs']:,}) | {d['npu']['cycles']:,} | {d['npu']['microseconds']:,.1f} us "
            f"| {cpu:,} | {only['embedded']:,} / {only['static']:,} | {only['embedded'] / cpu:.1f}x "
            f"| {d['flash_bytes']:,} B | {d['ram_bytes']:,} B |")
    lines += ["", "Flash and RAM of the mynpu build, static (the NPU's executable read from flash in place, CPU code "
              "only for the CPU's dispatches) and embedded (its CPU code an ELF loaded into the arena). RAM is "
              "static data + arena high-water + stack high-water, without the simulated NPU's SRAM. Flash is the "
              "model's, the runtime's and the simulator's, without the application (it holds the samples' inputs "
              "and expected outputs, 20 sets in the static build, one in the embedded one):", "",
              "| model | mode | model constants | model code | flash | RAM |", "|---|---|---|---|---|---|"]
    for r in rows:
        for mode, m in r["memory"].items():
            f = m["flash"]
            flash = f["constants"] + f["model_code"] + f["runtime"] + f["npu_simulator"]
            lines.append(f"| {r['model']} | {mode} | {f['constants']:,} B | {f['model_code']:,} B "
                         f"| {flash:,} B | {m['ram_bytes']:,} B |")
    lines += ["", "Against the TFLite interpreter: the mynpu build on the host (npukit's runtime with the simulator) "
              "and on the board (`npukit deploy --npu mynpu --samples N`), on the same seeded random inputs:", "",
              "| model | where | inputs | vs reference kernels: max LSB, exact | vs default (XNNPACK): max LSB, exact |",
              "|---|---|---|---|---|"]
    for r in rows:
        for where in ("host", "board"):
            ref, default = r["tflite"][where]["reference"], r["tflite"][where]["default"]
            lines.append(f"| {r['model']} | {where} | {ref['inputs']} | {ref['max_lsb']}, {ref['exact']} of "
                         f"{ref['inputs']} | {default['max_lsb']}, {default['exact']} of {default['inputs']} |")
    lines += ["", "Dispatches left on the CPU (and how their CPU code requantizes):", ""]
    for r in rows:
        for c in r["cpu_dispatches"]:
            lines.append(f"- {r['model']} `{c['name']}` ({c['macs']:,} MACs): {c['reason']} "
                         f"[requantization: {c['requantization']}]")
    (out_dir / "models.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=Path,
                        default=Path(os.environ.get("NPUKIT_MODELS_DIR", REPO.parent / "shared" / "models")))
    parser.add_argument("--board", default="mps2-an386")
    parser.add_argument("--inputs", type=int, default=20, help="random inputs against TFLite (default: 20)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "mynpu")
    parser.add_argument("--render-only", action="store_true", help="rewrite models.md from models.json")
    args = parser.parse_args()
    if args.render_only:
        rows = json.loads((args.out / "models.json").read_text())
    else:
        rows = [measure(args.models, name, args.board, args.inputs) for name in MODELS]
    write_report(rows, args.out)
    print((args.out / "models.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
