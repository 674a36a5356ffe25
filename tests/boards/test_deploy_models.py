"""``npukit deploy``: the MLPerf Tiny int8 models on the boards, outputs equal
to the host's; the CLI's table, JSON and kept project."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from npukit.cli.main import main as npukit_main
from npukit.deploy.deploy_model import deploy
from support.firmware import REPO

DIGITS = REPO / "samples" / "digits" / "digits_int8.onnx"


@pytest.mark.slow
@pytest.mark.parametrize("board_name,mode", [("mps2-an386", "static"), ("mps2-an386", "embedded"),
                                             ("virt-rv32imf", "static")])
@pytest.mark.parametrize("model", ["kws_int8", "resnet8_int8"])
def test_int8_model_on_board_equals_host(model, board_name, mode, shared_models):
    result = deploy(shared_models / f"{model}.onnx", board_name, mode=mode, seed=7)
    context = f"{model} on {board_name} ({mode}); console:\n{result.console}"
    # The default, tuned CPU pipeline, without falling back to stock.
    manifest = result.artifact.manifest
    assert manifest["cpu_pipeline"] == "tuned" and not manifest["warnings"], (manifest["warnings"], context)
    assert result.outputs_match_host, context
    for got, want in zip(result.outputs, result.host_outputs):
        assert got.dtype == want.dtype and np.array_equal(got, want), context
    assert result.flash.model_code > 0 and result.flash.constants > 0 and result.flash.runtime > 0
    # The constants hold at least the int8 weights (one byte per MAC of a 1x1
    # layer at most; the figure is read from the link map, not computed).
    assert result.flash.constants > 10_000, context
    assert result.ram.arena_high_water > 0 and 0 < result.ram.stack_high_water < result.ram.stack_size
    assert result.macs == result.artifact.manifest["macs"] > 1_000_000
    assert result.instructions > 0


def test_cli_prints_table_writes_json_and_keeps_a_project(tmp_path, capsys):
    report = tmp_path / "report.json"
    keep = tmp_path / "fw"
    plots = tmp_path / "plots"
    status = npukit_main(["deploy", str(DIGITS), "--board", "mps2-an386", "--json", str(report),
                          "--keep", str(keep), "--plot", str(plots), "-q"])
    out = capsys.readouterr().out
    assert status == 0, out
    for label in ("flash (text + rodata)", "model code", "model constants", "npukit runtime", "RAM",
                  "arena high-water", "stack high-water", "instructions per inference", "instructions per MAC",
                  "RAM without the stack", "planned buffers", "live-activation lower bound",
                  "stack bound (before running)"):
        assert label in out
    for png in ("memory.png", "flash.png"):
        assert (plots / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    data = json.loads(report.read_text())
    for key in ("board", "flash_bytes", "ram_bytes", "instructions", "instructions_per_mac", "outputs",
                "outputs_match_host", "ram_without_stack", "arena_planned", "arena_plan_high_water",
                "activation_lower_bound", "stack_bound"):
        assert key in data
    assert data["ram"]["stack_high_water"] <= data["stack_bound"]["bound"] < data["ram"]["stack_size"]
    assert data["arena_planned"] == data["arena_plan_high_water"] > 0
    assert data["activation_lower_bound"] > 0
    assert data["board"] == "mps2-an386" and data["outputs_match_host"] is True
    assert data["flash_bytes"] == sum(data["flash"].values())
    assert data["instructions_per_mac"] == pytest.approx(data["instructions"] / data["macs"], rel=1e-3)
    assert np.allclose(np.array(data["outputs"][0], dtype=np.float32), np.load(keep / "host_output_0.npy"),
                       rtol=1e-4, atol=1e-6)

    # The kept project builds on its own with CMake and runs.
    build = keep / "rebuild"
    subprocess.run(["cmake", "-S", str(keep), "-B", str(build), "-G", "Ninja",
                    f"-DCMAKE_TOOLCHAIN_FILE={keep}/npukit/toolchains/cortex-m4.cmake"], check=True,
                   capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    run = subprocess.run(["sh", str(keep / "run.sh")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "outputs match the host" in run.stdout, run.stdout


def test_outputs_that_differ_from_the_host_fail_the_deploy(tmp_path, monkeypatch, capsys):
    import npukit

    real_load = npukit.load

    def wrong_host_outputs(artifact, **kwargs):
        loaded = real_load(artifact, **kwargs)
        return lambda *inputs: [o + np.float32(1.0) for o in loaded(*inputs)]

    monkeypatch.setattr(npukit, "load", wrong_host_outputs)
    status = npukit_main(["deploy", str(DIGITS), "--board", "virt-rv32imf", "--json", str(tmp_path / "r.json")])
    captured = capsys.readouterr()
    assert status == 1
    assert "differ from the host" in captured.err
    assert "DIFFER FROM the host" in captured.out
    assert json.loads((tmp_path / "r.json").read_text())["outputs_match_host"] is False


def test_quantized_outputs_match_within_one_lsb():
    from npukit.deploy.model_data import outputs_identical, outputs_match

    want = [np.array([-128, 5, 127], np.int8), np.array([1.0, 2.0], np.float32)]
    near = [np.array([-127, 4, 127], np.int8), np.array([1.0, 2.0001], np.float32)]
    assert outputs_match(near, want) and not outputs_identical(near, want)
    assert not outputs_match([np.array([-126, 5, 127], np.int8), want[1]], want)
    assert not outputs_match([want[0], np.array([1.0, 2.01], np.float32)], want)
    assert outputs_match(want, want) and outputs_identical(want, want)
    assert not outputs_match([np.array([7], np.int32)], [np.array([6], np.int32)])  # other integers exact
