"""Lists the buffers an invocation of the program allocates, in order, for
the compile-time memory plan (npukit.codegen.memory_plan).

Run at 'stream': IREE's stream allocation has then packed each execution's
transients into one slab (``stream.resource.alloca`` of a constant size) and
every result into its own ``stream.resource.alloca``; with the inline
execution model each becomes one ``hal_inline.buffer.allocate`` call of that
size, in the same order, when the exported function runs. What the plan cannot
fix in advance is refused with the reason (the compile then has no plan and
the runtime places buffers in its arena as they come): several exported
functions, allocations under control flow or in called functions, sizes known
only at run time, and staging buffers for host-side reads and writes (IREE
drops and resizes allocations around those after 'stream').
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from iree.compiler import ir

from npukit.errors import CompileError

_ALLOCATIONS = ("stream.resource.alloca", "stream.resource.alloc")
# Operations that would make the runtime allocate buffers the plan does not list.
_UNPLANNED = ("stream.resource.constants", "stream.file.read", "stream.resource.pack")


@dataclass
class BufferAllocation:
    bytes: int
    lifetime: str  # the stream resource lifetime: transient, external, variable, ...


@dataclass
class ProgramAllocations:
    function: str = ""
    allocations: list[BufferAllocation] = field(default_factory=list)
    refused: str = ""  # why no plan can be made; empty when one can

    def to_json(self) -> dict:
        return asdict(self)


def _symbol(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _is_public_function(op: ir.Operation) -> bool:
    if op.name != "util.func":
        return False
    if "sym_visibility" in op.attributes and ir.StringAttr(op.attributes["sym_visibility"]).value != "public":
        return False
    return True


def _constant_index(value: ir.Value) -> int | None:
    owner = value.owner
    owner = getattr(owner, "operation", owner)  # an OpView or the Operation itself; a Block for an argument
    if not isinstance(owner, ir.Operation) or owner.name != "arith.constant":
        return None
    return ir.IntegerAttr(owner.attributes["value"]).value


def _lifetime(op: ir.Operation) -> str:
    text = str(op.results[0].type)
    return text[text.find("<") + 1:text.find(">")] if "<" in text else text


def _nested_ops(op: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(inner: ir.Operation) -> ir.WalkResult:
        found.append(inner)
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return found


class BufferAllocations:
    """Collects the exported function's allocations; read ``.program`` after the compile."""

    def __init__(self) -> None:
        self.program = ProgramAllocations(refused="the compile did not reach 'stream'")

    def __call__(self, module: ir.Operation) -> None:
        # Only reads the module: a form it does not know means no plan, never a failed compile.
        try:
            self.program = self._analyse(module)
        except (ValueError, KeyError, TypeError, IndexError) as e:
            self.program = ProgramAllocations(refused=f"the program's allocations could not be read ({e})")

    def check_allocate_calls(self, module: ir.Operation) -> None:
        """The 'vm' hook: the exported function makes one
        ``hal_inline.buffer.allocate`` call per planned buffer. IREE merges
        two allocations of identical operands (the same size) into one
        buffer although both are live, so a program with fewer calls than
        planned buffers would share bytes between them: a compile error
        instead of wrong outputs."""
        program = self.program
        if program.refused or not program.allocations:
            return
        calls = 0

        def visit(op: ir.Operation) -> ir.WalkResult:
            nonlocal calls
            if op.name == "vm.func" and _symbol(op) == program.function:
                for inner in _nested_ops(op):
                    if inner.name == "vm.call" and "hal_inline.buffer.allocate" in str(inner.attributes["callee"]):
                        calls += 1
                return ir.WalkResult.SKIP
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        if calls and calls != len(program.allocations):
            sizes = ", ".join(f"{a.bytes} B {a.lifetime}" for a in program.allocations)
            raise CompileError(
                f"IREE allocates {calls} buffer(s) in {program.function} where the program at 'stream' has "
                f"{len(program.allocations)} ({sizes}): allocations of the same size were merged into one buffer "
                "while both are live, which would give wrong outputs", phase="vm")

    def _analyse(self, module: ir.Operation) -> ProgramAllocations:
        functions = [op.operation for op in module.regions[0].blocks[0].operations
                     if op.operation.name == "util.func"]
        public = [f for f in functions if _is_public_function(f)]
        if len(public) != 1:
            return ProgramAllocations(refused=f"{len(public)} exported functions; a plan covers exactly one")
        entry = public[0]
        name = _symbol(entry)
        for f in functions:
            if _symbol(f) != name and any(o.name in _ALLOCATIONS for o in _nested_ops(f)):
                return ProgramAllocations(name, refused=f"function {_symbol(f)} allocates buffers")
        every = _nested_ops(entry)
        unplanned = next((o.name for o in every if o.name in _UNPLANNED), None)
        if unplanned:
            return ProgramAllocations(name, refused=f"{unplanned} allocates at run time")
        blocks = list(entry.regions[0].blocks)
        top = [o.operation for o in blocks[0].operations if o.operation.name in _ALLOCATIONS]
        if len(blocks) != 1 or len(top) != sum(o.name in _ALLOCATIONS for o in every):
            return ProgramAllocations(name, refused="allocations under control flow")
        allocations: list[BufferAllocation] = []
        for op in top:
            size = _constant_index(op.operands[0])
            if size is None:
                return ProgramAllocations(name, refused="a buffer whose size is known only at run time")
            if _lifetime(op) == "staging":
                # Host reads and writes of device buffers: IREE drops and resizes allocations around them
                # after 'stream', so the list here is not the one the module makes.
                return ProgramAllocations(name, refused="a staging buffer for host-side reads or writes")
            allocations.append(BufferAllocation(size, _lifetime(op)))
        return ProgramAllocations(name, allocations)
