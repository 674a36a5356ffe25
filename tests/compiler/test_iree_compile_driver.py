"""npukit's ``iree-compile``: stock command lines are untouched, npukit's
additions (``mynpu``, ``--npukit-target``) go through the hosted, phased driver.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from npukit.driver.stock_tools import stock_tool

BIN = Path(sys.executable).parent
IREE_COMPILE = BIN / "iree-compile"  # IREE's console script in this environment
STOCK = stock_tool("iree-compile")  # IREE's own binary
HOST_CPU = ["--iree-llvmcpu-target-cpu=host", "--iree-llvmcpu-target-cpu-features=host"]


@pytest.fixture(scope="module")
def kws_mlir(tmp_path_factory, shared_models) -> Path:
    out = tmp_path_factory.mktemp("mlir") / "kws_int8.mlir"
    subprocess.run([str(BIN / "iree-import-onnx"), str(shared_models / "kws_int8.onnx"), "-o", str(out)], check=True)
    return out


def _run(cmd: list, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def _compile_both(tmp_path: Path, args: list[str], outputs: list[str]) -> None:
    """Runs the same command through npukit's entry and IREE's binary; compares outputs."""
    produced = {}
    for label, exe in (("npukit", IREE_COMPILE), ("stock", STOCK)):
        d = tmp_path / label
        d.mkdir()
        cmd = [exe, *[a.replace("{out}", str(d)) for a in args]]
        proc = _run(cmd)
        assert proc.returncode == 0, proc.stderr
        produced[label] = [(d / name).read_bytes() for name in outputs]
    for name, a, b in zip(outputs, produced["npukit"], produced["stock"]):
        assert a == b, f"{name} differs between npukit's iree-compile and IREE's"


def test_iree_compile_reaches_npukit_driver():
    assert str(Path(__file__).resolve().parents[2] / "compiler_plugin") in os.environ.get("IREE_TOOL_PATH", "") or \
        "npukit" in os.environ.get("IREE_TOOL_PATH", "")
    proc = _run([IREE_COMPILE, "--help"])
    assert proc.returncode == 0
    assert "npukit additions" in proc.stdout and "--iree-hal-target-backends=mynpu" in proc.stdout


@pytest.mark.parametrize(
    "args,outputs",
    [
        (["--iree-hal-target-backends=llvm-cpu", *HOST_CPU, "{input}", "-o", "{out}/m.vmfb"], ["m.vmfb"]),
        (
            [
                "--iree-hal-target-backends=llvm-cpu",
                "--iree-llvmcpu-target-triple=thumbv7em-none-eabihf",
                "--iree-llvmcpu-target-cpu-features=+thumb-mode,+dsp,+vfp4d16sp",
                "--iree-llvmcpu-target-float-abi=hard",
                "--iree-llvmcpu-link-embedded=false",
                "--iree-llvmcpu-link-static",
                "--iree-llvmcpu-static-library-output-path={out}/lib.o",
                "--output-format=vm-c",
                "--iree-execution-model=inline-dynamic",
                "--iree-torch-emit-async-entry-points=false",
                "{input}",
                "-o",
                "{out}/module.c",
            ],
            ["module.c", "lib.o", "lib.h"],
        ),
        (["--iree-hal-target-backends=llvm-cpu", "--compile-to=flow", "{input}", "-o", "{out}/flow.mlir"], ["flow.mlir"]),
    ],
    ids=["host-vmfb", "cortex-m4-static-vm-c", "compile-to-flow"],
)
def test_stock_command_lines_are_byte_identical(tmp_path, kws_mlir, args, outputs):
    _compile_both(tmp_path, [a.replace("{input}", str(kws_mlir)) for a in args], outputs)


def test_mynpu_vmfb_runs_on_the_stock_runtime_with_the_cpu_result(tmp_path, kws_mlir, shared_models):
    """The mynpu .vmfb carries a mynpu-v1 and a CPU variant per executable: the
    stock runtime, which does not know mynpu-v1, runs the CPU one. Its
    requantizations are integer, so the result is TFLite's reference kernels'
    bit for bit, where the stock CPU compile's float requantization is not.
    The report says what the NPU takes and why the rest stays on the CPU."""
    import json

    import iree.runtime as ireert
    import numpy as np
    from support.oracles import TFLiteReference

    ours, stock, report = tmp_path / "mynpu.vmfb", tmp_path / "stock.vmfb", tmp_path / "report.json"
    p1 = _run([IREE_COMPILE, "--iree-hal-target-backends=mynpu", f"--mynpu-report={report}",
               "--mynpu-show-cpu-operations", kws_mlir, "-o", ours])
    assert p1.returncode == 0, p1.stderr
    assert "mynpu: on the CPU: " in p1.stderr and "softmax" in p1.stderr
    p2 = _run([STOCK, "--iree-hal-target-backends=llvm-cpu", *HOST_CPU, kws_mlir, "-o", stock])
    assert p2.returncode == 0, p2.stderr
    assert b"mynpu-v1" in ours.read_bytes() and b"mynpu-v1" not in stock.read_bytes()
    # The mynpu backend gives a CPU preset (the host), so the CPU dispatches take the tuned pipeline.
    assert b"npukit_s8_layer" in ours.read_bytes()
    tflite = TFLiteReference(shared_models / "kws_int8.tflite", kernels="reference")
    modules = [ireert.load_vm_flatbuffer_file(str(path), driver="local-sync") for path in (ours, stock)]
    differs = 0
    for seed in range(6):
        x = np.random.default_rng(seed).integers(-128, 128, (1, 49, 10, 1), dtype=np.int8)
        ours_out, stock_out = (np.asarray(m["tf2onnx"](x)) for m in modules)
        np.testing.assert_array_equal(ours_out, tflite(x))
        differs += not np.array_equal(stock_out, ours_out)
    assert differs  # the stock compile's float requantization is not TFLite's
    summary = json.loads(report.read_text())["summary"]
    assert summary["npu_mac_share"] >= 0.95 and summary["total_cycles"] > 0


def test_tuned_cpu_pipeline_flag(tmp_path, kws_mlir, shared_models):
    """--npukit-cpu-pipeline=tuned: the int8 layers call npukit's kernels
    (linked into the .vmfb's executables), which give TFLite's reference
    kernels' results on the stock runtime; without a preset to build the
    kernels for, the driver says what to add. With --npukit-target it is the
    default."""
    import iree.runtime as ireert
    import numpy as np
    from support.oracles import TFLiteReference

    out = tmp_path / "tuned.vmfb"
    proc = _run([IREE_COMPILE, "--iree-hal-target-backends=llvm-cpu", "--npukit-cpu-pipeline=tuned", kws_mlir,
                 "-o", out])
    assert proc.returncode == 0, proc.stderr
    assert b"npukit_s8_layer" in out.read_bytes()
    module = ireert.load_vm_flatbuffer_file(str(out), driver="local-sync")
    tflite = TFLiteReference(shared_models / "kws_int8.tflite", kernels="reference")
    for seed in range(4):
        x = np.random.default_rng(seed).integers(-128, 128, (1, 49, 10, 1), dtype=np.int8)
        np.testing.assert_array_equal(np.asarray(module["tf2onnx"](x)), tflite(x))
    proc = _run([IREE_COMPILE, "--iree-hal-target-backends=llvm-cpu", "--iree-llvmcpu-target-triple=armv7m-none-eabi",
                 "--npukit-cpu-pipeline=tuned", kws_mlir, "-o", tmp_path / "x.vmfb"])
    assert proc.returncode == 1 and "add --npukit-target=PRESET" in proc.stderr
    assert not (tmp_path / "x.vmfb").exists()
    # With a preset, tuned is the default; stock is asked for by name.
    for pipeline, kernels in (([], True), (["--npukit-cpu-pipeline=stock"], False)):
        out = tmp_path / f"preset{len(pipeline)}.vmfb"
        proc = _run([IREE_COMPILE, "--iree-hal-target-backends=llvm-cpu", "--npukit-target=host", *pipeline,
                     kws_mlir, "-o", out])
        assert proc.returncode == 0, proc.stderr
        assert (b"npukit_s8_layer" in out.read_bytes()) == kernels


def test_mynpu_flags_are_checked(tmp_path, kws_mlir):
    proc = _run([IREE_COMPILE, "--iree-hal-target-backends=mynpu", "--mynpu-pes=0", kws_mlir, "-o",
                 tmp_path / "x.vmfb"])
    assert proc.returncode == 1 and "--mynpu-pes must be an integer in 1..4096" in proc.stderr
    proc = _run([IREE_COMPILE, "--iree-hal-target-backends=llvm-cpu", "--mynpu-pes=8", kws_mlir, "-o",
                 tmp_path / "x.vmfb"])
    assert proc.returncode == 1 and "need the mynpu target" in proc.stderr
    assert not (tmp_path / "x.vmfb").exists()


def test_npukit_target_applies_preset(tmp_path, kws_mlir):
    out = tmp_path / "m.c"
    proc = _run([
        IREE_COMPILE, "--iree-hal-target-backends=mynpu", "--npukit-target=rv32imf", "--output-format=vm-c",
        "--iree-execution-model=inline-dynamic", kws_mlir, "-o", out,
    ])
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    # vm-c spells string constants as byte arrays.
    fmt = ", ".join(str(b) for b in b"embedded-elf-riscv_32")
    assert fmt in text and '"hal_loader.executable.load"' in text


def test_hosted_driver_compile_to_phase_output(tmp_path, kws_mlir):
    out = tmp_path / "stream.mlir"
    proc = _run([IREE_COMPILE, "--iree-hal-target-backends=mynpu", "--compile-to=stream", kws_mlir, "-o", out])
    assert proc.returncode == 0, proc.stderr
    assert "stream.executable" in out.read_text()


@pytest.mark.parametrize(
    "args,message",
    [
        (["--npukit-target=cortex-m9"], "unknown target 'cortex-m9'"),
        (["--npukit-colour=blue"], "unknown npukit flag"),
        (["--bogus-flag"], "Unknown command line argument '--bogus-flag'"),
    ],
)
def test_hosted_driver_rejects_bad_flags(tmp_path, kws_mlir, args, message):
    out = tmp_path / "x.vmfb"
    proc = _run([IREE_COMPILE, "--iree-hal-target-backends=mynpu", *args, kws_mlir, "-o", out])
    assert proc.returncode != 0
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_phase_split_does_not_change_output(tmp_path, kws_mlir):
    """Exporting to Python and re-importing at every boundary is byte-identical."""
    script = f"""
import sys
from iree.compiler.api import Output, Session, Source
from npukit.driver import iree_capi
from npukit.driver.phases import PHASES, PhasedPipeline
iree_capi.ensure_global_command_line()
def compile(hooks, path):
    s = Session()
    s.set_flags("--iree-hal-target-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host")
    inv = PhasedPipeline(s, hooks=hooks).run(Source.open_file(s, {str(kws_mlir)!r}))
    with Output.open_file(path) as o:
        inv.output_vm_bytecode(o)
        o.keep()
noop = lambda module: None
compile({{}}, {str(tmp_path / 'whole.vmfb')!r})
compile({{p: [noop] for p in PHASES[:-1]}}, {str(tmp_path / 'split.vmfb')!r})
"""
    proc = _run([sys.executable, "-c", script])
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "whole.vmfb").read_bytes() == (tmp_path / "split.vmfb").read_bytes()


def test_mynpu_static_library_from_iree_compile(tmp_path, kws_mlir):
    """--iree-hal-target-backends=mynpu with --iree-llvmcpu-link-static: with
    inline-dynamic the vm-c module loads a mynpu-v1 executable whose CPU code
    is the static library; with the async model it is refused by name, not
    silently built for the CPU alone."""
    static = ["--iree-hal-target-backends=mynpu", "--iree-llvmcpu-link-embedded=false", "--iree-llvmcpu-link-static",
              f"--iree-llvmcpu-static-library-output-path={tmp_path}/lib.o", "--output-format=vm-c"]
    inline = ["--iree-execution-model=inline-dynamic", "--iree-torch-emit-async-entry-points=false"]
    proc = _run([IREE_COMPILE, *static, *inline, kws_mlir, "-o", tmp_path / "module.c"])
    assert proc.returncode == 0, proc.stderr
    module = (tmp_path / "module.c").read_text()
    # vm-c writes strings and buffers as byte arrays: the mynpu-v1 executable ("MNPU") is there, and no
    # load or query asks for format "static" (the library is reached through the executable).
    assert "{77, 78, 80, 85, " in module and "{115, 116, 97, 116, 105, 99}" not in module
    assert "_library_query" in (tmp_path / "lib.h").read_text() and (tmp_path / "lib.o").stat().st_size > 0
    refused = _run([IREE_COMPILE, *static, kws_mlir, "-o", tmp_path / "async.c"])
    assert refused.returncode != 0 and "needs --iree-execution-model=inline-dynamic" in refused.stderr
