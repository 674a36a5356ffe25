"""mynpu's NPU figures beside Arm Vela's on the same models.

    python benchmarks/vela_comparison.py [--jobs 2] [--models NAME,...] [--out benchmarks/reports/zoo]

For every int8 .tflite model of the zoo (shared, third-party and generated;
recurrent models excluded), in a pool of worker processes:

- Vela (PyPI ``ethos-u-vela``) for ``ethos-u55-128`` with its default system
  configuration, in a scratch virtual environment made under npukit's cache
  directory when missing (Vela is not a project dependency), in its own
  process. Its summary CSV gives the total and NPU cycles; its per-layer CSV
  (``--verbose-performance``) the MACs of each NPU operator; its console the
  NPU and CPU operator counts and, with ``--show-cpu-operations``, why an
  operator stays on the CPU.
- ``npukit.compile(target="mynpu", output="embedded")`` with 128 PEs and
  output-pixels parallelism; the manifest's ``mynpu.summary`` gives the NPU
  MACs and the estimated cycles.

Utilisation is NPU MACs / (cycles x 128) for both, the MACs being those of
the contractions (convolutions, depthwise, fully connected, matrix
products) the tool puts on the NPU. Each tool's wall time is measured around
its compile. A model either tool refuses is reported with its one-line
reason. Writes ``vela.md`` and ``vela.json``. A report, not a test.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "compiler_plugin"))
sys.path.insert(0, str(REPO / "tests"))

VELA_VERSION = "5.2.0"
PACKAGES = (f"ethos-u-vela=={VELA_VERSION}",)
ACCELERATOR = "ethos-u55-128"
#: Vela's default system configuration (it is given none).
SYSTEM_CONFIG = "Ethos_U55_High_End_Embedded"
PES = 128  # Ethos-U55-128: 128 int8 MACs per cycle; mynpu compiled with as many PEs
PARALLEL = "output-pixels"
# Vela's names (the per-layer CSV's "Original Operator" and "NNG Operator")
# of the operators whose MACs the zoo's catalogue counts.
CONTRACTIONS = {"Conv2D", "Conv2DBias", "DepthwiseConv2D", "DepthwiseConv2DBias", "FullyConnected",
                "TransposeConv", "TransposeConv2D", "Conv2DBackpropInput", "Conv2DBackpropInputSwitchedBias", "BatchMatMul",
                "MatMul", "Conv3D"}
_CPU_WARNING = re.compile(r"^Warning \(supported operators\) operator: ([A-Za-z0-9_]+), ofm: '([^']*)'")


def scratch_vela(venv: Path) -> Path:
    """The scratch environment's ``vela``, installed from PyPI (made once)."""
    vela = venv / "bin" / "vela"
    stamp = venv / ".vela-installed"
    if not stamp.exists() or stamp.read_text() != " ".join(PACKAGES) or not vela.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *PACKAGES], check=True)
        stamp.write_text(" ".join(PACKAGES))
    return vela


def vela_system_config(venv: Path, name: str) -> dict[str, str]:
    """One system configuration of the vela.ini installed with Vela (its
    memories' latencies and burst lengths, which the summary CSV lacks)."""
    import configparser

    found = sorted(venv.glob("lib/python*/site-packages/ethosu/config_files/Arm/vela.ini"))
    if not found:
        return {}
    config = configparser.ConfigParser()
    config.read(found[0])
    section = f"System_Config.{name}"
    return dict(config[section]) if config.has_section(section) else {}


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def _macs_by_output(model: Path) -> dict[str, int]:
    """The zoo catalogue's MACs of each contraction, by its output tensor's name."""
    from zoo.tflite_reader import TFLiteModel, operator_macs

    read = TFLiteModel(model)
    found: dict[str, int] = {}
    for op in read.operators:
        macs = operator_macs(read, op)
        if macs and op.outputs:
            name = read.tensors[op.outputs[0]].name
            found[name] = found.get(name, 0) + macs
    return found


