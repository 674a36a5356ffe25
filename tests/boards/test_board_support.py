"""Board support: exit status, faults, the instruction counter, the board
list and the toolchain files."""

from __future__ import annotations

from pathlib import Path

import pytest

from npukit.cli.main import main as npukit_main
from npukit.deploy import qemu_runner
from npukit.targets.boards import get_board, list_boards
from npukit.deploy.toolchain_files import cross_presets, render
from support.firmware import REPO, build_program, run_expecting

APPS = Path(__file__).resolve().parent / "apps"
FAMILY_BOARDS = ["mps2-an386", "virt-rv32imf"]  # one board of each family


@pytest.mark.parametrize("board_name", FAMILY_BOARDS)
def test_main_return_value_is_qemu_exit_status(board_name, tmp_path):
    board = get_board(board_name)
    project = build_program(board, "static", [APPS / "exit_status.c"], tmp_path)
    run = run_expecting(board, project.elf, 42)
    assert "returning 42" in run.console


@pytest.mark.parametrize("board_name", FAMILY_BOARDS)
def test_fault_is_reported_and_ends_the_run(board_name, tmp_path):
    board = get_board(board_name)
    project = build_program(board, "static", [APPS / "fault.c"], tmp_path)
    run = run_expecting(board, project.elf, 120)  # NPUKIT_BOARD_EXIT_FAULT
    assert "about to fault" in run.console
    assert "npukit: fault" in run.console, run.report()
    assert "pc" in run.console.split("npukit: fault", 1)[1], run.report()


def test_board_list_names_every_board_with_its_memory(capsys):
    assert npukit_main(["deploy", "--list-boards"]) == 0
    out = capsys.readouterr().out
    for name, cpu in [("mps2-an386", "cortex-m4"), ("mps2-an500", "cortex-m7"), ("mps2-an385", "cortex-m3"),
                      ("virt-rv32imf", "rv32imf"), ("virt-rv32imac", "rv32imac")]:
        line = next(line for line in out.splitlines() if line.startswith(name))
        assert cpu in line
    assert "4 MiB" in out and "126 MiB" in out


def test_memory_map_comes_from_the_linker_scripts():
    an386 = get_board("mps2-an386")
    assert (an386.code_region.origin, an386.code_region.length) == (0, 4 << 20)
    assert (an386.data_region.origin, an386.data_region.length) == (0x20000000, 4 << 20)
    virt = get_board("virt-rv32imf")
    assert virt.shares_code_and_data and virt.data_region.origin == 0x80000000
    assert {b.cpu.name for b in list_boards()} == {p.name for p in cross_presets()}


@pytest.mark.parametrize("preset", cross_presets(), ids=lambda p: p.name)
def test_committed_toolchain_files_are_current(preset):
    committed = (REPO / "toolchains" / f"{preset.name}.cmake").read_text()
    assert committed == render(preset), "regenerate with `python -m npukit.deploy.toolchain_files`"


def test_instruction_counts_are_deterministic(tmp_path):
    from npukit.deploy.deploy_model import deploy

    result = deploy(REPO / "samples" / "digits" / "digits_int8.onnx", "virt-rv32imf", keep=tmp_path / "fw")
    board = get_board("virt-rv32imf")
    again = qemu_runner.run(board, tmp_path / "fw" / "build" / "digits_int8.elf")
    assert again.number("instructions") == result.instructions
    assert again.number("load_instructions") == result.load_instructions
    assert result.instructions > 0 and result.load_instructions > 0
