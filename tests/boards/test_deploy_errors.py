"""A bad deploy ends with one clear line: what is wrong and what to do."""

from __future__ import annotations

import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from npukit.cli.main import main as npukit_main
from support.firmware import REPO

DIGITS = str(REPO / "samples" / "digits" / "digits_int8.onnx")


def deploy_error(capsys, *args: str) -> str:
    assert npukit_main(["deploy", *args, "-q"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("npukit: error: "), err
    return err


def test_unknown_board(capsys):
    err = deploy_error(capsys, DIGITS, "--board", "stm32f4-disco")
    assert "unknown board 'stm32f4-disco'" in err and "mps2-an386" in err and "--list-boards" in err


def test_missing_board_argument(capsys):
    assert "--board" in deploy_error(capsys, DIGITS)


def test_model_too_large_for_flash_says_by_how_much(tmp_path, capsys):
    weights = np.random.default_rng(0).standard_normal((64, 18000)).astype(np.float32)  # 4.4 MiB
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "wide",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 18000])],
        [numpy_helper.from_array(weights, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "wide.onnx"
    onnx.save(model, path)
    err = deploy_error(capsys, str(path), "--board", "mps2-an386")
    assert "does not fit mps2-an386" in err and "4096 KiB of flash by" in err
    over = int(err.split("flash by ")[1].split()[0])
    # The weights alone exceed the 4 MiB by this much; code and runtime add to it.
    assert over > weights.nbytes - (4 << 20)


def test_static_data_and_stack_too_large_for_ram(capsys):
    err = deploy_error(capsys, DIGITS, "--board", "mps2-an386", "--stack-size", str(5 << 20))
    assert "4096 KiB of RAM by" in err


def test_arena_exhausted_at_run_time_says_how_much_more(capsys):
    err = deploy_error(capsys, DIGITS, "--board", "mps2-an386", "--arena-limit", "2000")
    assert "does not fit mps2-an386's RAM at run time" in err
    assert "needs at least" in err and "arena_capacity 2000" in err  # the console follows


def _path_with(tmp_path, tools: list[str]) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        os.symlink(shutil.which(tool), bin_dir / tool)
    return str(bin_dir)


def test_missing_toolchain_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", _path_with(tmp_path, ["cmake", "ninja", "qemu-system-arm"]))
    err = deploy_error(capsys, DIGITS, "--board", "mps2-an386")
    assert "arm-none-eabi-gcc is needed" in err
    assert "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi" in err


def test_missing_qemu_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", _path_with(tmp_path, ["cmake", "ninja", "riscv64-unknown-elf-gcc"]))
    err = deploy_error(capsys, DIGITS, "--board", "virt-rv32imf")
    assert "qemu-system-riscv32 is needed" in err and "apt-get install qemu-system-misc" in err


def test_keep_directory_must_be_new(tmp_path, capsys):
    (tmp_path / "fw").mkdir()
    (tmp_path / "fw" / "main.c").write_text("")
    err = deploy_error(capsys, DIGITS, "--board", "mps2-an386", "--keep", str(tmp_path / "fw"))
    assert "not empty" in err


def test_input_of_the_wrong_shape(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros((1, 1, 4, 4), np.float32))
    err = deploy_error(capsys, DIGITS, "--board", "mps2-an386", "--input", str(tmp_path / "x.npy"))
    assert "input 0" in err and "shape 1x1x4x4" in err


def test_missing_model_file(capsys):
    assert "no such model file" in deploy_error(capsys, "nowhere.onnx", "--board", "mps2-an386")


def test_npu_static_mode_refuses_the_async_model(capsys):
    """--npu mynpu is static by default; its static library needs inline-dynamic (the one variant)."""
    err = deploy_error(capsys, DIGITS, "--board", "mps2-an386", "--npu", "mynpu", "--execution-model", "async")
    assert "needs the inline-dynamic execution model" in err and "--mode embedded" in err


def test_mynpu_options_need_an_npu(capsys):
    err = deploy_error(capsys, DIGITS, "--board", "mps2-an386", "--mynpu-pes", "32")
    assert "without --npu mynpu" in err


def test_bad_mynpu_option(capsys):
    err = deploy_error(capsys, DIGITS, "--board", "mps2-an386", "--npu", "mynpu", "--mynpu-pes", "0")
    assert "--mynpu-pes must be an integer in 1..4096" in err


def test_samples_need_random_inputs(tmp_path, capsys):
    assert "at least 1, not 0" in deploy_error(capsys, DIGITS, "--board", "mps2-an386", "--samples", "0")
    np.save(tmp_path / "x.npy", np.zeros((1, 1, 8, 8), np.float32))
    err = deploy_error(capsys, DIGITS, "--board", "mps2-an386", "--samples", "3", "--input", str(tmp_path / "x.npy"))
    assert "give either --input files or --samples" in err