def run_vela(vela: Path, model: Path, work: Path) -> dict:
    """Vela on one model: cycles, MACs, operator placement and wall time."""
    out = work / "vela"
    started = time.perf_counter()
    proc = subprocess.run([str(vela), "--accelerator-config", ACCELERATOR, "--show-cpu-operations",
                           "--verbose-performance", "--output-dir", str(out), str(model)],
                          check=False, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        return {"error": _one_line(proc.stderr or proc.stdout), "seconds": round(seconds, 2)}
    summaries = sorted(out.glob(f"{model.stem}_summary_*.csv"))
    layers = out / f"{model.stem}_per-layer.csv"
    if not summaries or not layers.exists():
        return {"error": f"Vela wrote no summary or per-layer CSV: {_one_line(proc.stdout)}",
                "seconds": round(seconds, 2)}
    with summaries[0].open() as f:
        summary = next(csv.DictReader(f))
    vela_contraction_macs = 0
    cpu_rows: list[tuple[str, str]] = []
    op_rows = max_rule = memory_bound = softmax_rows = 0
    with layers.open() as f:
        for row in csv.DictReader(f):
            if row["Target"] == "NPU":
                # Whether an operator's cycles are the largest of its compute
                # and memory access cycles, and whether an access dominates.
                access = [float(row[k]) for k in ("SRAM AC", "DRAM AC", "OnFlash AC", "OffFlash AC")]
                op_rows += 1
                max_rule += round(float(row["Op Cycles"])) == round(max(float(row["NPU"]), *access))
                memory_bound += max(access) > float(row["NPU"])
                softmax_rows += row["Original Operator"] == "Softmax"
            # A contraction's own row: not its separate activation, nor an
            # operator Vela rewrites into a contraction (MEAN as depthwise).
            if row["Target"] == "NPU" and {row["Original Operator"], row["NNG Operator"]} <= CONTRACTIONS:
                vela_contraction_macs += int(row["MAC Count"])
            elif row["Target"] == "CPU":
                cpu_rows.append((row["Original Operator"], row["Name"].strip()))
    # The MACs Vela leaves on the CPU, counted as the catalogue counts them
    # (Vela's own MAC counts exist only for its NPU operators).
    by_output = _macs_by_output(model)
    cpu_macs = sum(by_output.get(name, 0) for _, name in cpu_rows)
    counts = {kind: int(m.group(1)) for kind in ("CPU", "NPU")
              if (m := re.search(rf"^{kind} operators = (\d+)", proc.stdout, re.MULTILINE))}
    reasons: dict[str, str] = {}
    lines = proc.stdout.splitlines()
    for i, line in enumerate(lines):
        if (m := _CPU_WARNING.search(line)) and i + 1 < len(lines) and lines[i + 1].startswith("Reason: "):
            reasons[m.group(2)] = lines[i + 1].removeprefix("Reason: ").strip()
    return {
        "system_config": summary["system_config"],
        "memory_mode": summary["memory_mode"],
        "weights_storage_area": summary["weights_storage_area"],
        "feature_map_storage_area": summary["feature_map_storage_area"],
        "core_clock": float(summary["core_clock"]),
        # Vela's GB/s are 2^30 bytes per second.
        "sram_bytes_per_cycle": float(summary["sram_bandwidth"]) * 2**30 / float(summary["core_clock"]),
        "off_chip_flash_bytes_per_cycle":
            float(summary["off_chip_flash_bandwidth"]) * 2**30 / float(summary["core_clock"]),
        "npu_op_rows": op_rows,
        "op_cycles_are_max": max_rule,
        "memory_bound_ops": memory_bound,
        "softmax_ops": softmax_rows,
        "nn_macs": int(summary["nn_macs"]),
        "vela_contraction_macs": vela_contraction_macs,
        "cpu_macs": cpu_macs,
        "cycles_npu": int(float(summary["cycles_npu"])),
        "cycles_total": int(float(summary["cycles_total"])),
        "npu_operators": counts.get("NPU", 0),
        "cpu_operators": counts.get("CPU", 0),
        "cpu_operations": [{"operator": op, "name": name, "reason": reasons.get(name, "no reason printed")}
                           for op, name in cpu_rows],
        "seconds": round(seconds, 2),
    }


def run_mynpu(model: Path, work: Path) -> dict:
    import npukit
    from npukit.mynpu.options import MynpuOptions

    started = time.perf_counter()
    result = npukit.compile(str(model), target="mynpu", output="embedded", out_dir=work / "npu",
                            mynpu=MynpuOptions(pes=PES, parallel=PARALLEL))
    seconds = time.perf_counter() - started
    report = result.manifest["mynpu"]
    summary = report["summary"]
    npu_rows = [d for d in report["dispatches"] if d["device"] == "mynpu"]
    return {
        "macs": summary["macs"],
        "npu_macs": summary["npu_macs"],
        "npu_mac_share": summary["npu_mac_share"],
        "total_cycles": summary["total_cycles"],
        "compute_cycles": sum(d.get("compute_cycles", 0) * d.get("calls", 1) for d in npu_rows),
        "dma_cycles": sum(d.get("dma_cycles", 0) * d.get("calls", 1) for d in npu_rows),
        "npu_dispatches": summary["npu_dispatches"],
        "dispatches": summary["dispatches"],
        "cpu_reasons": sorted({d["reason"] for d in report["dispatches"] if d["device"] != "mynpu" and d.get("macs")}),
        "seconds": round(seconds, 2),
    }


def measure(name: str, path: str, macs: int, vela: str, work: str) -> dict:
    """One model through both tools (in a worker process)."""
    out: dict = {"name": name, "macs": macs}
    work_dir = Path(work) / name
    work_dir.mkdir(parents=True, exist_ok=True)
    try:
        out["vela"] = run_vela(Path(vela), Path(path), work_dir)
    except Exception as e:  # noqa: BLE001 - a model Vela fails on is reported, with its one line
        out["vela"] = {"error": _one_line(str(e)) if str(e) else type(e).__name__}
    try:
        out["mynpu"] = run_mynpu(Path(path), work_dir)
    except Exception as e:  # noqa: BLE001
        out["mynpu"] = {"error": _one_line(str(e)) if str(e) else type(e).__name__}
    return out


def _models(selected: set[str] | None) -> list[tuple[str, Path, int]]:
    from zoo_selection import int8_tflite_models

    return [(name, record.path, record.macs) for name, record in int8_tflite_models(selected)]


def _utilisation(macs: int, cycles: int) -> float | None:
    return macs / (cycles * PES) if cycles else None


def _derived(r: dict) -> dict:
    """The figures of the table, from one model's raw results."""
    v, n = r.get("vela", {}), r.get("mynpu", {})
    d: dict = {}
    if "error" not in v:
        d["vela_npu_macs"] = r["macs"] - v["cpu_macs"]
        d["vela_mac_share"] = d["vela_npu_macs"] / r["macs"] if r["macs"] else None
        total_ops = v["npu_operators"] + v["cpu_operators"]
        d["vela_op_share"] = v["npu_operators"] / total_ops if total_ops else None
        d["vela_utilisation"] = _utilisation(d["vela_npu_macs"], v["cycles_total"])
        d["vela_compute_share"] = v["cycles_npu"] / v["cycles_total"] if v["cycles_total"] else None
    if "error" not in n:
        d["mynpu_utilisation"] = _utilisation(n["npu_macs"], n["total_cycles"])
        d["mynpu_compute_share"] = n["compute_cycles"] / n["total_cycles"] if n["total_cycles"] else None
    return d


def _pct(value) -> str:
    return "" if value is None else f"{100 * value:.1f}%"


def _num(value) -> str:
    return "" if value is None else f"{value:,}"


def _report(results: list[dict], seconds: float, jobs: int, system: dict[str, str]) -> str:
    ok = [r for r in results if "error" not in r["vela"] and "error" not in r["mynpu"]]
    lines = [
        "# mynpu beside Arm Vela (Ethos-U55-128) on the zoo's int8 models", "",
        f"Written by `benchmarks/vela_comparison.py`: every int8 .tflite model of the zoo (shared, third-party and "
        f"generated; recurrent models excluded) compiled by Vela {VELA_VERSION} (`--accelerator-config {ACCELERATOR}`, "
        "its default system configuration `Ethos_U55_High_End_Embedded`, memory mode `Shared_Sram`, 500 MHz) and by "
        f"`npukit.compile(target=\"mynpu\", output=\"embedded\")` with {PES} PEs and `{PARALLEL}` parallelism "
        "(other mynpu options at their defaults: 256 KiB SRAM, 16 DMA bytes per cycle, 500 MHz). "
        f"{len(results)} models in {seconds:.0f} s on {jobs} worker processes.", "",
        "MACs are those of the model's contractions (convolutions, depthwise, transposed convolutions, fully "
        "connected, matrix products) as the zoo's catalogue counts them. NPU MACs: the share of those MACs the tool "
        "runs on the NPU (Vela: all but those of the contractions its per-layer CSV places on the CPU; mynpu: the "
        "manifest's `npu_mac_share`). Vela's NPU ops: its own count of NPU and CPU operators, on its graph after its "
        "rewrites (a separate activation or each step of a decomposed softmax is an operator), as it prints it. "
        "Cycles: Vela's `cycles_total` (summary CSV) and mynpu's `total_cycles` (manifest); both leave out the "
        f"operators run on the CPU. Utilisation: NPU MACs / (cycles x {PES}), with the same MAC count for both "
        "tools. Seconds: the wall time of each compile (Vela in its own process; npukit in the worker, so it "
        "includes importing the model and building its kernels when the cache lacks them).", "",
        "| model | MACs | Vela NPU MACs | Vela NPU ops | Vela cycles | Vela util. | Vela s | mynpu NPU MACs "
        "| mynpu cycles | mynpu util. | mynpu s | cycles mynpu / Vela |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(results, key=lambda r: -r["macs"]):
        v, n, d = r["vela"], r["mynpu"], _derived(r)
        if "error" in v:
            vela_cells = ["refused", "", "", "", f"{v.get('seconds', 0):.1f}" if "seconds" in v else ""]
        else:
            vela_cells = [_pct(d["vela_mac_share"]),
                          f"{v['npu_operators']}/{v['npu_operators'] + v['cpu_operators']} ({_pct(d['vela_op_share'])})",
                          _num(v["cycles_total"]), _pct(d["vela_utilisation"]), f"{v['seconds']:.1f}"]
        if "error" in n:
            npu_cells = ["refused", "", "", ""]
        else:
            npu_cells = [_pct(n["npu_mac_share"]), _num(n["total_cycles"]), _pct(d["mynpu_utilisation"]),
                         f"{n['seconds']:.1f}"]
        ratio = (f"{n['total_cycles'] / v['cycles_total']:.2f}"
                 if "error" not in v and "error" not in n and v["cycles_total"] else "")
        lines.append(f"| {r['name']} | {r['macs']:,} | " + " | ".join(vela_cells + npu_cells) + f" | {ratio} |")
    refused = [(r["name"], tool, r[tool]["error"]) for r in results for tool in ("vela", "mynpu")
               if "error" in r[tool]]
    if refused:
        lines += ["", "## Refused", "", "(Reasons cut at their first `; `; whole in vela.json.)", ""]
        lines += [f"- {name} ({tool}): {why.split('; ')[0]}" for name, tool, why in refused]
    recounted = [r for r in ok if r["vela"]["vela_contraction_macs"] != _derived(r)["vela_npu_macs"]]
    if recounted:
        lines += ["", "## Where Vela counts other MACs", "",
                  "Vela's per-layer CSV gives MAC counts of its own; on these models its NPU contractions' MACs "
                  "differ from the catalogue's count of the same operators (the table uses the catalogue's for "
                  "both tools).", "", "| model | catalogue NPU MACs | Vela's count | ratio |", "|---|---:|---:|---:|"]
        for r in sorted(recounted, key=lambda r: -r["macs"]):
            npu_macs = _derived(r)["vela_npu_macs"]
            lines.append(f"| {r['name']} | {npu_macs:,} | {r['vela']['vela_contraction_macs']:,} | "
                         f"{r['vela']['vela_contraction_macs'] / npu_macs:.3f} |")
    by_reason: Counter = Counter()
    for r in results:
        for op in r["vela"].get("cpu_operations", []):
            by_reason[(op["operator"], op["reason"])] += 1
    if by_reason:
        lines += ["", "## Operators Vela leaves on the CPU", "", "| operator | reason | count |", "|---|---|---:|"]
        lines += [f"| {op} | {why} | {count} |" for (op, why), count in by_reason.most_common()]
    lines += ["", "## What the two cycle counts count", ""] + _cycle_paragraph(ok, system)
    return "\n".join(lines) + "\n"


def _cycle_paragraph(ok: list[dict], system: dict[str, str]) -> list[str]:
    if not ok:
        return ["No model went through both tools."]
    derived = [(r, _derived(r)) for r in ok]
    vela_mem = sum(1 for _, d in derived if d["vela_compute_share"] is not None and d["vela_compute_share"] < 0.99)
    npu_dma = sum(1 for _, d in derived if d["mynpu_compute_share"] is not None and d["mynpu_compute_share"] < 0.99)
    vela_cycles = sum(r["vela"]["cycles_total"] for r in ok)
    vela_npu = sum(r["vela"]["cycles_npu"] for r in ok)
    my_cycles = sum(r["mynpu"]["total_cycles"] for r in ok)
    my_compute = sum(r["mynpu"]["compute_cycles"] for r in ok)
    faster = sum(1 for r in ok if r["mynpu"]["total_cycles"] < r["vela"]["cycles_total"])
    first = ok[0]["vela"]
    rows = sum(r["vela"]["npu_op_rows"] for r in ok)
    max_rule = sum(r["vela"]["op_cycles_are_max"] for r in ok)
    memory_bound = sum(r["vela"]["memory_bound_ops"] for r in ok)
    latency = (f", read latencies (SRAM {system['sram_read_latency']}, off-chip flash "
               f"{system['offchipflash_read_latency']} cycles) and burst lengths (SRAM {system['sram_burst_length']}, "
               f"off-chip flash {system['offchipflash_burst_length']})"
               if {"sram_read_latency", "offchipflash_read_latency", "sram_burst_length",
                   "offchipflash_burst_length"} <= system.keys() else "")
    with_softmax = [r for r in ok if r["vela"]["softmax_ops"]]
    softmax = (f" ({with_softmax[0]['vela']['softmax_ops']} operators in {with_softmax[0]['name']})"
               if with_softmax else "")
    areas = {(r["vela"]["weights_storage_area"], r["vela"]["feature_map_storage_area"]) for r in ok}
    return [
        "mynpu's cycles are its own ISA's cycle model (docs/mynpu-isa.md): each instruction costs its MACs spread "
        f"over the {PES} PEs as the parallelism allows (output-pixels: a grid of output channels x output pixels), "
        "plus 16 cycles of overhead; each DMA costs its bytes at 16 bytes per cycle plus 8; a layer that "
        "double-buffers takes max(compute, DMA), one that does not takes their sum. Its memory is one flat system "
        "memory behind the DMA: no separate flash and no bus contention. Dispatches left on the CPU are not "
        "counted.",
        "",
        "Vela's cycles are the estimate of its compilation core (Regor, the default for Ethos-U55 in Vela "
        f"{VELA_VERSION}) for the Ethos-U55-128 in its system configuration: for each NPU operator, the NPU's "
        "compute cycles and the access cycles of each memory it touches, from the system configuration's "
        f"bandwidths (SRAM {first['sram_bytes_per_cycle']:.3g} and off-chip flash "
        f"{first['off_chip_flash_bytes_per_cycle']:.3g} bytes per NPU cycle, against mynpu's 16){latency}; weights in "
        f"{' / '.join(sorted({a[0] for a in areas}))}, feature maps in "
        f"{' / '.join(sorted({a[1] for a in areas}))}. In its per-layer CSVs an operator's cycles are the largest "
        f"of these on {max_rule} of {rows} NPU operator rows, and a memory's access cycles exceed the compute "
        f"cycles on {memory_bound}. Its NPU operators include ones with cycles of their own that are not "
        f"contractions: activations it does not fuse, each step of a decomposed softmax{softmax}, MEAN as a "
        "depthwise convolution, pooling. Operators on the CPU get no cycles.",
        "",
        f"Measured over the {len(ok)} models both tools compiled: Vela's compute cycles (`cycles_npu`) are "
        f"{_pct(vela_npu / vela_cycles if vela_cycles else None)} of its total, and on {vela_mem} models memory "
        f"access adds more than 1% to them; mynpu's compute cycles are "
        f"{_pct(my_compute / my_cycles if my_cycles else None)} of its total, and on {npu_dma} models DMA adds more "
        f"than 1%. mynpu's estimate is below Vela's on {faster} of the {len(ok)} models; summed over them, mynpu "
        f"counts {my_cycles:,} cycles and Vela {vela_cycles:,}.",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "reports" / "zoo")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--models", help="comma-separated model names (default: every int8 .tflite zoo model)")
    args = parser.parse_args(argv)
    from npukit.cpu.archive_build import cache_dir
    from tqdm import tqdm

    venv = cache_dir() / "vela-venv"
    vela = scratch_vela(venv)
    system = vela_system_config(venv, SYSTEM_CONFIG)
    models = _models(set(args.models.split(",")) if args.models else None)
    started = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory(prefix="npukit-vela-") as work, \
            ProcessPoolExecutor(max_workers=args.jobs) as pool:
        # The largest first, so the longest compiles do not finish the run alone.
        futures = {pool.submit(measure, name, str(path), macs, str(vela), work): (name, macs)
                   for name, path, macs in sorted(models, key=lambda m: -m[2])}
        for future in tqdm(as_completed(futures), total=len(futures), desc="models", file=sys.stderr):
            try:
                results.append(future.result())
            except Exception:  # noqa: BLE001 - the worker's own failure, reported
                name, macs = futures[future]
                why = traceback.format_exc().splitlines()[-1]
                results.append({"name": name, "macs": macs, "vela": {"error": why}, "mynpu": {"error": why}})
    seconds = time.perf_counter() - started
    for r in results:
        r.update(_derived(r))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "vela.json").write_text(json.dumps(
        {"vela": VELA_VERSION, "accelerator": ACCELERATOR, "system_config": {SYSTEM_CONFIG: system}, "pes": PES, "parallel": PARALLEL, "jobs": args.jobs,
         "seconds": round(seconds, 1), "models": sorted(results, key=lambda r: -r["macs"])}, indent=1))
    (args.out / "vela.md").write_text(_report(results, seconds, args.jobs, system))
    print(args.out / "vela.md")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
