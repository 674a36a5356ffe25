"""The ``npukit`` command line: targets, compile, run, help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from npukit.targets.cpu_presets import list_presets
from support.onnx_models import add_model

NPUKIT = [str(Path(sys.executable).parent / "npukit")]


def _run(args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([*NPUKIT, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def test_targets_lists_every_preset():
    proc = _run(["targets", "-v"])
    assert proc.returncode == 0
    for preset in list_presets():
        assert preset.name in proc.stdout
        if preset.triple:
            assert preset.triple in proc.stdout
    assert "mynpu+CPU" in proc.stdout


def test_help_explains_commands():
    top = _run(["--help"])
    assert top.returncode == 0 and all(c in top.stdout for c in ("compile", "run", "targets"))
    comp = _run(["compile", "--help"])
    assert "--target" in comp.stdout and "--mode" in comp.stdout and "static" in comp.stdout
    run = _run(["run", "--help"])
    assert ".npy" in run.stdout


def test_compile_then_run_with_npy_inputs(tmp_path):
    model = add_model(tmp_path / "add.onnx")
    proc = _run(["compile", model, "-o", tmp_path / "art"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "add" in proc.stdout and "add.vmfb" in proc.stdout and "entry single_op" in proc.stdout
    # Progress is for terminals (a status line) and --verbose; a pipe gets none.
    assert proc.stderr == ""
    proc = _run(["compile", model, "-o", tmp_path / "art", "--verbose"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "npukit: importing" in proc.stderr and "npukit: writing" in proc.stderr
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", np.full((2, 3), 0.5, np.float32))
    proc = _run(["run", tmp_path / "art", tmp_path / "a.npy", tmp_path / "b.npy", "--save", tmp_path / "outs"])
    assert proc.returncode == 0, proc.stderr
    assert "output 0: float32[2x3]" in proc.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "outs" / "output_0.npy"), a + 0.5)


def test_run_reports_bad_inputs_in_one_line(tmp_path):
    model = add_model(tmp_path / "add.onnx")
    assert _run(["compile", "-q", model, "-o", tmp_path / "art"]).returncode == 0
    np.save(tmp_path / "wrong.npy", np.zeros((3, 2), np.float32))
    proc = _run(["run", tmp_path / "art", tmp_path / "wrong.npy", tmp_path / "wrong.npy"])
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "npukit: error: input 0 ('a') has shape 3x2, the model takes 2x3"
    ]
    proc = _run(["run", tmp_path / "art", tmp_path / "missing.npy"])
    assert proc.returncode == 1 and "missing.npy: no such input file" in proc.stderr


def test_run_refuses_board_artifacts(tmp_path):
    model = add_model(tmp_path / "add.onnx")
    assert _run(["compile", "-q", model, "-t", "cortex-m4", "-m", "static", "-o", tmp_path / "m4"]).returncode == 0
    np.save(tmp_path / "a.npy", np.zeros((2, 3), np.float32))
    proc = _run(["run", tmp_path / "m4", tmp_path / "a.npy", tmp_path / "a.npy"])
    assert proc.returncode == 1 and "runs .vmfb artifacts; this one is 'static'" in proc.stderr


def test_run_on_npukits_runtime(tmp_path):
    model = add_model(tmp_path / "add.onnx")
    assert _run(["compile", "-q", model, "-m", "embedded", "-o", tmp_path / "emb"]).returncode == 0
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", np.full((2, 3), 2.0, np.float32))
    proc = _run(["run", tmp_path / "emb", tmp_path / "a.npy", tmp_path / "b.npy", "--runtime", "npukit",
                 "--save", tmp_path / "outs"])
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "outs" / "output_0.npy"), a + 2.0)
    # The stock runtime cannot run an embedded artifact: one line saying so.
    proc = _run(["run", tmp_path / "emb", tmp_path / "a.npy", tmp_path / "b.npy"])
    assert proc.returncode == 1 and "vmfb" in proc.stderr and "Traceback" not in proc.stderr
