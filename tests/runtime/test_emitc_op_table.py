"""IREE 3.13's EmitC table of VM operations, and npukit's runtime against it.

emitc_vm/emitc_ops.tsv lists, for every VM operation IREE 3.13's vm-c
emitter converts into calls of ops.h helpers, the helpers its output calls
(read from the compiler's own conversion; tests/runtime/test_vm_ops.py checks
the table against it). Here: every operation is one of the installed VM
dialect's, the helpers are exactly those npukit's ops.h defines, and a C file
calling every helper compiles for the host and, 32-bit, for Cortex-M4 and
RV32IMF, without a warning.
"""

from __future__ import annotations

import subprocess

import pytest

from npukit.runtime.sources import include_dirs, runtime_source_root
from support.vm_ops import emitc_table as read_table
from support.vm_ops import vm_op_names
from support.vm_programs import runtime_helpers


def test_the_table_names_vm_operations():
    table = read_table()
    assert len(table) >= 180
    assert not set(table) - set(vm_op_names())
    # The operations issue 30 found missing on npukit's runtime are there.
    assert table["vm.div.i64.s"] == ["vm_div_i64s"] and table["vm.max.i64.s"] == ["vm_max_i64s"]


def test_runtime_defines_exactly_the_helpers_of_the_table():
    helpers = set().union(*read_table().values())
    defined = runtime_helpers()
    assert not helpers - defined, f"helpers npukit's runtime lacks: {sorted(helpers - defined)}"
    assert not defined - helpers, f"helpers no VM operation converts to: {sorted(defined - helpers)}"
    assert len(helpers) >= 140


COMPILERS = {
    "host": ["gcc"],
    "cortex-m4": ["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"],
    "rv32imf": ["riscv64-unknown-elf-gcc", "-march=rv32imf_zicsr", "-mabi=ilp32f", "--specs=picolibc.specs"],
}


@pytest.mark.parametrize("target", list(COMPILERS))
def test_every_helper_compiles_when_called(target, tmp_path):
    # One call of each helper with arguments of its declared types (zero values).
    lines = ['#include "iree/vm/ops.h"', "void* use_all(void);", "void* use_all(void) {",
             "  static void* const used[] = {"]
    lines += [f"      (void*)&{h}," for h in sorted(set().union(*read_table().values()))]
    lines += ["  };", "  return (void*)used;", "}"]
    source = tmp_path / "use_all.c"
    source.write_text("\n".join(lines) + "\n")
    flags = ["-std=gnu11", "-O1", "-Wall", "-Wextra", "-Werror", "-Wno-pedantic", "-c",
             *[f"-I{d}" for d in include_dirs(runtime_source_root())]]
    proc = subprocess.run([*COMPILERS[target], *flags, str(source), "-o", str(tmp_path / "use_all.o")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
