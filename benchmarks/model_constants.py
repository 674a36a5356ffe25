"""Model constants in flash against what the model holds, on mps2-an386, CPU and NPU builds.

    python benchmarks/model_constants.py [--models kws_int8,resnet8_int8,zoo]
                                         [--select NAME,...] [--no-budget] [--out benchmarks/reports/boards]

Each model is deployed with ``npukit deploy --board mps2-an386`` three ways:
the CPU build as by default (int8 weights, one copy of each), the CPU build
with ``--flash-budget`` large enough for int16-widened weights on every
convolution (the former default's kernel forms), and the NPU build
(``--npu mynpu``, static). The report lists per build:

- model constants: the rodata of the vm-c module and the executables (the
  layer kernels' parameter blocks, the NPU's command streams and packed
  weights, what is left of IREE's constant pool, the program's own data),
  from the link map;
- the model's own constants: its int8 weights and int32 biases of the
  convolutions, depthwise convolutions and fully connected layers, plus 8
  bytes of requantization parameters (multiplier and shift) per output
  channel, read from the model file;
- the bound 1.1 x that + 4 KiB and whether the build meets it;
- instructions per MAC on the board (CPU builds), the default beside the
  int16 build, and whether every sample equals the host's.

The models: kws_int8 and resnet8_int8 (.onnx) from the shared models and
every int8 .tflite zoo model (``zoo``, the shared .tflite models among them;
generated into the zoo's cache when missing, TensorFlow needed then). A model that does not fit the
board's flash is listed as such. Writes ``constants.md`` and
``constants.json``; a run of some models replaces their rows and keeps the
others. A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
BOARD = "mps2-an386"
SLACK_FACTOR, SLACK_BYTES = 1.1, 4096
WIDE_BUDGET = 1 << 30  # room for int16 weights on every convolution
LAYERS = {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "CONV_3D"}
PARAMETER_BYTES = 8  # a requantization multiplier and shift per output channel


def _models(selected: list[str], names: set[str] | None) -> list[tuple[str, Path]]:
    sys.path.insert(0, str(REPO / "benchmarks"))
    models_dir = Path(os.environ.get("NPUKIT_MODELS_DIR", REPO.parent / "shared" / "models"))
    found = []
    for name in selected:
        if name == "zoo":
            from zoo.catalogue import entries
            from zoo_selection import int8_tflite_models

            wanted = {n for n, _record in int8_tflite_models(names)}
            found += [(e.name, e.path()) for e in entries() if e.name in wanted]
        elif not names or name in names:
            found.append((name, models_dir / (name if "." in name else f"{name}.onnx")))
    return found


def model_constants(model: Path) -> int:
    """The model's int8 weights + int32 biases of its quantized layers + 8 B per output channel."""
    if model.suffix == ".tflite":
        from npukit.frontends.tflite.flatbuffer_reader import read_tflite

        graph = read_tflite(model)
        total = 0
        for op in graph.operators:
            if op.opcode not in LAYERS:
                continue
            weights = graph.tensors[op.inputs[1]]
            if weights.dtype != "int8" or weights.data is None:
                continue
            total += weights.data.nbytes
            if len(op.inputs) > 2 and op.inputs[2] >= 0 and graph.tensors[op.inputs[2]].data is not None:
                total += graph.tensors[op.inputs[2]].data.nbytes
            channels = graph.tensors[op.outputs[0]].shape[-1]
            total += PARAMETER_BYTES * channels
        return total
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(model)).graph
    initializers = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    total = 0
    for node in graph.node:  # the QDQ weights and biases of each Conv/Gemm/MatMul
        if node.op_type != "DequantizeLinear" or node.input[0] not in initializers:
            continue
        data = initializers[node.input[0]]
        if data.dtype == np.int8 and data.ndim >= 2:
            total += data.nbytes + PARAMETER_BYTES * data.shape[0]
        elif data.dtype == np.int32:
            total += data.nbytes
    return total


def _deploy(model: Path, npu: bool, budget: int | None) -> dict:
    from npukit.deploy.deploy_model import deploy

    started = time.monotonic()
    try:
        result = deploy(model, BOARD, npu="mynpu" if npu else None, seed=0, samples=2, flash_budget=budget)
    except Exception as e:  # a failed build is a figure too
        return {"error": str(e).splitlines()[0]}
    kernels = result.artifact.manifest.get("kernel_constants") or {}
    pools = result.artifact.manifest.get("constant_pools") or []
    return {
        "constants": result.flash.constants,
        "flash": result.flash.total,
        "kernel_blocks": kernels.get("kernel_constants"),
        "int16_layers": kernels.get("int16_layers"),
        "layers": kernels.get("layers"),
        "pool_kept": sum(p["kept"] for p in pools),
        "pool_dropped": sum(p["bytes"] - p["kept"] for p in pools),
        # CPU builds only (an NPU build's count includes the simulator's instructions).
        "instructions": result.instructions if not npu else None,
        "instructions_per_mac": (round(result.instructions_per_mac, 3)
                                 if result.instructions_per_mac and not npu else None),
        "identical_to_host": result.outputs_identical_to_host,
        "seconds": round(time.monotonic() - started, 1),
    }


