"""The static-library and embedded-ELF samples, built and run on every board."""

from __future__ import annotations

import pytest

from npukit.targets.boards import list_boards
from support.firmware import build_sample, run_expecting

BOARDS = [b.name for b in list_boards()]


@pytest.mark.parametrize("mode", ["static", "embedded"])
@pytest.mark.parametrize("board_name", BOARDS)
def test_sample_passes_on_board(board_name, mode, tmp_path):
    from npukit.targets.boards import get_board

    board = get_board(board_name)
    project = build_sample(board, mode, tmp_path)
    run = run_expecting(board, project.elf, 0)
    assert f"on {board_name}: passed" in run.console, run.report()
