"""``npukit.explore``: a model over a grid of mynpu hardware configurations,
with one IREE compile in all.

The compile goes through npukit's normal mynpu pipeline up to the NPU's
partitioning and keeps the recognised layers; each configuration then runs
only what depends on the hardware (the NPU's predicates, scheduling and
tiling, stream generation, the device validator's cycle model) on every
core, and costs what stays on the CPU from the tuned kernels' measured
instructions per MAC. Every NPU figure is what ``npukit compile -t mynpu``
reports for that configuration.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from npukit.exploration.configuration import configuration_grid
from npukit.exploration.cpu_cost import CpuCostModel
from npukit.exploration.outputs import write_csv, write_json
from npukit.exploration.recognition import recognise
from npukit.exploration.sweep import Step, run_sweep

Progress = Callable[[str], None]

#: The paper's sweep (TinyML 2021, Fig. 4).
PAPER_PES = (64, 128)
PAPER_SRAM_KIB = (512, 1024, 262144)
PAPER_PARALLEL = ("input", "output")
PAPER_DEPTHWISE = ("npu", "per-channel", "cpu")


@dataclass
class ExploreResult:
    directory: Path
    document: dict  # explore.json
    files: dict[str, Path]

    @property
    def configurations(self) -> list[dict]:
        return self.document["configurations"]

    def best(self) -> dict:
        return min(self.configurations, key=lambda c: c["total_us"])


def explore(
    model: "str | os.PathLike[str]",
    out_dir: "str | os.PathLike[str] | None" = None,
    *,
    pes: Sequence[int] = PAPER_PES,
    sram_kib: Sequence[int] = PAPER_SRAM_KIB,
    parallel: Sequence[str] = PAPER_PARALLEL,
    depthwise: Sequence[str] = PAPER_DEPTHWISE,
    dma_bytes_per_cycle: Sequence[int] = (16,),
    clock_mhz: Sequence[int] = (500,),
    cpu: str = "cortex-m4",
    cpu_clock_mhz: float = 100.0,
    target: str = "mynpu",
    jobs: int | None = None,
    plots: bool = True,
    progress: Progress | None = None,
    step: Step | None = None,
) -> ExploreResult:
    """Evaluates ``model`` on every combination of the hardware axes and writes
    ``explore.json``, ``explore.csv`` and (with ``plots``) ``cycles.png``,
    ``pareto.png`` and ``layers.png`` to ``out_dir`` (default
    ``./<model>-explore``). ``cpu``/``cpu_clock_mhz``: the core the layers
    left on the CPU run on (its measured figures:
    npukit.exploration.cpu_cost) and its clock. ``jobs``: worker processes
    (default: every core). ``progress`` gets messages, ``step`` (done, total)
    configurations."""
    say = progress or (lambda _msg: None)
    grid = configuration_grid(pes, sram_kib, parallel, depthwise, dma_bytes_per_cycle, clock_mhz)
    cpu_model = CpuCostModel.for_core(cpu, cpu_clock_mhz)
    workers = jobs or os.cpu_count() or 1
    preload = None
    if plots:
        from npukit.exploration.plots import import_matplotlib

        # The compile runs in a worker process; matplotlib loads meanwhile.
        preload = threading.Thread(target=import_matplotlib, daemon=True)
        preload.start()
    recognised = recognise(model, target, progress=say)
    if preload is not None:
        preload.join()  # before any process forks
    say(f"evaluating {len(grid)} configurations")
    started = time.monotonic()
    configurations = run_sweep(recognised, grid, cpu_model, workers, step)
    sweep_seconds = time.monotonic() - started
    layers = sum(d.calls for d in recognised.dispatches if d.kind != "other")
    document = {
        "model": recognised.model,
        "target": target,
        "cpu": cpu_model.to_json(),
        "layers": layers,
        "seconds": {"compile": recognised.compile_seconds, "sweep": round(sweep_seconds, 3)},
        "layer_configurations_per_second": round(layers * len(grid) / sweep_seconds, 1) if sweep_seconds else 0.0,
        "uncosted_cpu_dispatches": [d.name for d in recognised.dispatches if d.kind == "other"],
        "configurations": configurations,
    }
    directory = Path(out_dir) if out_dir is not None else Path(f"{Path(model).stem}-explore")
    directory.mkdir(parents=True, exist_ok=True)
    files = {"json": directory / "explore.json", "csv": directory / "explore.csv"}
    write_json(files["json"], document)
    write_csv(files["csv"], configurations)
    if plots:
        from npukit.exploration.plots import write_plots

        say("drawing the plots")
        files.update(write_plots(directory, document, workers))
    return ExploreResult(directory, document, files)
