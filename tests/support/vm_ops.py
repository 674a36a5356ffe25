"""The VM dialect's operations as the installed IREE compiler defines them, and
small VM programs that exercise its scalar operations one function each.

The op list comes from the compiler's own Python bindings
(``iree.compiler.dialects._vm_ops_gen``, generated from the VM dialect's
definitions), so it is IREE 3.13's, not a copy. A scalar operation takes and
gives only i32/i64/f32/f64 values; its register types follow from its name
(``vm.cmp.lt.i64.s``: two i64 in, an i32 out; ``vm.ext.i8.i64.s``: i32 in,
i64 out).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

# Register type of each type name in op names (i8 and i16 live in i32 registers).
_REGISTER = {
    "i8": "i32", "i16": "i32", "i32": "i32", "i64": "i64", "f32": "f32", "f64": "f64",
    "si32": "i32", "ui32": "i32", "si64": "i64", "ui64": "i64",
}
_UNARY = {
    "abs", "neg", "not", "ctlz", "ceil", "floor", "round", "atan", "cos", "sin", "exp", "exp2", "expm1", "log",
    "log10", "log1p", "log2", "rsqrt", "sqrt", "tanh", "erf",
}
_BINARY = {"add", "sub", "mul", "div", "rem", "and", "or", "xor", "min", "max", "atan2", "pow"}
_CONVERSIONS = {"cast", "ext", "trunc", "bitcast"}


@dataclass(frozen=True)
class ScalarOp:
    """A VM operation on scalars: ``vm.<name>`` with operand and result register types."""

    name: str
    operands: tuple[str, ...]
    result: str

    @property
    def function(self) -> str:
        """The name of the function that exercises it (vm.cmp.lt.i32.s -> cmp_lt_i32_s)."""
        return self.name.removeprefix("vm.").replace(".", "_")

    @property
    def calling_convention(self) -> tuple[str, str]:
        """(arguments, results) in the VM's calling-convention letters."""
        letters = {"i32": "i", "i64": "I", "f32": "f", "f64": "F"}
        return "".join(letters[t] for t in self.operands), letters[self.result]


@functools.lru_cache(maxsize=1)
def vm_op_names() -> tuple[str, ...]:
    """Every operation of the installed compiler's VM dialect."""
    from iree.compiler.dialects import _vm_ops_gen

    names = {cls.OPERATION_NAME for cls in vars(_vm_ops_gen).values()
             if isinstance(cls, type) and isinstance(getattr(cls, "OPERATION_NAME", None), str)}
    return tuple(sorted(names))


def scalar_op(name: str) -> ScalarOp | None:
    """The scalar signature of VM op |name|, or None if it is not a scalar operation."""
    parts = name.split(".")[1:]
    head, rest = parts[0], parts[1:]
    if not rest or "ref" in rest or "any" in rest:
        return None
    reg = _REGISTER.get(rest[0])
    if head == "cmp" and len(rest) >= 2 and rest[1] in _REGISTER:
        t = _REGISTER[rest[1]]
        return ScalarOp(name, (t,) if rest[0] in ("nz", "nan") else (t, t), "i32")
    if head in _CONVERSIONS and len(rest) >= 2 and reg and rest[1] in _REGISTER:
        return ScalarOp(name, (reg,), _REGISTER[rest[1]])
    if reg is None:
        return None
    if head == "select":
        return ScalarOp(name, ("i32", reg, reg), reg)
    if head in ("shl", "shr"):
        return ScalarOp(name, (reg, "i32"), reg)
    if head == "fpowi":
        return ScalarOp(name, (reg, "i64"), reg)
    if head == "fma":
        return ScalarOp(name, (reg, reg, reg), reg)
    if head in _UNARY:
        return ScalarOp(name, (reg,), reg)
    if head in _BINARY:
        return ScalarOp(name, (reg, reg), reg)
    return None


def scalar_ops() -> list[ScalarOp]:
    return [op for op in map(scalar_op, vm_op_names()) if op is not None]


