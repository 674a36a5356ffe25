"""The deepest stack a program can use, bounded statically from its machine code.

Reads a linked ELF (with ``--emit-relocs``: the relocations say which
functions the program takes the address of) for Armv7-M Thumb-2 or RV32
and bounds the stack of every function:

- its frame, from the instructions that lower the stack pointer (Thumb-2:
  push, vpush, stmdb/str/strd with sp write-back, sub/subw sp by an
  immediate; RV32: addi sp by a negative immediate, sub/add sp by a register
  loaded with a constant just before). Every such instruction of the
  function is counted once, so a function that lowers sp on several paths
  is over-counted, never under-counted. A stack pointer lowered by a value
  only known at run time (alloca, a variable-length array) is a dynamic
  frame: unbounded unless the caller states its bound (``dynamic_bounds``);
- its callees: direct calls and tail branches to other functions, and
  indirect calls (blx/bx through a register, jalr/jr), which may reach any
  function whose address the program takes (a relocation against it other
  than a call or branch) of a kind that call may reach
  (npukit.stack.indirect_calls). A switch's jump table is a branch.

A function's bound is its frame plus the largest bound of its callees. A
cycle in the call graph (recursion, possibly through function pointers), a
dynamic frame without a stated bound or an unreadable instruction that
moves sp makes the bound of everything that reaches it unknown: the result
says which, instead of a number.

This module reads machine code, so it covers GCC's and LLVM's output alike
(npukit's runtime and kernels, IREE's generated executables, the C library).
"""

from __future__ import annotations

import bisect
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import SymbolTableSection

from npukit.stack.indirect_calls import IMPORT_CALLERS, OWN_FILE_CALLERS, RECURSION_LIMITS, base_name, reachable

# Relocation types that are calls or branches (not address-taking), per machine.
# PC24, THM_CALL, PLT32, CALL, JUMP24, THM_JUMP24, THM_JUMP19, THM_JUMP11, THM_JUMP8
_ARM_BRANCH_RELOCS = {1, 10, 27, 28, 29, 30, 51, 102, 103}
_RISCV_BRANCH_RELOCS = {16, 17, 18, 19, 44, 45, 51}  # BRANCH, JAL, CALL, CALL_PLT, RVC_BRANCH, RVC_JUMP, RELAX


# The board support's vector table (Cortex-M) and reset code (RV32): what
# they refer to, the hardware enters.
HARDWARE_ENTRY_TABLES = ("board_vectors", "_start")


class StackBoundError(Exception):
    """The stack cannot be bounded for a reason the message gives."""


@dataclass
class Function:
    name: str
    start: int
    end: int
    file: str | None = None  # the C file of a local (static) function
    frame: int = 0
    dynamic: bool = False  # the frame has a part only known at run time
    unknown: list[str] = field(default_factory=list)  # instructions that move sp in ways not understood
    calls: set[str] = field(default_factory=set)
    indirect_sites: list[int] = field(default_factory=list)
    # Calls into its own body (hand-written assembly's local subroutines, as
    # in libgcc): counted as the function's frame once more.
    local_calls: bool = False


@dataclass(frozen=True)
class StackBound:
    """The bound from ``root``: bytes, or None with the reason."""
    root: str
    bytes: int | None
    path: tuple[tuple[str, int], ...]  # the deepest chain: (function, its frame)
    reason: str | None = None
    assumptions: tuple[str, ...] = ()  # the recursion limits the bound relies on

    def to_json(self) -> dict:
        return {"root": self.root, "bytes": self.bytes, "reason": self.reason, "assumptions": list(self.assumptions),
                "path": [{"function": f, "frame": b} for f, b in self.path]}


