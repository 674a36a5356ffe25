"""Bad input gets a clear error, no traceback, a non-zero exit and no files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import npukit
from npukit.errors import CompileError, ModelError, TargetError
from support.onnx_models import add_model, crashing_op_model, unsupported_op_model

NPUKIT = [sys.executable, "-m", "npukit.cli.main"]


def _nothing_written(out_dir: Path) -> None:
    assert not out_dir.exists(), f"{out_dir} was created by a failed compile"
    parent = out_dir.parent
    leftovers = [p.name for p in parent.iterdir() if ".staging-" in p.name] if parent.exists() else []
    assert leftovers == [], f"staging directories left behind: {leftovers}"


def _cli(args: list, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*NPUKIT, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def _one_line_error(proc: subprocess.CompletedProcess, needle: str) -> None:
    assert proc.returncode == 1, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("npukit: error:")]
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


def _bad_models(tmp: Path) -> dict:
    (tmp / "empty.onnx").write_bytes(b"")
    (tmp / "garbage.onnx").write_bytes(b"\x08\x07this is not protobuf at all\xff\xfe" * 10)
    (tmp / "notes.txt").write_text("hello")
    (tmp / "model.tflite").write_bytes(b"\x00" * 64)
    (tmp / "model.mlirbc").write_bytes(b"not bytecode")
    (tmp / "folder.onnx").mkdir()
    return {
        "missing": (tmp / "nope.onnx", "no such file"),
        "directory": (tmp / "folder.onnx", "is a directory"),
        "empty": (tmp / "empty.onnx", "the file is empty"),
        "garbage": (tmp / "garbage.onnx", "not a readable ONNX model"),
        "unknown-format": (tmp / "notes.txt", "model format not recognised"),
        "bad-tflite": (tmp / "model.tflite", "not a TFLite flatbuffer"),
        "bad-mlirbc": (tmp / "model.mlirbc", "not MLIR bytecode"),
    }


@pytest.mark.parametrize("case", ["missing", "directory", "empty", "garbage", "unknown-format", "bad-tflite", "bad-mlirbc"])
def test_bad_model_files(tmp_path, case):
    path, needle = _bad_models(tmp_path)[case]
    out = tmp_path / "out" / "artifact"
    with pytest.raises(ModelError, match=needle):
        npukit.compile(path, out_dir=out)
    _nothing_written(out)
    _nothing_written(tmp_path / "out")
    _one_line_error(_cli(["compile", path, "-o", out], tmp_path), needle)
    _nothing_written(out)


def test_unknown_target_and_mode(tmp_path):
    model = add_model(tmp_path / "add.onnx")
    out = tmp_path / "out"
    with pytest.raises(TargetError, match="unknown target 'cortex-m9'") as cm9:
        npukit.compile(model, target="cortex-m9", out_dir=out)
    assert "is a board" not in str(cm9.value)
    # A board's name says which CPU target it is.
    with pytest.raises(TargetError, match="'mps2-an386' is a board: compile for its CPU, cortex-m4, or `npukit "
                                          "deploy --board mps2-an386`"):
        npukit.compile(model, target="mps2-an386", out_dir=out)
    with pytest.raises(TargetError, match="not of the form"):
        npukit.compile(model, target="mynpu+mynpu", out_dir=out)
    with pytest.raises(TargetError, match="unknown output mode 'elf'"):
        npukit.compile(model, output="elf", out_dir=out)
    with pytest.raises(TargetError, match="needs the async execution model"):
        npukit.compile(model, output="vmfb", execution_model="inline-dynamic", out_dir=out)
    _nothing_written(out)
    _one_line_error(_cli(["compile", model, "-t", "cortex-m9", "-o", out], tmp_path), "unknown target 'cortex-m9'")
    proc = _cli(["compile", model, "-m", "elf", "-o", out], tmp_path)
    assert proc.returncode == 2 and "invalid choice: 'elf'" in proc.stderr
    _nothing_written(out)


def test_unknown_flags(tmp_path):
    model = add_model(tmp_path / "add.onnx")
    out = tmp_path / "out"
    with pytest.raises(TargetError, match="IREE rejected the flags"):
        npukit.compile(model, out_dir=out, iree_flags=["--iree-no-such-flag=1"])
    with pytest.raises(TargetError, match="iree_flags must be"):
        npukit.compile(model, out_dir=out, iree_flags=["no-dashes"])
    _nothing_written(out)
    proc = _cli(["compile", model, "--no-such-flag"], tmp_path)
    assert proc.returncode == 2 and "unrecognized arguments: --no-such-flag" in proc.stderr
    _one_line_error(
        _cli(["compile", model, "-o", out, "--iree-flag=--iree-no-such-flag=1"], tmp_path), "IREE rejected the flags"
    )
    _nothing_written(out)


def test_op_iree_cannot_compile_is_named(tmp_path):
    model = unsupported_op_model(tmp_path / "dft.onnx")
    out = tmp_path / "out"
    with pytest.raises(CompileError) as info:
        npukit.compile(model, out_dir=out)
    message = str(info.value)
    assert str(model) in message
    assert "onnx.DFT" in message and "ONNX operator DFT at node 'spectrum'" in message
    assert "failed to legalize" in message
    assert info.value.diagnostics, "the full diagnostics are kept on the exception"
    _nothing_written(out)
    _one_line_error(_cli(["compile", model, "-o", out], tmp_path), "ONNX operator DFT at node 'spectrum'")
    _nothing_written(out)


def test_compiler_crash_does_not_kill_the_caller(tmp_path):
    model = crashing_op_model(tmp_path / "unique.onnx")
    out = tmp_path / "out"
    with pytest.raises(CompileError, match=r"IREE crashed \(SIGSEGV\)") as info:
        npukit.compile(model, out_dir=out)
    assert "the model's ONNX operators: Unique" in str(info.value)
    _nothing_written(out)
    # This process is still alive and compiles the next model.
    ok = npukit.compile(add_model(tmp_path / "add.onnx"), out_dir=tmp_path / "ok")
    assert ok.path("vmfb").exists()


def test_failed_compile_keeps_a_previous_artifact(tmp_path):
    good = add_model(tmp_path / "add.onnx")
    out = tmp_path / "out"
    first = npukit.compile(good, out_dir=out, name="model")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(CompileError):
        npukit.compile(unsupported_op_model(tmp_path / "dft.onnx"), out_dir=out, name="model")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert first.path("vmfb").exists()


def test_tflite_compiles_without_tensorflow(tmp_path, shared_models):
    """.tflite files are read directly: a machine without TensorFlow compiles them."""
    script = (
        "import sys; sys.modules['tensorflow'] = None; sys.modules['tf2onnx'] = None\n"
        "import npukit\n"
        f"npukit.compile({str(shared_models / 'kws_int8.tflite')!r}, out_dir={str(tmp_path / 'out')!r})\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "kws_int8.vmfb").exists()


def test_mlir_op_from_unknown_dialect_is_named_with_location(tmp_path):
    model = tmp_path / "custom.mlir"
    model.write_text(
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        '  %0 = "mydialect.frobnicate"(%a) : (tensor<4xf32>) -> tensor<4xf32>\n'
        "  return %0 : tensor<4xf32>\n"
        "}\n"
    )
    out = tmp_path / "out"
    with pytest.raises(CompileError, match=r"operation 'mydialect.frobnicate' at loc\(\".*custom.mlir\":2:8\)"):
        npukit.compile(model, out_dir=out)
    _nothing_written(out)