def scalar_program(ops: list[ScalarOp], module: str = "ops") -> str:
    """A VM module (generic MLIR syntax) with one exported function per op."""
    lines = [f"vm.module @{module} {{"]
    for op in ops:
        args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(op.operands))
        values = ", ".join(f"%a{i}" for i in range(len(op.operands)))
        types = ", ".join(op.operands)
        lines += [
            f"  vm.func @{op.function}({args}) -> {op.result} {{",
            f'    %r = "{op.name}"({values}) : ({types}) -> {op.result}',
            f"    vm.return %r : {op.result}",
            "  }",
            f"  vm.export @{op.function}",
        ]
    lines.append("}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ProgramParts:
    """A hand-written VM program cut into its module-level declarations, its
    exported functions and its private functions (so that each export can be
    compiled on its own)."""

    module: str
    declarations: tuple[str, ...]
    exports: dict[str, str]
    privates: str

    def module_text(self, names: list[str]) -> str:
        """A module with the exports |names|, the private functions and the
        declarations they refer to."""
        import re

        body = "\n".join([*(self.exports[n] for n in names), self.privates])
        used = []
        for declaration in self.declarations:
            symbol = re.search(r"@[\w.]+", declaration).group(0)
            if re.search(re.escape(symbol) + r"(?![\w.])", body):
                used.append(declaration)
        declarations = "\n".join(used)
        return f"vm.module @{self.module} {{\n{declarations}\n{body}\n}}\n"


def split_program(text: str) -> ProgramParts:
    """Cuts a program written as tests/runtime/programs/vm_state_ops.mlir is:
    ``vm.module @name {``, one-line declarations and ``vm.initializer`` blocks,
    then functions, each ``  vm.export @f`` (or ``  vm.func private @f``)
    through its closing ``  }`` line."""
    import re

    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("vm.module @"))
    module = re.match(r"vm\.module @(\w+)", lines[start]).group(1)
    declarations, exports, privates = [], {}, []
    i = start + 1
    while i < len(lines):
        line = lines[i]
        export = re.match(r"  vm\.export @(\w+)$", line)
        private = line.startswith("  vm.func private @")
        if export or private:
            end = lines.index("  }", i)
            block = "\n".join(lines[i:end + 1])
            if export:
                exports[export.group(1)] = block
            else:
                privates.append(block)
            i = end + 1
            continue
        if line == "}":
            break
        if line.startswith("  vm.initializer"):
            end = lines.index("  }", i)
            declarations.append("\n".join(lines[i:end + 1]))
            i = end + 1
            continue
        if line.startswith("  vm."):
            declarations.append(line)
        i += 1
    return ProgramParts(module, tuple(declarations), exports, "\n".join(privates))


def emitc_helper_calls(program: str, work) -> dict[str, set[str]]:
    """VM op name -> the vm_* helpers IREE's EmitC conversion turns it into,
    for every op of |program| (a VM module the vm-c emitter accepts): read
    from the conversion's own output, each call located at its op."""
    import re
    import subprocess

    from npukit.driver.stock_tools import stock_tool

    source = Path(work) / "emitc_table.mlir"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(program)
    proc = subprocess.run([str(stock_tool("iree-compile")), "--compile-mode=vm", "--output-format=vm-c",
                           "--mlir-print-ir-after=iree-convert-vm-to-emitc", "--mlir-print-debuginfo",
                           "--mlir-disable-threading", str(source), "-o", str(source.with_suffix(".c"))],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"iree-compile {source.name} (vm-c) failed:\n{proc.stderr[-4000:]}")
    lines = program.splitlines()
    table: dict[str, set[str]] = {}
    for helper, line, column in re.findall(
            r'call_opaque "(vm_[a-z0-9_]+)"\(.*loc\("[^"]*emitc_table\.mlir":(\d+):(\d+)\)\s*$', proc.stderr, re.M):
        op = re.match(r'"?(vm\.[\w.]+)', lines[int(line) - 1][int(column) - 1:])
        assert op, f"no VM op at line {line}, column {column}: {lines[int(line) - 1]!r}"
        table.setdefault(op.group(1), set()).add(helper)
    return table


EMITC_TABLE = Path(__file__).resolve().parents[2] / "emitc_vm" / "emitc_ops.tsv"


def emitc_table(path: Path = EMITC_TABLE) -> dict[str, list[str]]:
    """emitc_vm/emitc_ops.tsv: VM op name -> the helpers IREE 3.13's vm-c
    output calls for it."""
    table = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            op, helpers = line.split("\t")
            table[op] = helpers.split(",")
    return table