def _objdump(elf: Path, machine: str) -> str:
    tool = {"EM_ARM": "arm-none-eabi-objdump", "EM_RISCV": "riscv64-unknown-elf-objdump"}.get(machine)
    if tool is None:
        raise StackBoundError(f"{elf}: machine {machine} is not one the stack analysis reads (Arm Thumb-2, RV32)")
    proc = subprocess.run([tool, "-d", "--no-show-raw-insn", str(elf)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise StackBoundError(f"{tool} -d {elf} failed: {proc.stderr.strip()}")
    return proc.stdout


_FUNC_HEADER = re.compile(r"^([0-9a-f]+) <(.+)>:$")
_INSN = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
_TARGET = re.compile(r"^([0-9a-f]+) <([^>+]+)(\+0x[0-9a-f]+)?>")
_REGLIST = re.compile(r"\{([^}]*)\}")


def _reglist_count(operands: str) -> int:
    m = _REGLIST.search(operands)
    if not m:
        return 0
    n = 0
    for item in m.group(1).split(","):
        item = item.strip()
        if "-" in item:
            a, b = item.split("-")
            n += int(b[1:]) - int(a[1:]) + 1
        elif item:
            n += 1
    return n


def _imm(text: str) -> int:
    return int(text, 0)


_CONDITION = "(eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le|al)"


# Hand-written kernels (npukit/cpu/kernels/s8_dot_dsp.S) that enter their
# own unrolled loop through an address they formed with ADR and keep in
# their frame (`ldr pc, [sp, #N]`): a jump inside the function, not a call.
LOCAL_JUMP_FUNCTIONS = frozenset({"npukit_s8_dot_pairs_dsp", "npukit_s8_dot_pairs_dsp16", "npukit_s8_conv_few_dsp",
                                  "npukit_s8_conv_few_upper_dsp", "npukit_s8_conv_few_full_dsp", "npukit_s8_conv_few_dsp16",
                                  "npukit_s8_conv_few_full_dsp16", "npukit_s8_conv_few_one_dsp",
                                  "npukit_s8_conv_few_upper_one_dsp", "npukit_s8_conv_few_full_one_dsp",
                                  "npukit_s8_conv_four_dsp", "npukit_s8_conv_four_full_dsp",
                                  "npukit_s8_conv_four_add_dsp", "npukit_s8_conv_four_add_full_dsp"})


class _Arm:

    @staticmethod
    def frame_step(mnemonic: str, ops: str, consts: dict[str, int]) -> int | str | None:
        """Bytes this instruction lowers sp by; "dynamic"; "unknown"; None when it does not lower it."""
        m = mnemonic.split(".")[0]
        if m in ("push",) or (m == "stmdb" and ops.startswith("sp!")):
            return 4 * _reglist_count(ops)
        if m in ("vpush",) or (m == "vstmdb" and ops.startswith("sp!")):
            regs = _REGLIST.search(ops).group(1)
            return (8 if "d" in regs else 4) * _reglist_count(ops)
        if m in ("str", "strd", "strb", "strh") and re.search(r"\[sp, #-(\d+)\]!", ops):
            return int(re.search(r"\[sp, #-(\d+)\]!", ops).group(1))
        if m in ("sub", "subw") and re.match(r"sp, (sp, )?#", ops):
            return _imm(ops.rsplit("#", 1)[1].split()[0])
        if m in ("add", "addw") and re.match(r"sp, (sp, )?#-", ops):
            return -_imm(ops.rsplit("#", 1)[1].split()[0])
        if m == "sub" and re.match(r"sp, (sp, )?\w+$", ops):
            return "dynamic"
        # LLVM's stack realignment (mov rX, sp; bfc rX, #0, #N; mov sp, rX) lowers sp by
        # at most 2^N - 4; its epilogue puts sp back from the frame pointer (sub rX, r7, #M).
        parts = [p.strip() for p in ops.split(",")]
        if m == "mov" and len(parts) == 2 and parts[0] != "sp":
            consts[parts[0]] = {"sp": "sp", "r7": "fp"}.get(parts[1])
        if m in ("sub", "add") and len(parts) == 3 and parts[0] != "sp":
            consts[parts[0]] = "fp" if parts[1] == "r7" else None
        if m == "bfc" and len(parts) == 3 and consts.get(parts[0]) == "sp" and parts[1] == "#0":
            consts[parts[0]] = ("aligned", _imm(parts[2].lstrip("#")))
            return None
        if m == "mov" and len(parts) == 2 and parts[0] == "sp":
            held = consts.get(parts[1])
            if parts[1] == "r7" or held == "fp":
                return None
            if isinstance(held, tuple):
                return (1 << held[1]) - 4
            return "dynamic"
        if m == "add" and ops.startswith("sp,") and "#" not in ops:
            return "unknown"
        return None

    @staticmethod
    def call_kind(mnemonic: str, ops: str) -> str | None:
        m = mnemonic.split(".")[0]
        if re.match(r"^b" + _CONDITION + "?$", m):  # bls, blt, ble, blo: branches, not bl
            return "branch" if _TARGET.match(ops) else None
        m = re.sub("^(blx|bl|bx)" + _CONDITION + "$", r"\1", m)  # in an IT block: blne, blxeq, bxne
        if m in ("bl", "blx"):
            return "indirect" if re.match(r"^(r\d+|ip|sl|fp|lr)$", ops) else "call"
        if m == "bx":
            return None if ops == "lr" else "indirect"
        if re.match(r"^ldr\w*$", m) and re.match(r"^pc, \[\w+, \w+, lsl #2\]$", ops):
            return "table"  # a switch's jump table, whose entries follow the instruction
        if re.match(r"^ldr\w*$", m) and re.match(r"^pc, \[(?!sp\])", ops):
            return "indirect"  # a jump through a loaded pointer (not the return of ldr pc, [sp], #4)
        if m in ("mov", "add") and ops.startswith("pc,"):
            return "indirect"
        return None


class _Riscv:
    @staticmethod
    def frame_step(mnemonic: str, ops: str, consts: dict[str, int]) -> int | str | None:
        parts = [p.strip() for p in ops.split("#")[0].split(",")]
        if len(parts) < 2 or parts[0] != "sp":
            return None
        if mnemonic in ("add", "addi", "c.addi16sp", "c.addi") and parts[1] == "sp":
            operand = parts[2] if len(parts) > 2 else ""
            if re.fullmatch(r"-?\d+|-?0x[0-9a-f]+", operand):
                value = _imm(operand)
                return -value if value < 0 else None
            value = consts.get(operand)
            if value is None:
                return "dynamic"
            return -value if value < 0 else None
        if mnemonic == "sub" and parts[1] == "sp":
            value = consts.get(parts[2])
            return "dynamic" if value is None else value
        if mnemonic in ("add", "addi") and parts[1] == "s0":
            return None  # the epilogue of a frame with a frame pointer: sp back from s0
        if mnemonic in ("mv", "c.mv"):
            # sp back from the frame pointer, or from a register that holds an earlier sp (a frame with
            # variable-length arrays keeps one to free them)
            return None if parts[1] == "s0" or parts[1] in consts.get("#sp_copies", set()) else "unknown"
        if mnemonic in ("lui", "auipc", "li", "la"):
            return "unknown"  # sp set outright: only the start-up code does it
        return None

    last_auipc: str | None = None

    @staticmethod
    def track(mnemonic: str, ops: str, consts: dict[str, int]) -> None:
        """Constants in registers (lui, li, addi) and, for a switch's jump
        table, which registers hold a table's address plus an index
        ("table:A") or an entry loaded from it ("entry:A")."""
        parts = [p.strip() for p in ops.split("#")[0].split(",")]
        _Riscv.last_auipc = parts[0] if mnemonic == "auipc" else None
        tables = consts.setdefault("#tables", {})
        if mnemonic == "add" and len(parts) == 3 and not re.fullmatch(r"-?\d+", parts[2]):
            base = next((consts[r] for r in parts[1:] if isinstance(consts.get(r), int)), None)
            consts.pop(parts[0], None)
            tables.pop(parts[0], None)
            if base is not None:
                tables[parts[0]] = ("table", base & 0xFFFFFFFF)
            return
        if mnemonic == "lw" and len(parts) == 2:
            m = re.match(r"^0\((\w+)\)$", parts[1])
            source = tables.get(m.group(1)) if m else None
            consts.pop(parts[0], None)
            tables.pop(parts[0], None)
            if source is not None and source[0] == "table":
                tables[parts[0]] = ("entry", source[1])
            return
        if parts and parts[0] in tables and mnemonic not in ("jr", "c.jr", "sw", "sh", "sb"):
            tables.pop(parts[0])
        if not parts or not parts[0]:
            return
        rd = parts[0]
        copies = consts.setdefault("#sp_copies", set())
        if mnemonic in ("mv", "c.mv") and len(parts) == 2 and parts[1] == "sp" and rd != "sp":
            copies.add(rd)
            return
        if rd != "sp" and mnemonic not in ("sw", "sh", "sb", "c.sw", "c.swsp", "beq", "bne", "blt", "bge",
                                           "bltu", "bgeu", "c.beqz", "c.bnez", "jr", "c.jr"):
            copies.discard(rd)  # overwritten
        try:
            if mnemonic == "li":
                consts[rd] = _imm(parts[1])
                return
            if mnemonic == "lui":  # the upper 20 bits, sign-extended from bit 31
                value = (_imm(parts[1]) << 12) & 0xFFFFFFFF
                consts[rd] = value - (1 << 32) if value >> 31 else value
                return
            if mnemonic in ("addi", "add") and parts[1] in consts and re.fullmatch(r"-?\d+", parts[2]):
                consts[rd] = consts[parts[1]] + int(parts[2])
                return
        except (ValueError, IndexError):
            pass
        consts.pop(rd, None)

    @staticmethod
    def call_kind(mnemonic: str, ops: str) -> str | None:
        if mnemonic == "jal":
            if "," in ops.split("<")[0] and not ops.startswith("ra,"):
                return "branch"
            return "call"
        if mnemonic in ("j", "c.j", "beq", "bne", "blt", "bge", "bltu", "bgeu", "beqz", "bnez", "blez", "bgez",
                        "bltz", "bgtz", "bgt", "ble", "bgtu", "bleu"):
            return "branch"
        if mnemonic in ("jalr", "c.jalr"):
            # auipc reg + jalr off(reg): a direct call objdump resolves in a comment
            m = re.match(r"^(?:\w+,)?-?\d+\((\w+)\)", ops)
            return "call" if m and "<" in ops and m.group(1) == _Riscv.last_auipc else "indirect"
        if mnemonic in ("jr", "c.jr"):
            return None if ops.strip() == "ra" else "indirect"
        return None


def _target(ops: str) -> tuple[int, str] | None:
    m = re.search(r"([0-9a-f]+) <([^>+]+)(\+0x[0-9a-f]+)?>", ops)
    if not m:
        return None
    return int(m.group(1), 16), m.group(2)


def _symbols(elf: ELFFile) -> list[tuple[str, int, int, int, str | None]]:
    """(name, start, size, section index, file) of every function symbol,
    Thumb bit cleared; the file (the STT_FILE symbol before it) for local ones."""
    out = {}
    for section in elf.iter_sections():
        if not isinstance(section, SymbolTableSection):
            continue
        file = None
        for sym in section.iter_symbols():
            if sym["st_info"]["type"] == "STT_FILE":
                file = sym.name
            if sym["st_info"]["type"] == "STT_FUNC" and sym["st_shndx"] != "SHN_UNDEF":
                start = sym["st_value"] & ~1
                local = sym["st_info"]["bind"] == "STB_LOCAL"
                out.setdefault((sym["st_shndx"], start),
                               (sym.name, start, sym["st_size"], sym["st_shndx"], file if local else None))
    return list(out.values())


def _address_taken(elf: ELFFile, functions: dict[tuple[int, int], int],
                   slots: dict[int, int] | None = None) -> set[int]:
    """Start addresses of the functions a relocation other than a call or
    branch refers to (in a linked ELF with --emit-relocs)."""
    machine = elf["e_machine"]
    branch = _ARM_BRANCH_RELOCS if machine == "EM_ARM" else _RISCV_BRANCH_RELOCS
    starts = {address for _, address in functions}
    hardware = []
    for table in elf.iter_sections():
        if isinstance(table, SymbolTableSection):
            hardware += [(s["st_value"] & ~1, (s["st_value"] & ~1) + max(s["st_size"], 1))
                         for s in table.iter_symbols() if s.name in HARDWARE_ENTRY_TABLES]
    loaded = [(s["sh_addr"], s["sh_addr"] + s["sh_size"], s) for s in elf.iter_sections()
              if s["sh_flags"] & 2 and s["sh_type"] == "SHT_PROGBITS"]

    def word_at(address: int) -> int | None:
        for lo, hi, section in loaded:
            if lo <= address and address + 4 <= hi:
                return int.from_bytes(section.data()[address - lo:address - lo + 4], "little")
        return None

    taken: set[int] = set()
    for section in elf.iter_sections():
        if not isinstance(section, RelocationSection):
            continue
        target_section = elf.get_section(section["sh_info"])
        if not target_section["sh_flags"] & 2 or target_section.name.startswith(".ARM.ex"):
            continue  # debug information and unwind tables are not the program's pointers
        symtab = elf.get_section(section["sh_link"])
        for rel in section.iter_relocations():
            if rel["r_info_type"] in branch:
                continue
            # The vector table's and the start-up code's entries are entered by the hardware (reset,
            # faults, traps), not called by the program.
            if any(lo <= rel["r_offset"] < hi for lo, hi in hardware):
                continue
            sym = symtab.get_symbol(rel["r_info_sym"])
            if section.is_RELA():
                candidates = [sym["st_value"] + rel["r_addend"]]
                if slots is not None and rel["r_info_type"] == 1:  # R_RISCV_32: a word holding an address
                    slots[rel["r_offset"]] = candidates[0]
            else:  # REL: the addend was in the word, which now holds the linked value
                candidates = [sym["st_value"]]
                word = word_at(rel["r_offset"])
                if word is not None:
                    # R_ARM_REL32 holds S + A - P (position-independent code's literal offsets): the address
                    # is the word plus its own; the word alone is an offset that may equal an unrelated
                    # function's address in a low flash.
                    candidates.append(word + rel["r_offset"] if machine == "EM_ARM" and rel["r_info_type"] == 3
                                      else word)
            for address in candidates:
                if address & ~1 in starts:
                    taken.add(address & ~1)
    return taken


@dataclass
class CallGraph:
    functions: dict[int, Function]  # by start address (names of static functions repeat)
    address_taken: set[int]
    relocations: bool  # the ELF carries relocations (address-taken functions are known)

    def named(self, name: str) -> list[int]:
        return [a for a, f in self.functions.items() if f.name == name]

    def containing(self, address: int) -> int | None:
        i = bisect.bisect_right(self._starts, address) - 1
        if i >= 0 and address < self.functions[self._starts[i]].end:
            return self._starts[i]
        return None

    def __post_init__(self) -> None:
        self._starts = sorted(self.functions)


def _table_inside(slots: dict[int, int], start: int, f: Function) -> bool:
    """Whether |start| is a jump table of |f|: a word holding the address of
    a place in |f|. (Compilers bound a switch's index by its table's length
    before they jump, and a table holds only its own function's places; the
    next table may belong to another function.)"""
    return start in slots and f.start <= slots[start] < f.end


def read_call_graph(elf_path: Path) -> CallGraph:
    """The functions of a linked ELF, their frames and calls."""
    with open(elf_path, "rb") as f:
        elf = ELFFile(f)
        machine = elf["e_machine"]
        if machine == "EM_RISCV" and elf.elfclass != 32:
            raise StackBoundError(f"{elf_path}: only RV32 is read")
        if elf["e_type"] != "ET_EXEC":
            raise StackBoundError(f"{elf_path}: the stack analysis reads linked programs")
        symbols = _symbols(elf)
        relocations = any(isinstance(s, RelocationSection) for s in elf.iter_sections())
        by_address = {(s[3], s[1]): s[1] for s in symbols}
        slots: dict[int, int] = {}  # data words holding code addresses (RV32 jump tables' entries)
        taken = _address_taken(elf, by_address, slots) if relocations else set()
    isa = _Arm if machine == "EM_ARM" else _Riscv
    functions = {start: Function(name, start, start + size, file) for name, start, size, _, file in symbols}
    starts = sorted(functions)
    for here, following in zip(starts, starts[1:] + [None]):
        f = functions[here]
        if f.end == f.start and following is not None:  # hand-written assembly states no size
            f.end = following
    graph = CallGraph(functions, taken, relocations)
    text = _objdump(elf_path, machine)
    current: Function | None = None
    consts: dict[str, int] = {}
    table_site: int | None = None
    for line in text.splitlines():
        header = _FUNC_HEADER.match(line)
        if header:
            # A label inside a function (RISC-V keeps its local labels with --emit-relocs) does not end it.
            start = int(header.group(1), 16)
            if start in functions or current is None or not current.start <= start < current.end:
                current = functions.get(start)
                consts = {}
            continue
        insn = _INSN.match(line)
        if not insn or current is None:
            continue
        address, mnemonic, ops = insn.groups()
        if table_site is not None and mnemonic == ".word":
            # A jump table's entry: a branch inside the function, or a jump anywhere else.
            entry = int(ops.split()[0], 16) & ~1
            if not current.start <= entry < current.end:
                current.indirect_sites.append(table_site)
                table_site = None
            continue
        table_site = None
        if mnemonic.startswith(".") or mnemonic == "<UNDEFINED>":
            continue
        step = isa.frame_step(mnemonic, ops, consts)
        if step == "dynamic":
            current.dynamic = True
        elif step == "unknown":
            current.unknown.append(f"{mnemonic} {ops}")
        elif isinstance(step, int) and step > 0:
            current.frame += step
        kind = isa.call_kind(mnemonic, ops)
        if (kind == "indirect" and isa is _Arm and current.name in LOCAL_JUMP_FUNCTIONS
                and mnemonic.split(".")[0] == "ldr" and ops.startswith("pc, [sp, #")):
            kind = None  # a jump into its own loop, the address kept in its frame (see LOCAL_JUMP_FUNCTIONS)
        if kind == "indirect" and isa is _Riscv and mnemonic in ("jr", "c.jr"):
            loaded = consts.get("#tables", {}).get(ops.strip())
            if loaded is not None and loaded[0] == "entry" and _table_inside(slots, loaded[1], current):
                kind = None  # a switch: its jump table's entries all lie in this function
        if isa is _Riscv:
            _Riscv.track(mnemonic, ops, consts)
        if kind == "table":
            table_site = int(address, 16)  # its entries follow as .word lines
            continue
        if kind == "indirect":
            current.indirect_sites.append(int(address, 16))
        elif kind in ("call", "branch"):
            target = _target(ops)
            if target is None:
                continue
            inside = current.start <= target[0] < current.end
            if kind == "branch" and inside:
                continue
            if inside and target[0] != current.start:
                current.local_calls = True
                continue
            callee = graph.containing(target[0])
            if callee is None:
                current.unknown.append(f"{mnemonic} {ops} (to no known function)")
            else:
                current.calls.add(callee)
    return graph


def bound(graph: CallGraph, root: str, *, dynamic_bounds: dict[str, int] | None = None,
          recursion_limits: dict[str, int] | None = None) -> StackBound:
    """The deepest stack from a call of ``root`` (its frame included).

    ``dynamic_bounds`` gives, per function with a dynamic frame, the most its
    run-time part can take (from what its source states).
    ``recursion_limits`` gives, per function (by name without clone
    suffixes), how many times it may be active on one chain of calls; a
    cycle through none of them is recursion without a bound. The result
    lists the limits it relied on."""
    dynamic_bounds = dynamic_bounds or {}
    limits = recursion_limits if recursion_limits is not None else RECURSION_LIMITS
    roots = graph.named(root)
    if len(roots) != 1:
        raise StackBoundError(f"{len(roots)} functions named {root} in the program")
    limited = {a for a, f in graph.functions.items() if base_name(f.name) in limits}
    memo: dict[tuple, tuple[int | None, tuple, str | None]] = {}
    on_path: list[int] = []
    relied: set[str] = set()

    taken = {a: graph.functions[a].name for a in graph.address_taken}

    def visit(address: int, excluded_file: str | None = None) -> tuple[int | None, tuple, str | None]:
        key = (address, excluded_file, tuple(sorted((a, on_path.count(a)) for a in set(on_path) & limited)))
        if key in memo:
            return memo[key]
        f = graph.functions[address]
        if address in on_path:
            name = base_name(f.name)
            if name in limits and on_path.count(address) >= limits[name]:
                relied.add(name)
                return 0, (), None  # the stated limit: this call does not happen
            if not set(on_path[on_path.index(address):]) & limited:
                cycle = [graph.functions[a].name for a in on_path[on_path.index(address):]] + [f.name]
                return None, (), "recursion: " + " -> ".join(cycle)
        if f.unknown:
            return done(key, None, (), f"{f.name} moves the stack pointer or branches in a way not read "
                                       f"({f.unknown[0]})")
        frame = 2 * f.frame if f.local_calls else f.frame
        if f.dynamic:
            if f.name not in dynamic_bounds:
                return done(key, None, (), f"{f.name} lowers the stack pointer by an amount only known at run time")
            frame += dynamic_bounds[f.name]
        importing = IMPORT_CALLERS.search(base_name(f.name)) is not None
        callees = {c: f.file if importing else excluded_file for c in f.calls}
        if f.indirect_sites:
            if not graph.relocations:
                return done(key, None, (), f"{f.name} calls through a pointer and the ELF has no relocations to "
                                           "tell which functions it may reach")
            targets = reachable(f.name, taken)
            if targets is None:
                return done(key, None, (), f"{f.name} calls through pointers to code the program does not "
                                           "contain (loaded at run time?)")
            for target in targets:
                t = graph.functions[target]
                if OWN_FILE_CALLERS.search(base_name(f.name)) and t.file != f.file:
                    continue
                if excluded_file is not None and t.file == excluded_file:
                    continue
                callees.setdefault(target, f.file if importing else None)
        on_path.append(address)
        best, best_path = 0, ()
        for callee, callee_context in sorted(callees.items()):
            depth, path, reason = visit(callee, callee_context)
            if depth is None:
                on_path.pop()
                return done(key, None, (), reason, cache=not reason.startswith("recursion"))
            if depth > best or not best_path:
                best, best_path = depth, path
        on_path.pop()
        return done(key, frame + best, ((f.name, frame),) + best_path, None)

    def done(key: tuple, depth: int | None, path: tuple, reason: str | None, cache: bool = True):
        if cache:
            memo[key] = (depth, path, reason)
        return depth, path, reason

    depth, path, reason = visit(roots[0])
    return StackBound(root, depth, path, reason, tuple(sorted(f"{n} at most {limits[n]} deep" for n in relied)))
