"""Bad input gets a clear error, no traceback, a non-zero exit and no files.

On the command line every refusal is exactly one stderr line that names the
model file (and, where there is one, the model's operator), exit status 1;
``--verbose`` shows the logs and diagnostics behind it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import npukit
from npukit.errors import CompileError, CompileTimeout, ModelError, TargetError
from support.onnx_models import add_model, crashing_op_model, unsupported_op_model
from support.tflite_models import Operator, Tensor, int8_add_model, write_tflite

NPUKIT = [sys.executable, "-m", "npukit.cli.main"]


def _nothing_written(out_dir: Path) -> None:
    assert not out_dir.exists(), f"{out_dir} was created by a failed compile"
    parent = out_dir.parent
    leftovers = [p.name for p in parent.iterdir() if ".staging-" in p.name] if parent.exists() else []
    assert leftovers == [], f"staging directories left behind: {leftovers}"


def _cli(args: list, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*NPUKIT, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def _one_line_error(proc: subprocess.CompletedProcess, needle: str, model: Path | None = None) -> str:
    """Exit status 1 and exactly one stderr line: the error, with ``needle`` and the model's path in it."""
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("npukit: error: "), proc.stderr
    assert needle in lines[0], lines[0]
    if model is not None:
        assert str(model) in lines[0], lines[0]
    return lines[0]


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
    _one_line_error(_cli(["compile", path, "-o", out], tmp_path), needle, path)
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
    _one_line_error(_cli(["compile", model, "-m", "elf", "-o", out], tmp_path), "invalid choice: 'elf'")
    _nothing_written(out)


def test_unknown_flags(tmp_path):
    model = add_model(tmp_path / "add.onnx")
    out = tmp_path / "out"
    with pytest.raises(TargetError, match="IREE rejected the flags"):
        npukit.compile(model, out_dir=out, iree_flags=["--iree-no-such-flag=1"])
    with pytest.raises(TargetError, match="iree_flags must be"):
        npukit.compile(model, out_dir=out, iree_flags=["no-dashes"])
    _nothing_written(out)
    _one_line_error(_cli(["compile", model, "--no-such-flag"], tmp_path), "unrecognized arguments: --no-such-flag")
    _one_line_error(_cli(["compile"], tmp_path), "the following arguments are required: model")
    _one_line_error(_cli([], tmp_path), "the following arguments are required: COMMAND")
    _one_line_error(_cli(["compile", model, "--time-limit", "soon"], tmp_path), "invalid float value: 'soon'")
    _one_line_error(
        _cli(["compile", model, "-o", out, "--iree-flag=--iree-no-such-flag=1"], tmp_path), "IREE rejected the flags"
    )
    _nothing_written(out)


def test_op_iree_cannot_compile_is_named(tmp_path):
    model = unsupported_op_model(tmp_path / "dft.onnx")
    out = tmp_path / "out"
    messages = []
    with pytest.raises(CompileError) as info:
        npukit.compile(model, out_dir=out, progress=messages.append)
    message = str(info.value)
    assert message.startswith(f"{model}: node 'spectrum' (DFT, output 'y'): IREE 3.13 has no lowering for the ONNX "
                              "operator DFT in this form (failed to legalize"), message
    assert info.value.diagnostics, "the full diagnostics are kept on the exception"
    # The failure comes before the tuned pipeline's passes: no second compile with the stock pipeline.
    assert not any("stock pipeline" in m for m in messages), messages
    _nothing_written(out)
    _one_line_error(_cli(["compile", model, "-o", out], tmp_path), "node 'spectrum' (DFT, output 'y')", model)
    _nothing_written(out)
    # --verbose: IREE's diagnostics, then the same error line last.
    verbose = _cli(["compile", model, "-o", out, "--verbose"], tmp_path)
    assert verbose.returncode == 1
    assert "see current operation" in verbose.stderr and "npukit: compiling dft" in verbose.stderr
    assert verbose.stderr.splitlines()[-1] == _cli(["compile", model, "-o", out], tmp_path).stderr.strip()
    _nothing_written(out)


def test_compiler_crash_does_not_kill_the_caller(tmp_path):
    model = crashing_op_model(tmp_path / "unique.onnx")
    out = tmp_path / "out"
    with pytest.raises(CompileError, match=r"IREE crashed \(SIGSEGV\)") as info:
        npukit.compile(model, out_dir=out)
    assert "the model's ONNX operators: Unique" in str(info.value)
    _nothing_written(out)
    _one_line_error(_cli(["compile", model, "-o", out], tmp_path), "IREE crashed (SIGSEGV)", model)
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


