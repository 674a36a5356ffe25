"""Every VM operation IREE 3.13's vm-c emitter converts, on npukit's runtime.

The operations come from the installed compiler (its VM dialect, through its
Python bindings), not from a list written here. Each scalar operation gets a
function of its own in a generated program; operations on globals, buffers,
lists, refs and control flow are in tests/runtime/programs/vm_state_ops.mlir.
IREE's compiler says which ones its vm-c emitter converts (every function
compiled on its own, so that each refusal is reported). Then:

- the generated C calls exactly the vm_* helpers npukit's ops.h defines (no
  helper missing, none unused), and links with the runtime;
- every operation's results on npukit's runtime (built with AddressSanitizer
  and UBSan) equal, bit for bit, those of IREE's runtime on the bytecode of
  the same program, over edge-case arguments (NaN results compare as NaN);
- integer division by zero and INT_MIN / -1, which IREE's VM leaves
  undefined and its runtime traps on, give npukit's documented values.
"""

from __future__ import annotations

import math
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from support.vm_op_vectors import I32_MIN, I64_MIN, arguments, traps_in_iree
from support.vm_ops import (ScalarOp, emitc_helper_calls, emitc_table, scalar_op, scalar_ops, scalar_program,
                            split_program, vm_op_names)
from support.vm_programs import (Call, NpukitProgram, StockProgram, compile_vm, emitc_refused, helper_calls,
                                 runtime_helpers)

STATE_PROGRAM = Path(__file__).parent / "programs" / "vm_state_ops.mlir"

# Operations no program here writes: the compiler makes them itself, or only
# the execution model's HAL calls reach them.
NOT_WRITTEN = {
    "vm.module_terminator": "ends every module",
    "vm.assign.ref": "made by the compiler when it copies refs",
    "vm.discard.refs": "made by the compiler where refs die",
    "vm.call.variadic": "imports with variadic arguments: the HAL calls of every model "
                        "(tests/runtime/test_models_on_npukit_runtime.py)",
    "vm.call.yieldable": "calls into yielding imports: the async execution model's fence waits, which npukit's "
                         "driver makes plain calls (docs/runtime.md)",
    "vm.call.variadic.yieldable": "as vm.call.yieldable",
}

# What IREE 3.13's vm-c emitter has no conversion for (among what the
# programs write). Its f64 support ends at buffers.
F64_SCALAR_REFUSED = {op.name for op in scalar_ops() if "f64" in op.name}
STATE_REFUSED = {"vm.global.f64", "vm.list.get.f32", "vm.list.set.f32", "vm.list.get.f64", "vm.list.set.f64",
                 "vm.cast.ref.any", "vm.cast.any.ref", "vm.switch.i32", "vm.switch.i64", "vm.switch.f32", "vm.switch.f64",
                 "vm.switch.ref", "vm.trace", "vm.print", "vm.break", "vm.cond_break", "vm.yield"}
# Operations on f64 globals cannot reach vm-c, whose emitter refuses the globals themselves.
F64_GLOBAL_OPS = {"vm.global.load.f64", "vm.global.store.f64", "vm.global.load.indirect.f64",
                  "vm.global.store.indirect.f64"}


def _written(name: str, text: str) -> bool:
    return re.search(r"(?<![\w.])" + re.escape(name) + r"(?![\w.])", text) is not None


