"""``npukit explore`` on kws_int8: one compile up to the NPU's partitioning,
then every configuration costed exactly as ``npukit compile -t mynpu``
costs it (checked on a sample against full compiles, and against the
simulator running the compiled model), the CPU's part from the measured
figures, and the outputs the issue names."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import npukit
from npukit.cli.main import main as npukit_main
from npukit.exploration.configuration import Configuration
from npukit.exploration.cpu_cost import CpuCostModel
from npukit.runtime.binding import NpukitRuntimeModel
from tests.support.models import MLPERF_MODELS, random_inputs

GRID = {"pes": (64, 128), "sram_kib": (8, 256), "parallel": ("input", "output", "output-pixels"),
        "depthwise": ("npu", "per-channel", "cpu")}
FIELDS = {"pes", "sram_kib", "parallel", "depthwise", "dma_bytes_per_cycle", "clock_mhz", "npu_cycles", "cpu_cycles",
          "total_us", "npu_mac_share", "utilisation", "cycles_by_operation", "sram_peak", "dma_bytes", "layers"}


@pytest.fixture(scope="module")
def explored(shared_models, tmp_path_factory):
    return npukit.explore(shared_models / "kws_int8.onnx", tmp_path_factory.mktemp("explore") / "kws", jobs=2,
                          **GRID)


def _by(explored, configuration: Configuration) -> dict:
    return next(c for c in explored.configurations
                if all(c[k] == v for k, v in configuration.to_json().items()))


def test_every_configuration_adds_up(explored):
    doc = json.loads(explored.files["json"].read_text())
    assert doc == explored.document
    assert len(doc["configurations"]) == 2 * 2 * 3 * 3 and doc["layers"] == 10
    cpu = CpuCostModel.for_core("cortex-m4", 100.0)
    assert doc["cpu"]["core"] == "cortex-m4" and doc["cpu"]["instructions_per_mac"] == cpu.instructions_per_mac
    for c in doc["configurations"]:
        assert FIELDS <= set(c), c.keys()
        npu = [x for x in c["layers"] if x["device"] == "mynpu"]
        on_cpu = [x for x in c["layers"] if x["device"] == "cpu"]
        assert c["npu_cycles"] == sum(x["cycles"] * x["calls"] for x in npu) > 0
        assert c["cpu_cycles"] == sum(x["cpu_cycles"] * x["calls"] for x in on_cpu)
        for x in on_cpu:
            assert x["reason"] and x["cpu_cycles"] == cpu.cycles(x["kind"], x["macs"])
        assert c["total_us"] == pytest.approx(c["npu_cycles"] / c["clock_mhz"] + c["cpu_cycles"] / 100.0, abs=1e-3)
        npu_macs = sum(x["macs"] * x["calls"] for x in npu)
        assert c["utilisation"] == pytest.approx(npu_macs / (c["npu_cycles"] * c["pes"]), abs=1e-6)
        assert c["npu_mac_share"] == pytest.approx(npu_macs / sum(x["macs"] * x["calls"] for x in c["layers"]),
                                                   abs=1e-6)
        assert sum(c["cycles_by_operation"]["npu"].values()) == c["npu_cycles"]
        assert sum(c["cycles_by_operation"]["cpu"].values()) == c["cpu_cycles"]
        assert c["sram_peak"] <= c["sram_kib"] * 1024
        depthwise = [x for x in c["layers"] if x["kind"] == "depthwise"]
        assert len(depthwise) == 4
        if c["depthwise"] == "cpu":
            assert all(x["device"] == "cpu" and "OP_DEPTH_CONV" in x["reason"] and x["cpu_cycles"] > 0
                       for x in depthwise)
            assert c["cycles_by_operation"]["cpu"]["DEPTH"] > 0
        elif c["sram_kib"] == 256:
            assert all(x["device"] == "mynpu" for x in depthwise)


def test_the_design_questions_have_answers(explored):
    """The figures move the way the hardware does: emulated depthwise is
    slower than the instruction, depthwise on the CPU costs CPU cycles, the
    output-pixels grid is never slower than output channels."""
    for pes in GRID["pes"]:
        for sram in GRID["sram_kib"]:
            def get(parallel, depthwise):
                return _by(explored, Configuration(pes, sram, parallel, depthwise))

            for parallel in GRID["parallel"]:
                native, emulated, cpu = (get(parallel, d) for d in ("npu", "per-channel", "cpu"))
                assert emulated["cycles_by_operation"]["npu"]["DEPTH"] > native["cycles_by_operation"]["npu"]["DEPTH"]
                assert cpu["cpu_cycles"] > native["cpu_cycles"] and cpu["total_us"] > native["total_us"]
            for depthwise in GRID["depthwise"]:
                assert get("output-pixels", depthwise)["npu_cycles"] <= get("output", depthwise)["npu_cycles"]


def test_csv_and_plots(explored):
    with explored.files["csv"].open() as f:
        rows = list(csv.DictReader(f))
    assert [r["label"] for r in rows] == [c["label"] for c in explored.configurations]
    assert rows[0]["label"] == "8K-64-I" and {"npu_DEPTH", "cpu_DEPTH", "npu_POINTWISE"} <= set(rows[0])
    for row, c in zip(rows, explored.configurations):
        assert int(row["npu_cycles"]) == c["npu_cycles"] and float(row["total_us"]) == c["total_us"]
    for name in ("cycles", "pareto", "layers"):
        data = explored.files[name].read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


SAMPLE = [Configuration(128, 8, "output-pixels", "per-channel"), Configuration(64, 256, "input", "cpu")]


@pytest.mark.parametrize("configuration", SAMPLE, ids=lambda c: f"{c.label}-{c.depthwise}")
def test_equals_a_full_compile_and_the_simulator(configuration, explored, shared_models, tmp_path):
    """The sweep's figures for a configuration are the report of a full
    compile with that configuration's flags, and the simulator counts the
    same cycles when the compiled model runs."""
    compiled = npukit.compile(shared_models / "kws_int8.onnx", "mynpu", "embedded", tmp_path / "kws",
                              execution_model="inline-dynamic", mynpu=configuration.options())
    report = compiled.manifest["mynpu"]
    swept = _by(explored, configuration)
    assert swept["npu_cycles"] == report["summary"]["total_cycles"]
    assert swept["npu_mac_share"] == report["summary"]["npu_mac_share"]
    assert swept["npu_dispatches"] == report["summary"]["npu_dispatches"]
    keys = ("device", "reason", "macs", "calls", "cycles")
    assert [{k: x[k] for k in keys} for x in swept["layers"]] == \
        [{k: row.get(k, 0) for k in keys} for row in report["dispatches"]]
    for x, row in zip(swept["layers"], report["dispatches"]):
        if row["device"] == "mynpu":
            assert {k: x[k] for k in ("compute_cycles", "dma_cycles", "dma_bytes", "sram_peak", "tiling")} == \
                {k: row[k] for k in ("compute_cycles", "dma_cycles", "dma_bytes", "sram_peak", "tiling")}
    model = NpukitRuntimeModel(compiled)
    kws = next(m for m in MLPERF_MODELS if m.name == "kws_int8")
    for x in random_inputs(kws, (1, 49, 10, 1), np.random.default_rng(3), 2):
        model(x)
    _, total = model.npu_counters()
    model.close()
    assert total.cycles == 2 * swept["npu_cycles"]


def test_cli(shared_models, tmp_path, capsys):
    out = tmp_path / "explore"
    status = npukit_main(["explore", str(shared_models / "kws_int8.onnx"), "--pes", "32", "--sram-kib", "64",
                          "--parallel", "output,output-pixels", "--depthwise", "npu", "--cpu", "cortex-m4",
                          "--cpu-clock-mhz", "200", "--no-plots", "-q", "-o", str(out)])
    text = capsys.readouterr().out
    assert status == 0, text
    assert "64K-32-O" in text and "64K-32-P" in text and "layer-configurations/s" in text
    assert sorted(p.name for p in out.iterdir()) == ["explore.csv", "explore.json"]
    assert json.loads((out / "explore.json").read_text())["cpu"]["clock_mhz"] == 200


@pytest.mark.parametrize("flag,value,message", [
    ("--parallel", "diagonal", "parallel must be one of output, input, output-pixels"),
    ("--depthwise", "gpu", "depthwise must be one of npu, cpu, per-channel"),
    ("--sram-kib", "2097152", "--mynpu-sram-kib must be an integer in 1..1048576"),
    ("--cpu", "cortex-a53", "no measured CPU costs for 'cortex-a53'"),
])
def test_cli_refuses_what_it_cannot_sweep(flag, value, message, shared_models, tmp_path, capsys):
    status = npukit_main(["explore", str(shared_models / "kws_int8.onnx"), flag, value, "-o", str(tmp_path / "x")])
    assert status == 1 and message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