def test_unsupported_tflite_operator_is_one_line(tmp_path):
    """An operator no lowering exists for: the file, the operator's index,
    kind and output, and the operators that are supported."""
    from ai_edge_litert import schema_py_generated as schema

    model = write_tflite(
        tmp_path / "cumsum.tflite",
        [Tensor((1, 4), np.float32, name="x"), Tensor((), np.int32, data=np.array(1, np.int32), name="axis"),
         Tensor((1, 4), np.float32, name="running_total")],
        [Operator("CUMSUM", [0, 1], [2], "CumsumOptions", schema.CumsumOptionsT())], [0], [2])
    out = tmp_path / "out"
    with pytest.raises(ModelError) as info:
        npukit.compile(model, out_dir=out)
    assert str(info.value).startswith(f"{model}: operator 0 (CUMSUM, output 'running_total'): the operator CUMSUM "
                                      "is not supported; npukit's TFLite importer supports ABS, ADD, ")
    line = _one_line_error(_cli(["compile", model, "-o", out], tmp_path), "operator 0 (CUMSUM", model)
    assert "CONV_2D" in line and "SOFTMAX" in line
    _nothing_written(out)


@pytest.mark.parametrize("case", ["uint8 ADD", "int32 DEQUANTIZE", "complex64 output"])
def test_unsupported_tflite_tensor_type_is_one_line(tmp_path, case):
    """A type no lowering of the operator takes: named with the operator and the types that are supported."""
    from ai_edge_litert import schema_py_generated as schema

    path = tmp_path / "model.tflite"
    if case == "uint8 ADD":
        q = dict(dtype=np.uint8, scale=0.1, zero_point=128)
        write_tflite(path, [Tensor((1, 4), **q, name="a"), Tensor((1, 4), **q, name="b"), Tensor((1, 4), **q, name="y")],
                     [Operator("ADD", [0, 1], [2], "AddOptions", schema.AddOptionsT())], [0, 1], [2])
        needle = ("operator 0 (ADD, output 'y'): a ADD of uint8, uint8, uint8 tensors is not supported (float32, "
                  "int32, or int8 or int16 throughout, is)")
    elif case == "int32 DEQUANTIZE":  # (a float16 constant's DEQUANTIZE is computed at import)
        write_tflite(path, [Tensor((1, 4), np.float32, name="x"),
                            Tensor((1, 4), np.int32, data=np.ones(4, np.int32), name="w32"),
                            Tensor((1, 4), np.float32, name="w"), Tensor((1, 4), np.float32, name="y")],
                     [Operator("DEQUANTIZE", [1], [2]), Operator("ADD", [0, 2], [3], "AddOptions", schema.AddOptionsT())],
                     [0], [3])
        needle = ("operator 0 (DEQUANTIZE, output 'w'): a DEQUANTIZE of int32 to float32 is not supported (of int8, "
                  "int16 or uint8 to float32 is)")
    else:
        write_tflite(path, [Tensor((1, 4), np.float32, name="x"), Tensor((1, 4), np.complex64, name="spectrum")],
                     [Operator("CAST", [0], [1])], [0], [1])
        needle = ("model output tensor 1 'spectrum' (complex64[1,4]): a complex64 output is not supported (int8, "
                  "int16, int32, uint8 and float32 are)")
    out = tmp_path / "out"
    with pytest.raises(ModelError, match=re.escape(needle)):
        npukit.compile(path, out_dir=out)
    _one_line_error(_cli(["compile", path, "-o", out], tmp_path), needle, path)
    _nothing_written(out)


def test_a_supported_tflite_model_of_the_test_builder_compiles(tmp_path):
    """The builder the tests above use writes models npukit accepts: the refusals are about the operator or type."""
    result = npukit.compile(int8_add_model(tmp_path / "add.tflite"), out_dir=tmp_path / "out")
    a, b = np.array([[10, -20, 30, 127]], np.int8), np.array([[1, 2, 3, 4]], np.int8)
    np.testing.assert_array_equal(npukit.run(result, a, b)[0], [[11, -18, 33, 127]])


