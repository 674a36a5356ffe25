"""The same convolution layers on SCALE-Sim v3 (PyPI ``scalesim``), for the
comparison in explore_mobilenetv1.py. SCALE-Sim is not a project
dependency: it runs in a scratch virtual environment made here, in its own
process.

    python benchmarks/scalesim_layers.py layers.json results.json

``layers.json``: {"array": [rows, columns], "sram_kib": [ifmap, filter,
ofmap], "dataflow": "ws", "bandwidth": words per cycle, "layers": [{"name",
"ifmap": [h, w], "filter": [h, w], "channels", "filters", "stride",
"depthwise"}]}. A depthwise layer is what SCALE-Sim makes of one (its
topology's "DP" layers): one single-channel convolution per channel, all of
the same shape and simulated independently, so one channel is simulated
and multiplied by the channels.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

#: SCALE-Sim 3.0.0 converts one-element arrays to scalars, which NumPy 2 refuses.
PACKAGES = ("scalesim==3.0.0", "numpy<2", "pandas<2.3")

_DRIVER = r'''
import json, sys, time
from pathlib import Path
from scalesim.scale_sim import scalesim

spec = json.loads(Path(sys.argv[1]).read_text())
work = Path(sys.argv[2])
rows, cols = spec["array"]
ifmap_kb, filter_kb, ofmap_kb = spec["sram_kib"]
(work / "scale.cfg").write_text(f"""[general]
run_name = npukit

[architecture_presets]
ArrayHeight: {rows}
ArrayWidth: {cols}
IfmapSramSzkB: {ifmap_kb}
FilterSramSzkB: {filter_kb}
OfmapSramSzkB: {ofmap_kb}
IfmapOffset: 0
FilterOffset: 10000000
OfmapOffset: 20000000
Bandwidth: {spec["bandwidth"]}
Dataflow: {spec["dataflow"]}
ReadRequestBuffer: 512
WriteRequestBuffer: 512

[layout]
IfmapCustomLayout: False
FilterCustomLayout: False
IfmapSRAMBankBandwidth: 10
IfmapSRAMBankNum: 10
IfmapSRAMBankPort: 2
FilterSRAMBankBandwidth: 10
FilterSRAMBankNum: 10
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport: false

[run_presets]
InterfaceBandwidth: USER
UseRamulatorTrace: False
""")
(work / "layout.csv").write_text("Layer name, IFMAP Height Intraline Factor,\n")
results = []
for i, layer in enumerate(spec["layers"]):
    channels = 1 if layer["depthwise"] else layer["channels"]
    filters = 1 if layer["depthwise"] else layer["filters"]
    topology = work / f"layer{i}.csv"
    topology.write_text("Layer name, IFMAP height, IFMAP width, Filter height, Filter width, Channels, Num filter, "
                        "Stride height,\n" + f"layer{i}, {layer['ifmap'][0]}, {layer['ifmap'][1]}, "
                        f"{layer['filter'][0]}, {layer['filter'][1]}, {channels}, {filters}, {layer['stride']},\n")
    started = time.monotonic()
    sim = scalesim(save_disk_space=True, verbose=False, config=str(work / "scale.cfg"), topology=str(topology),
                   layout=str(work / "layout.csv"))
    sim.run_scale(top_path=str(work / f"out{i}"))
    seconds = time.monotonic() - started
    row = (work / f"out{i}" / "npukit" / "COMPUTE_REPORT.csv").read_text().splitlines()[1].split(",")
    times = layer["channels"] if layer["depthwise"] else 1
    results.append({"name": layer["name"], "cycles_with_prefetch": int(row[1]) * times,
                    "cycles": int(row[2]) * times, "stall_cycles": int(row[3]) * times,
                    "mapping_efficiency": float(row[5]), "compute_utilisation": float(row[6]),
                    "simulated_channels": 1 if layer["depthwise"] else layer["channels"], "seconds": seconds})
    print(json.dumps(results[-1]), flush=True)
Path(sys.argv[3]).write_text(json.dumps(results, indent=1))
'''


def scratch_python(venv: Path) -> Path:
    """The scratch environment's Python, with SCALE-Sim installed (made once)."""
    python = venv / "bin" / "python"
    stamp = venv / ".scalesim-installed"
    if not stamp.exists() or stamp.read_text() != " ".join(PACKAGES):
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], check=True)
        stamp.write_text(" ".join(PACKAGES))
    return python


def run_layers(venv: Path, spec: dict, progress=print) -> list[dict]:
    python = scratch_python(venv)
    with tempfile.TemporaryDirectory(prefix="scalesim-") as work_name:
        work = Path(work_name)
        (work / "driver.py").write_text(_DRIVER)
        (work / "spec.json").write_text(json.dumps(spec))
        proc = subprocess.Popen([str(python), str(work / "driver.py"), str(work / "spec.json"), str(work),
                                 str(work / "results.json")], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("{"):
                done = json.loads(line)
                progress(f"SCALE-Sim: {done['name']}: {done['cycles']:,} cycles in {done['seconds']:.1f} s")
        if proc.wait() != 0:
            raise SystemExit("SCALE-Sim failed")
        return json.loads((work / "results.json").read_text())


def main() -> int:
    from npukit.cpu.archive_build import cache_dir

    spec = json.loads(Path(sys.argv[1]).read_text())
    results = run_layers(cache_dir() / "scalesim-venv", spec)
    Path(sys.argv[2]).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "compiler_plugin"))
    sys.exit(main())