class Programs:
    """Both programs, compiled once: what vm-c accepts, on both runtimes."""

    def __init__(self, work: Path):
        self.scalar_ops = scalar_ops()
        refused = emitc_refused([scalar_program([op]) for op in self.scalar_ops], work / "scalar-split")
        self.scalar_refused = {self.scalar_ops[i].name for i in refused}
        self.scalar_accepted = [op for op in self.scalar_ops if op.name not in self.scalar_refused]

        self.state = split_program(STATE_PROGRAM.read_text())
        names = list(self.state.exports)
        refused = emitc_refused([self.state.module_text([n]) for n in names], work / "state-split")
        self.state_refused = set(refused.values())
        self.state_refused_functions = {names[i] for i in refused}
        self.state_accepted = [n for n in names if n not in self.state_refused_functions]

        self.sources = {
            "scalar_ops": scalar_program(self.scalar_accepted, module="scalar_ops"),
            "state_ops": self.state.module_text(self.state_accepted),
        }
        self.vm_c: dict[str, str] = {}
        self.npukit: dict[str, NpukitProgram] = {}
        self.stock: dict[str, StockProgram] = {}
        for module, text in self.sources.items():
            source = work / f"{module}.mlir"
            source.write_text(text)
            compile_vm(source, work / f"{module}.c", "vm-c")
            compile_vm(source, work / f"{module}.vmfb")
            self.vm_c[module] = (work / f"{module}.c").read_text()
            self.npukit[module] = NpukitProgram(self.vm_c[module], module, work / f"{module}-npukit")
            self.stock[module] = StockProgram(work / f"{module}.vmfb")


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> Programs:
    return Programs(tmp_path_factory.mktemp("vm-ops"))


def test_every_vm_op_is_written_or_accounted_for(programs):
    state_text = STATE_PROGRAM.read_text()
    missing = [name for name in vm_op_names()
               if scalar_op(name) is None and name not in NOT_WRITTEN and not _written(name, state_text)]
    assert not missing, f"VM operations no test program uses: {missing}"


def test_emitc_refuses_f64_arithmetic_and_a_few_state_ops(programs):
    assert programs.scalar_refused == F64_SCALAR_REFUSED
    assert programs.state_refused == STATE_REFUSED
    # Every other operation the state program writes reaches vm-c in a function it accepts.
    written = STATE_PROGRAM.read_text()
    undecided = [name for name in vm_op_names()
                 if scalar_op(name) is None and name not in STATE_REFUSED | F64_GLOBAL_OPS and _written(name, written)
                 and not _written(name, programs.sources["state_ops"])]
    assert not undecided, f"operations only in functions vm-c refused for another reason: {undecided}"


def test_generated_code_calls_exactly_the_runtime_helpers(programs):
    called = set().union(*(helper_calls(c) for c in programs.vm_c.values()))
    defined = runtime_helpers()
    assert not called - defined, f"vm-c calls helpers npukit's runtime lacks: {sorted(called - defined)}"
    assert not defined - called, f"ops.h defines helpers IREE's vm-c never calls: {sorted(defined - called)}"
    assert len(called) >= 140


def test_emitc_table_is_the_compilers(programs, tmp_path):
    """emitc_vm/emitc_ops.tsv is what IREE's own EmitC conversion does with
    every operation the programs write (tests/runtime/test_emitc_op_table.py
    checks the runtime against the table)."""
    table: dict[str, set[str]] = {}
    for module, text in programs.sources.items():
        for op, helpers in emitc_helper_calls(text, tmp_path / module).items():
            table.setdefault(op, set()).update(helpers)
    assert {op: sorted(h) for op, h in table.items()} == emitc_table()


def _same(got: tuple, want: tuple, results: str) -> bool:
    if got[0] != want[0]:
        return False
    for g, w, letter in zip(got[1:], want[1:], results):
        if letter == "f" and math.isnan(struct.unpack("<f", struct.pack("<I", g))[0]):
            if not math.isnan(struct.unpack("<f", struct.pack("<I", w))[0]):
                return False
        elif g != w:
            return False
    return True


def _compare(programs: Programs, module: str, calls: list[Call]) -> None:
    got = programs.npukit[module].call(calls)
    want = programs.stock[module].call(calls)
    wrong = [(c.function, [hex(v) for v in c.values], g, w)
             for c, g, w in zip(calls, got, want) if not _same(g, w, c.results)]
    assert not wrong, f"{len(wrong)} of {len(calls)} calls differ (function, args, npukit, IREE): {wrong[:8]}"


ACCEPTED_SCALAR_OPS = [op for op in scalar_ops() if op.name not in F64_SCALAR_REFUSED]


@pytest.mark.parametrize("op", ACCEPTED_SCALAR_OPS, ids=lambda op: op.name)
def test_scalar_op_matches_iree(op: ScalarOp, programs):
    assert op in programs.scalar_accepted
    args, results = op.calling_convention
    calls = [Call(op.function, args, results, values) for values in arguments(op) if not traps_in_iree(op, values)]
    _compare(programs, "scalar_ops", calls)


