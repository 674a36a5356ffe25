"""Board builds leave error messages out by default (a status keeps its
code); NPUKIT_STATUS_MESSAGES=1 brings them back; the host keeps them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from npukit.runtime.sources import include_dirs, runtime_source_root

SOURCE = """\
#include "iree/base/api.h"
iree_status_t check_width(int width) {
  if (width > 4) return iree_make_status(IREE_STATUS_OUT_OF_RANGE, "width %d is wider than the npukit lane", width);
  return iree_ok_status();
}
"""
MESSAGE = b"wider than the npukit lane"
M4 = ["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-Os", "-DNPUKIT_BARE_METAL=1",
      "-DNPUKIT_NO_SYSTEM_ALLOCATOR=1"]


def _object(tmp_path: Path, compiler: list[str], defines: list[str]) -> bytes:
    if not shutil.which(compiler[0]):
        pytest.fail(f"{compiler[0]} is needed (scripts/setup.sh installs it)")
    src = tmp_path / "check.c"
    src.write_text(SOURCE)
    obj = tmp_path / f"check{len(defines)}.o"
    includes = [f"-I{d}" for d in include_dirs(runtime_source_root())]
    subprocess.run([*compiler, *defines, *includes, "-c", str(src), "-o", str(obj)], check=True)
    return obj.read_bytes()


def test_board_build_has_no_messages_by_default(tmp_path):
    assert MESSAGE not in _object(tmp_path, M4, [])


def test_board_build_with_messages(tmp_path):
    assert MESSAGE in _object(tmp_path, M4, ["-DNPUKIT_STATUS_MESSAGES=1"])


def test_host_build_has_messages(tmp_path):
    assert MESSAGE in _object(tmp_path, ["gcc", "-O1"], [])
    assert MESSAGE not in _object(tmp_path, ["gcc", "-O1"], ["-DNPUKIT_STATUS_MESSAGES=0"])
