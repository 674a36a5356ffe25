"""A firmware carries its exports' short names only (passes.short_export_names):
none of IREE's long names is in what the board's flash holds, and the
per-dispatch profile still reports every dispatch under IREE's name, for CPU
and NPU builds on a Cortex-M4 and an RV32 board."""

from __future__ import annotations

import pytest
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from npukit.deploy.deploy_model import deploy
from npukit.passes.short_export_names import is_short_name

CASES = [("zoo/hello_world_int8.tflite", "mps2-an386", None), ("zoo/hello_world_int8.tflite", "virt-rv32imf", None),
         ("zoo/hello_world_int8.tflite", "mps2-an386", "mynpu"), ("kws_int8.tflite", "virt-rv32imf", "mynpu")]


def _loaded_bytes(elf_path) -> bytes:
    """Every allocated section's contents: what the firmware puts in flash (and copies to RAM)."""
    with elf_path.open("rb") as f:
        elf = ELFFile(f)
        return b"".join(s.data() for s in elf.iter_sections()
                        if s["sh_flags"] & SH_FLAGS.SHF_ALLOC and s["sh_type"] != "SHT_NOBITS")


@pytest.mark.slow
@pytest.mark.parametrize("model,board,npu", CASES)
def test_firmware_holds_short_names_and_the_profile_long_ones(model, board, npu, shared_models, tmp_path):
    result = deploy(shared_models / model, board, npu=npu, seed=3, profile_dispatches=True, keep=tmp_path / "fw")
    manifest = result.artifact.manifest
    context = f"{model} on {board} ({npu or 'CPU'}); console:\n{result.console}"
    assert result.outputs_match_host, context
    long_names = [d["name"] for d in manifest["dispatches"]]
    names = manifest["export_names"]
    assert all(is_short_name(short) for short in names) and sorted(names.values()) == sorted(long_names), names
    (elf,) = (tmp_path / "fw" / "build").glob("*.elf")
    flash = _loaded_bytes(elf)
    assert [n for n in long_names if n.encode() in flash] == [], context
    # The module finds each export by its short name (in the library's table, and by hash in a mynpu executable).
    assert all(short.encode() + b"\0" in flash for short in names), context
    # The firmware printed the short names (the NPU's dispatches too); the deploy reports IREE's.
    assert set(result.dispatch_instructions) == set(long_names), context
    assert all(count > 0 for count in result.dispatch_instructions.values()), context
    # The stack bound's deepest path names the dispatch functions as IREE does.
    path = [function for function, _ in result.stack.whole.path]
    assert path and not [f for f in path if is_short_name(f)], path