def _bits32(v: int) -> int:
    return v & 0xFFFFFFFF


def _bits64(v: int) -> int:
    return v & ((1 << 64) - 1)


# (function, calling convention, arguments, npukit's result) where IREE traps.
DEFINED_WHERE_IREE_TRAPS = [
    ("div_i32_s", "ii", (7, 0), 0),
    ("div_i32_s", "ii", (I32_MIN, -1), I32_MIN),
    ("div_i32_u", "ii", (7, 0), 0),
    ("rem_i32_s", "ii", (-7, 0), -7),
    ("rem_i32_s", "ii", (I32_MIN, -1), 0),
    ("rem_i32_u", "ii", (7, 0), 7),
    ("div_i64_s", "II", (7, 0), 0),
    ("div_i64_s", "II", (I64_MIN, -1), I64_MIN),
    ("div_i64_u", "II", (-1, 0), 0),
    ("rem_i64_s", "II", (-7, 0), -7),
    ("rem_i64_s", "II", (I64_MIN, -1), 0),
    ("rem_i64_u", "II", (7, 0), 7),
]


def test_division_where_iree_traps_is_defined(programs):
    calls = [Call(f, cc, cc[0], tuple(_bits32(v) if cc == "ii" else _bits64(v) for v in values))
             for f, cc, values, _ in DEFINED_WHERE_IREE_TRAPS]
    got = programs.npukit["scalar_ops"].call(calls)
    want = [("ok", _bits32(r) if cc == "ii" else _bits64(r)) for _, cc, _, r in DEFINED_WHERE_IREE_TRAPS]
    assert got == want


_TRAP_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from support.vm_programs import Call, StockProgram
program = StockProgram(Path({vmfb!r}))
print(program.call([Call({function!r}, {cc!r}, {cc!r}[0], {values!r})]))
"""


@pytest.mark.parametrize("function,cc,values", [("div_i32_s", "ii", (7, 0)), ("rem_i64_s", "II", (I64_MIN, -1))])
def test_iree_runtime_traps_on_those_divisions(function, cc, values, programs, tmp_path):
    """What 'undefined' means in IREE's runtime: the process dies of SIGFPE."""
    vmfb = tmp_path / "scalar_ops.vmfb"
    source = tmp_path / "scalar_ops.mlir"
    source.write_text(programs.sources["scalar_ops"])
    compile_vm(source, vmfb)
    bits = tuple(_bits32(v) if cc == "ii" else _bits64(v) for v in values)
    script = _TRAP_SCRIPT.format(tests=str(Path(__file__).parents[1]), vmfb=str(vmfb), function=function, cc=cc,
                                 values=bits)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == -8, (proc.returncode, proc.stdout, proc.stderr[-2000:])


# Calls of the state program: (function, args, results, argument values).
_F = struct.Struct("<f")


def _f(x: float) -> int:
    return struct.unpack("<I", _F.pack(x))[0]


