"""``npukit deploy --npu mynpu``: the MLPerf Tiny int8 models compiled for
mynpu+cortex-m4 run on mps2-an386 with the NPU's dispatches on the simulator
linked into the firmware (static by default, the NPU's streams and weights
read from flash in place; embedded on request): on 20 random inputs, outputs identical to the same
compile on the host and to TFLite's reference kernels; the NPU cycles and
MACs the firmware counts equal to the compiler's report, and the CPU's
instructions kept apart from those the simulation takes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from npukit.cli.main import main as npukit_main
from npukit.deploy.deploy_model import deploy
from npukit.mynpu.options import MynpuOptions
from support.oracles import TFLiteReference


@pytest.mark.slow
@pytest.mark.parametrize("model", ["kws_int8", "resnet8_int8"])
def test_int8_model_on_board_with_mynpu(model, shared_models):
    result = deploy(shared_models / f"{model}.onnx", "mps2-an386", npu="mynpu", seed=3, samples=20)
    context = f"{model} with mynpu on mps2-an386; console:\n{result.console}"
    # Static by default: the mynpu executable's CPU code is the static library.
    assert result.artifact.mode == "static" and len(result.samples) == 20, context
    assert [e["cpu_code"] for e in result.artifact.manifest["mynpu"]["executables"]] == ["static"]
    # The NPU and the CPU's requantizations are integer arithmetic: the board
    # computes what the host does and what TFLite's reference kernels do.
    tflite = TFLiteReference(shared_models / f"{model}.tflite", kernels="reference")
    for sample in result.samples:
        assert sample.identical_to_host, context
        np.testing.assert_array_equal(sample.outputs[0], tflite(sample.inputs[0]))
    assert len({s.outputs[0].tobytes() for s in result.samples}) > 1
    report = result.artifact.manifest["mynpu"]
    npu_rows = [r for r in report["dispatches"] if r["device"] == "mynpu"]
    # The simulator in the firmware counted what the compiler estimated.
    assert result.npu.cycles == report["summary"]["total_cycles"] > 0, context
    assert result.npu.macs == report["summary"]["npu_macs"] == sum(r["macs"] for r in npu_rows)
    assert result.npu.dispatches == len(npu_rows)
    assert result.dispatches == len(report["dispatches"])
    # The simulation's instructions are separated from the CPU's own.
    assert 0 < result.cpu_instructions < result.npu.simulation_instructions
    assert result.cpu_instructions + result.npu.simulation_instructions == result.instructions
    # The simulator takes the SRAM its streams touch from the arena, not the configuration's.
    assert result.ram.simulated_npu_sram == max(r["sram_peak"] for r in npu_rows) <= report["hardware"]["sram_bytes"]
    assert result.flash.npu_simulator > 0


@pytest.mark.slow
def test_output_pixels_parallelism_on_board(shared_models):
    """resnet8_int8 on 128 PEs arranged as output channels x output pixels:
    at least 45% of the PEs busy over the whole inference with 98% of the
    MACs on the NPU, where output-channel parallelism keeps 18.9% busy; the
    board's outputs are the host's."""
    options = MynpuOptions(pes=128, parallel="output-pixels")
    result = deploy(shared_models / "resnet8_int8.onnx", "mps2-an386", npu="mynpu", mynpu=options, seed=5, samples=4)
    context = f"console:\n{result.console}"
    assert all(sample.identical_to_host for sample in result.samples), context
    summary = result.artifact.manifest["mynpu"]["summary"]
    assert result.artifact.manifest["mynpu"]["hardware"]["parallelism"] == "output-pixels"
    assert result.npu.cycles == summary["total_cycles"]
    assert summary["npu_mac_share"] >= 0.98
    assert summary["npu_macs"] / (summary["total_cycles"] * 128) >= 0.45


def test_embedded_mode_loads_what_static_mode_reads_in_place(shared_models):
    """--mode embedded stays available: the same outputs, with the CPU code's
    ELF loaded into the arena, which the static build leaves in flash."""
    static = deploy(shared_models / "kws_int8.onnx", "mps2-an386", npu="mynpu", seed=7, samples=2)
    embedded = deploy(shared_models / "kws_int8.onnx", "mps2-an386", npu="mynpu", mode="embedded", seed=7, samples=2)
    assert (static.artifact.mode, embedded.artifact.mode) == ("static", "embedded")
    for a, b in zip(static.samples, embedded.samples):
        assert a.identical_to_host and b.identical_to_host
        np.testing.assert_array_equal(a.outputs[0], b.outputs[0])
    elfs = [f["elf"]["sizes"] for role, f in embedded.artifact.manifest["files"].items()
            if role.startswith("embedded_executable") and "elf" in f]
    loaded = sum(sizes["text"] + sizes["rodata"] for sizes in elfs)
    assert loaded > 0 and static.ram.runtime_arena + loaded <= embedded.ram.runtime_arena
    assert static.npu.cycles == embedded.npu.cycles


def test_cli_reports_npu_cycles_beside_cpu_instructions(shared_models, capsys, tmp_path):
    report = tmp_path / "deploy.json"
    status = npukit_main(["deploy", str(shared_models / "kws_int8.onnx"), "--board", "mps2-an386", "--npu", "mynpu",
                          "--mynpu-sram-kib", "64", "--json", str(report), "-q"])
    out = capsys.readouterr().out
    assert status == 0, out
    for label in ("CPU instructions per inference", "simulating the NPU (not counted)", "mynpu cycles per inference",
                  "NPU simulator (the NPU's stand-in)", "simulated NPU SRAM (not counted)", "on mynpu"):
        assert label in out, out
    data = json.loads(report.read_text())
    assert 0 < data["npu"]["sram_bytes"] == data["ram"]["simulated_npu_sram"] <= 64 * 1024
    assert data["npu"]["cpu_instructions"] + data["npu"]["simulation_instructions"] == data["instructions"]
    assert data["flash_bytes"] == sum(data["flash"].values())
    assert data["npu"]["cycles"] > 0 and data["outputs_match_host"] is True