def test_time_limit_stops_a_long_compile(tmp_path):
    """A compile past its time limit is stopped: CompileTimeout, one line, nothing written."""
    model = tmp_path / "chain.onnx"
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Neg" if i % 2 else "Relu", [f"t{i}"], [f"t{i + 1}"], name=f"n{i}") for i in range(1500)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("t1500", TensorProto.FLOAT, [4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), model)
    out = tmp_path / "out"
    with pytest.raises(CompileTimeout, match="did not finish within the time limit of 2 s"):
        npukit.compile(model, out_dir=out, time_limit=2)
    _nothing_written(out)
    _one_line_error(_cli(["compile", model, "-o", out, "--time-limit", "2"], tmp_path),
                    "did not finish within the time limit of 2 s", model)
    _nothing_written(out)
    with pytest.raises(TargetError, match="the time limit must be a positive number of seconds"):
        npukit.compile(model, out_dir=out, time_limit=0)


def test_an_internal_fault_is_one_line(tmp_path, monkeypatch, capfd):
    """A fault in npukit's own code: one line saying so (exit status 1); the traceback with --verbose."""
    from npukit.cli import main as cli_main

    def broken(*_args, **_kwargs):
        raise KeyError("no such layer")

    monkeypatch.setattr(npukit, "compile", broken)
    model = add_model(tmp_path / "add.onnx")
    assert cli_main.main(["compile", str(model)]) == 1
    err = capfd.readouterr().err
    assert err.splitlines() == ["npukit: internal error: KeyError: 'no such layer' (run with --verbose for the "
                                "details)"]
    assert cli_main.main(["compile", str(model), "--verbose"]) == 1
    err = capfd.readouterr().err
    assert "Traceback (most recent call last)" in err and err.splitlines()[-1] == \
        "npukit: internal error: KeyError: 'no such layer'"


def test_other_output_on_stderr_is_kept_off_it(tmp_path, monkeypatch, capfd):
    """What libraries print on stderr (from Python or straight to the file descriptor) while a command runs
    stays off the terminal; only npukit's one line remains. --verbose lets it through."""
    import os

    from npukit.cli import main as cli_main
    from npukit.errors import ModelError as Refusal

    def noisy(*_args, **_kwargs):
        os.write(2, b"ERROR: some converter's log line\n")
        print("a library's print", file=sys.stderr)
        raise Refusal("m.onnx: refused")

    monkeypatch.setattr(npukit, "compile", noisy)
    assert cli_main.main(["compile", "m.onnx"]) == 1
    assert capfd.readouterr().err.splitlines() == ["npukit: error: m.onnx: refused"]
    assert cli_main.main(["compile", "m.onnx", "-v"]) == 1
    err = capfd.readouterr().err
    assert "some converter's log line" in err and "a library's print" in err
    assert err.splitlines()[-1] == "npukit: error: m.onnx: refused"


@pytest.mark.parametrize("model_file,where", [
    ("kws_int8.tflite", "operator 0 (CONV_2D, output 'functional_1/activation/Relu;"),
    ("kws_int8.onnx", "node 'functional_1/activation/Relu;"),
])
def test_iree_error_names_the_models_operator(tmp_path, shared_models, model_file, where):
    """An error IREE reports deep in code generation carries the operation's location; npukit maps it back to the
    model's operator (TFLite: OPCODE:index:output; ONNX: the node's name)."""
    model = shared_models / model_file
    out = tmp_path / "out"
    flags = ["--iree-llvmcpu-stack-allocation-limit=64"]
    with pytest.raises(CompileError) as info:
        npukit.compile(model, out_dir=out, cpu_pipeline="stock", iree_flags=flags)
    assert str(info.value).startswith(f"{model}: {where}"), str(info.value)
    assert "exceeded stack allocation limit of 64 bytes" in str(info.value)
    _one_line_error(_cli(["compile", model, "-o", out, "--cpu-pipeline", "stock", f"--iree-flag={flags[0]}"],
                         tmp_path), where, model)
    _nothing_written(out)


def test_every_lowered_operator_has_a_signature():
    """The graph check refuses an operator whose inputs or options table do
    not fit it before its lowering reads them (a mutated file's options of
    another operator's type would otherwise reach the lowering)."""
    from npukit.frontends.tflite import importer  # noqa: F401 - registers the lowerings
    from npukit.frontends.tflite.lowering import LOWERINGS
    from npukit.frontends.tflite.operator_signatures import SIGNATURES

    assert sorted(set(LOWERINGS) - set(SIGNATURES)) == []