def measure(name: str, model: Path, budget_build: bool) -> dict:
    own = model_constants(model)
    limit = int(SLACK_FACTOR * own + SLACK_BYTES)
    row = {"model": name, "model_constants": own, "limit": limit,
           "cpu": _deploy(model, False, None), "npu": _deploy(model, True, None)}
    if budget_build:
        row["cpu_int16"] = _deploy(model, False, WIDE_BUDGET)
    for build in ("cpu", "npu", "cpu_int16"):
        b = row.get(build)
        if b and "constants" in b:
            b["ratio"] = round(b["constants"] / own, 3) if own else None
            b["passes"] = b["constants"] <= limit
    return row


def _n(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:,}" if isinstance(value, int) else ("n/a" if value is None else str(value))


def _cell(b: dict | None, key: str) -> str:
    if b is None:
        return ""
    if "error" in b:
        return "does not fit" if "overflow" in b["error"] or "will not fit" in b["error"] else "error"
    return _n(b.get(key))


def markdown(rows: list[dict]) -> str:
    lines = [
        "# Model constants against what the model holds",
        "",
        f"`npukit deploy --board {BOARD}`: CPU (static library, by default: int8 weights, one copy of each), "
        f"CPU with `--flash-budget {WIDE_BUDGET}` (int16-widened weights on every convolution: the former "
        "default's kernel forms) and NPU (`--npu mynpu`, static). Constants: the model's rodata in the firmware "
        "(the layer kernels' blocks, the NPU's streams and packed weights, what is left of IREE's constant pool, "
        "the program's data), from the link map. Own: the model's int8 weights and int32 biases of its "
        "convolution, depthwise and fully connected layers + 8 B of requantization parameters per output "
        f"channel. Limit: {SLACK_FACTOR} x own + {SLACK_BYTES // 1024} KiB.",
        "",
        "| model | own | limit | CPU constants | ratio | passes | instr/MAC | NPU constants | ratio | passes | "
        "int16 CPU constants | int16 instr/MAC | int16 layers | identical to host |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for r in rows:
        c, n, w = r["cpu"], r["npu"], r.get("cpu_int16")
        same = all(b.get("identical_to_host") for b in (c, n, w) if b and "error" not in b)
        lines.append(
            f"| {r['model']} | {_n(r['model_constants'])} | {_n(r['limit'])} | {_cell(c, 'constants')} | "
            f"{_cell(c, 'ratio')} | {_cell(c, 'passes')} | {_cell(c, 'instructions_per_mac')} | "
            f"{_cell(n, 'constants')} | {_cell(n, 'ratio')} | {_cell(n, 'passes')} | {_cell(w, 'constants')} | "
            f"{_cell(w, 'instructions_per_mac')} | "
            f"{'' if not w or 'error' in w else str(w['int16_layers']) + ' of ' + str(w['layers'])} | "
            f"{'yes' if same else 'no'} |")
    fitting = [r for r in rows for b in ("cpu", "npu") if "constants" in r[b]]
    passing = [r for r in rows for b in ("cpu", "npu") if r[b].get("passes")]
    lines += ["", f"Builds within the limit: {len(passing)} of {len(fitting)} that fit the board.", ""]
    errors = [(r["model"], b, r[b]["error"]) for r in rows for b in ("cpu", "npu", "cpu_int16")
              if r.get(b) and "error" in r[b]]
    for model, build, error in errors:
        lines.append(f"- {model} ({build}): {error}")
    lines += ["", "Bytes. Written by `benchmarks/model_constants.py`.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="kws_int8,resnet8_int8,zoo",
                        help="shared models by name (kws_int8: kws_int8.onnx) and 'zoo' for its int8 .tflite models "
                        "(the shared .tflite ones among them)")
    parser.add_argument("--select", help="only these models (names or stems, comma separated)")
    parser.add_argument("--no-budget", action="store_true", help="skip the int16 (flash budget) CPU build")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "boards")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "compiler_plugin"))
    sys.path.insert(0, str(REPO / "tests"))
    names = set(args.select.split(",")) if args.select else None
    rows = []
    for name, path in _models(args.models.split(","), names):
        row = measure(name, path, not args.no_budget)
        print(json.dumps(row), flush=True)
        rows.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    report = args.out / "constants.json"
    if report.exists():  # a partial run replaces its models' rows and keeps the others
        measured = {r["model"]: r for r in rows}
        earlier = json.loads(report.read_text())
        rows = [measured.pop(r["model"], r) for r in earlier] + list(measured.values())
    report.write_text(json.dumps(rows, indent=2) + "\n")
    (args.out / "constants.md").write_text(markdown(rows))


if __name__ == "__main__":
    main()