def _d(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


STATE_CALLS = (
    [("initialized", "", "i", ())]
    + [("global_i32", "i", "i", (_bits32(v),)) for v in (5, -1, 0x7FFFFFFF, 3)]
    + [("global_i64", "I", "I", (_bits64(v),)) for v in (5, -1, I64_MIN, 3)]
    + [("global_f32", "f", "f", (_f(v),)) for v in (0.25, -0.0, math.inf, 1.5)]
    + [("global_indirect_i32", "i", "i", (_bits32(v),)) for v in (9, -3, 0)]
    + [("global_indirect_i64", "I", "I", (_bits64(v),)) for v in (9, I64_MIN, 0)]
    + [("global_indirect_f32", "f", "f", (_f(v),)) for v in (9.5, -0.125, 2.0)]
    + [("global_ref", "Ii", "I", (_bits64(n), i)) for n, i in ((4, 0), (7, 1), (0, 0), (12, 1), (3, 0))]
    + [(f"buffer_{t}", "iI", "i", (_bits32(v), _bits64(i)))
       for t in ("i8", "i16", "i32") for v in (0, 1, -1, 127, 255, 32767, -32768, 0x12345678)
       for i in (0, 1, 3, 7, 15, 16)]
    + [("buffer_i64", "II", "I", (_bits64(v), _bits64(i))) for v in (0, -1, I64_MIN, 0x123456789)
       for i in (0, 1, 2, 3)]
    + [("buffer_f32", "fI", "f", (_f(v), _bits64(i))) for v in (0.0, -1.5, math.inf, 3.0e38) for i in (0, 3, 4)]
    + [("buffer_f64", "FFI", "F", (_d(v), _d(w), _bits64(i))) for v, w in ((1.0, 2.0), (-0.5, 1e300))
       for i in (0, 1, 2)]
    + [("buffer_copy", "III", "iIi", (_bits64(a), _bits64(b), _bits64(n)))
       for a, b, n in ((0, 0, 16), (2, 5, 4), (15, 15, 1), (0, 8, 8), (3, 3, 0), (10, 0, 7), (0, 9, 8), (16, 0, 1))]
    + [("buffer_store_rodata", "i", "i", (5,))]
    + [("buffer_hash", "II", "I", (_bits64(a), _bits64(n)))
       for a, n in ((0, 0), (0, 1), (0, 7), (0, 8), (0, 9), (0, 16), (3, 5), (8, 8), (16, 0), (10, 7))]
    + [("rodata_table", "i", "i", (i,)) for i in (0, 1, 2)]
    + [("list_i32", "iii", "ii", (n, _bits32(i), _bits32(v))) for n, i, v in
       ((4, 0, 10), (4, 3, -1), (1, 0, 7), (4, 4, 1), (0, 0, 1), (2, -1, 5))]
    + [("list_i64", "iiI", "I", (n, i, _bits64(v))) for n, i, v in ((3, 2, I64_MIN), (3, 3, 1), (1, 0, -5))]
    + [("list_ref", "Ii", "I", (_bits64(n), i)) for n, i in ((5, 0), (9, 1), (0, 1), (4, 2))]
    + [("ref_compare", "ii", "iiii", (a, b)) for a in (0, 1) for b in (0, 1)]
    + [("constants", "", "fFFI", ())]
    + [("list_any_cast", "I", "I", (n,)) for n in (0, 6)]
    + [("branches", "ii", "i", (k, _bits32(n))) for k in (0, 1, 2, -1, 7) for n in (0, 1, 10, -4)]
    + [("fail_with", "i", "i", (c,)) for c in (0, 3, 13)]
    + [("fail_always", "i", "i", (c,)) for c in (5, 13)]
    + [("checks", "ii", "i", (a, b)) for a, b in ((0, 0), (1, 1), (1, 2))]
    + [("check_nearly_equal", "ff", "f", (_f(a), _f(b))) for a, b in ((1.0, 1.0), (1.0, 1.0000001), (1.0, 2.0))]
)


def test_state_ops_match_iree(programs):
    calls = [Call(f, a, r, v) for f, a, r, v in STATE_CALLS if f in programs.state_accepted]
    assert {c.function for c in calls} == set(programs.state_accepted)
    _compare(programs, "state_ops", calls)


# Calls IREE's runtime crashes on (SIGSEGV in its bytecode interpreter; so
# does vm.fail with code 0, left out): a buffer element offset of -1. npukit
# answers OUT_OF_RANGE.
DEFINED_WHERE_IREE_CRASHES = [
    (("buffer_i8", "iI", "i", (1, _bits64(-1))), ("error", 11)),
    (("buffer_i16", "iI", "i", (1, _bits64(-1))), ("error", 11)),
    (("buffer_i32", "iI", "i", (1, _bits64(-1))), ("error", 11)),
    (("buffer_i64", "II", "I", (1, _bits64(-1))), ("error", 11)),
]


def test_state_ops_where_iree_crashes(programs):
    calls = [Call(*c) for c, _ in DEFINED_WHERE_IREE_CRASHES]
    assert programs.npukit["state_ops"].call(calls) == [want for _, want in DEFINED_WHERE_IREE_CRASHES]
