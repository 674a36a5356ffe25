"""The design-space study of "Compiler Toolchains for Deep Learning Workloads
on Embedded Platforms" (TinyML 2021, Fig. 4) with ``npukit explore``, and
the same layers on SCALE-Sim.

    python benchmarks/explore_mobilenetv1.py [--jobs N] [--no-scalesim] [--render-only]

1. MobileNetV1 1.0 224x224 int8, built by benchmarks/mobilenet_v1.py.
2. ``npukit.explore`` over the paper's sweep: 3 depthwise scenarios (on the
   NPU's OP_DEPTH_CONV, emulated one OP_CONV per channel, on the CPU) x
   {64, 128} PEs x {512 KiB, 1 MiB, 256 MiB} SRAM x {input, output}
   parallelism; plus output-pixels parallelism on the same grid for the new
   dataflow. The sweep alone is timed three more times (median).
3. One full ``npukit compile -t mynpu`` of one configuration, timed, and its
   report against the sweep's entry for that configuration.
4. The NPU's layers on SCALE-Sim (a scratch environment,
   benchmarks/scalesim_layers.py) with as many PEs and as much SRAM as one
   configuration of the sweep, cycles side by side.

Writes benchmarks/reports/explore_mobilenetv1.md, and the sweep's
explore.json, explore.csv and three plots under
benchmarks/reports/explore/mobilenetv1/. A report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "compiler_plugin"))
sys.path.insert(0, str(REPO / "benchmarks"))

REPORT = REPO / "benchmarks" / "reports" / "explore_mobilenetv1.md"
OUT = REPO / "benchmarks" / "reports" / "explore" / "mobilenetv1"
#: The SCALE-Sim comparison's configuration: 128 PEs as a 16 x 8 array, 1 MiB.
COMPARED = {"pes": 128, "sram_kib": 1024, "array": [16, 8]}


def _say(message: str) -> None:
    print(f"[explore_mobilenetv1] {message}", file=sys.stderr, flush=True)


def _get(configurations: list[dict], **match) -> dict:
    found = [c for c in configurations if all(c[k] == v for k, v in match.items())]
    assert len(found) == 1, match
    return found[0]


def sweep_speed(recognised, grid, cpu, jobs, rounds: int = 3) -> list[float]:
    from npukit.exploration.sweep import run_sweep

    times = []
    for _ in range(rounds):
        started = time.monotonic()
        run_sweep(recognised, grid, cpu, jobs)
        times.append(time.monotonic() - started)
    return times


def full_compile(model: Path, configuration, work: Path) -> tuple[float, dict]:
    import npukit

    started = time.monotonic()
    result = npukit.compile(model, "mynpu", "vmfb", work / "compiled", mynpu=configuration.options())
    return time.monotonic() - started, result.manifest["mynpu"]


def _command_seconds(args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO / "compiler_plugin")}
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "npukit.cli.main", *args], check=True, env=env, capture_output=True)
    return time.monotonic() - started


def kws_times(models: Path, rounds: int = 5) -> dict:
    """``npukit explore`` of kws_int8 over 24 configurations against one
    ``npukit compile -t mynpu``, both as command lines, alternating."""
    compiles, explores = [], []
    with tempfile.TemporaryDirectory() as work_name:
        work = Path(work_name)
        for i in range(rounds):
            compiles.append(_command_seconds(["compile", str(models / "kws_int8.onnx"), "-t", "mynpu", "-o",
                                              str(work / f"c{i}")]))
            explores.append(_command_seconds(["explore", str(models / "kws_int8.onnx"), "--pes", "64,128",
                                              "--sram-kib", "8,256", "--parallel", "input,output,output-pixels",
                                              "--depthwise", "npu,cpu", "-q", "-o", str(work / f"e{i}")]))
    return {"compile": statistics.median(compiles), "explore": statistics.median(explores),
            "compile_runs": compiles, "explore_runs": explores}


def host_cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def scalesim_spec(recognised, sram_kib: int) -> dict:
    """SCALE-Sim's layers: every layer the NPU runs, in SCALE-Sim's terms
    (its input as the dispatch reads it, padding included)."""
    layers = []
    for d in recognised.dispatches:
        s = d.spec
        if s is None:
            continue
        ic, ih, iw = s.ifm_chw
        oc = s.ofm_chw[0]
        layers.append({"name": d.name, "ifmap": [ih, iw], "filter": list(s.kernel), "channels": ic,
                       "filters": oc, "stride": s.stride[0], "depthwise": s.kind == "depthwise"})
    third = sram_kib // 3
    return {"array": COMPARED["array"], "sram_kib": [third, third, third], "dataflow": "ws", "bandwidth": 16,
            "layers": layers}


def main() -> int:
    from explore_mobilenetv1_report import render
    from mobilenet_v1 import build
    from npukit.exploration.configuration import Configuration, configuration_grid
    from npukit.exploration.cpu_cost import CpuCostModel
    from npukit.exploration.explore_model import (PAPER_DEPTHWISE, PAPER_PARALLEL, PAPER_PES, PAPER_SRAM_KIB,
                                                  explore)
    from npukit.exploration.recognition import recognise

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--no-scalesim", action="store_true")
    parser.add_argument("--rerun-scalesim", action="store_true",
                        help="run SCALE-Sim even when the last run simulated the same layers")
    parser.add_argument("--models", type=Path, default=REPO.parent / "shared" / "models",
                        help="the directory with kws_int8.onnx (default: ../shared/models)")
    parser.add_argument("--render-only", action="store_true",
                        help="write the report again from the last run's explore.json and benchmark.json "
                             "(after a change to the report's text; measures nothing)")
    args = parser.parse_args()

    model = build(1.0, 224)
    _say(f"model: {model}")
    if args.render_only:
        data = json.loads((OUT / "benchmark.json").read_text())
        data["document"] = json.loads((OUT / "explore.json").read_text())
        REPORT.write_text(render(data, recognise(model)))
        _say(f"wrote {REPORT}")
        return 0
    # SCALE-Sim takes about 20 minutes; its last results serve again for the same layers.
    previous = json.loads((OUT / "benchmark.json").read_text()) if (OUT / "benchmark.json").exists() else {}
    if OUT.exists():
        shutil.rmtree(OUT)
    started = time.monotonic()
    result = explore(model, OUT, pes=PAPER_PES, sram_kib=PAPER_SRAM_KIB, parallel=PAPER_PARALLEL,
                     depthwise=PAPER_DEPTHWISE, jobs=args.jobs, progress=_say)
    explore_seconds = time.monotonic() - started
    doc = result.document
    configurations = doc["configurations"]

    # The sweep alone, again: its speed without the compile and the plots.
    recognised = recognise(model)
    cpu = CpuCostModel.for_core()
    grid = configuration_grid(PAPER_PES, PAPER_SRAM_KIB, PAPER_PARALLEL, PAPER_DEPTHWISE)
    speeds = sweep_speed(recognised, grid, cpu, args.jobs)
    pixels_grid = configuration_grid(PAPER_PES, PAPER_SRAM_KIB, ("output-pixels",), PAPER_DEPTHWISE)
    from npukit.exploration.sweep import run_sweep

    pixels = run_sweep(recognised, pixels_grid, cpu, args.jobs)

    with tempfile.TemporaryDirectory() as work_name:
        checked = Configuration(128, 1024, "output", "npu")
        compile_seconds, report = full_compile(model, checked, Path(work_name))
    swept = _get(configurations, pes=128, sram_kib=1024, parallel="output", depthwise="npu")
    agrees = (report["summary"]["total_cycles"] == swept["npu_cycles"]
              and [r["cycles"] for r in report["dispatches"]] == [x["cycles"] for x in swept["layers"]])

    scalesim = None
    if not args.no_scalesim:
        from npukit.cpu.archive_build import cache_dir
        from scalesim_layers import run_layers

        spec = scalesim_spec(recognised, COMPARED["sram_kib"])
        if previous.get("scalesim") and previous["scalesim"]["spec"] == spec and not args.rerun_scalesim:
            _say("SCALE-Sim: the same layers as the last run; its results are reused (--rerun-scalesim runs it)")
            scalesim = previous["scalesim"]
        else:
            started = time.monotonic()
            scalesim = {"spec": spec, "results": run_layers(cache_dir() / "scalesim-venv", spec, _say),
                        "seconds": time.monotonic() - started}

    kws = kws_times(args.models)
    data = {"host": host_cpu(), "explore_seconds": explore_seconds, "document": doc, "sweep_seconds": speeds,
            "pixels": pixels, "compile_seconds": compile_seconds, "compile_agrees": agrees, "kws": kws,
            "scalesim": scalesim}
    (OUT / "benchmark.json").write_text(json.dumps({k: v for k, v in data.items() if k != "document"}, indent=1))
    REPORT.write_text(render(data, recognised))
    _say(f"wrote {REPORT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
