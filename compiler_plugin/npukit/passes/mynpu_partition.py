"""The mynpu target in IREE's pipeline: three hooks of one ``MynpuTarget``.

- 'preprocessing' (``retarget``): the CPU device IREE assigned gets a
  ``mynpu-v1`` executable target with the same CPU configuration, so IREE
  compiles every dispatch's CPU code into it. With ``inline-dynamic`` that is
  the only target (IREE loads one variant per executable); otherwise the CPU
  target stays beside it, so the stock runtime, which does not know
  ``mynpu-v1``, runs the CPU variant.
- 'stream' (``partition``): each dispatch is matched against the NPU's
  layers npukit.layer_recognition recognises (int8 elementwise operations
  of one tensor as 256-entry tables among them), under the NPU's predicates
  (npukit.mynpu.supported_operators); those that match are lowered
  to command streams, which the device's validator checks and costs now. The
  others stay on the CPU with the reason.
- 'stream' too (``empty_npu_dispatches``, inline-dynamic only): the NPU's
  dispatches get no CPU code (npukit.passes.npu_only_dispatches).
- 'stream' too (``requantize_cpu_code``): every dispatch's CPU code gets
  TFLite's integer requantization (npukit.passes.integer_requantization), so
  the CPU computes what the NPU and TFLite's integer kernels compute; the
  report says which CPU dispatches that covers.
- 'hal' (``binaries``): the placeholder of each ``mynpu-v1`` binary is
  replaced by the real executable: the streams, their constants and the CPU
  code IREE compiled as host code for the dispatches the NPU does not run
  (an embedded ELF, or with a static library the library's name).

With a static library (inline-dynamic), the library leaves the NPU's exports
out of its table (``library_leaves_out``: npukit.cpu.library_tables, when
npukit merges the kernels into it): the mynpu-v1 executable stores their
names, and the runtime matches a name against the NPU's exports before the
host code's, so an export the NPU runs never reaches a CPU function. With an
embedded ELF the emptied functions stay in the ELF's table and the NPU's
exports keep only their names' hashes.
"""

from __future__ import annotations

from iree.compiler import ir

from npukit.errors import CompileError
from npukit.layer_recognition.constant_pool import binding_sites
from npukit.layer_recognition.dispatch_ir import UnreadableDispatch, read_dispatch
from npukit.mynpu.executable import FORMAT, Executable, Export
from npukit.mynpu.options import MynpuOptions
from npukit.layer_recognition.layer_match import match_layer_or_table
from npukit.layer_recognition.layer_spec import LayerSpec, NotSupported
from npukit.mynpu.isa import PARALLELISM_CODES
from npukit.mynpu.layer_plan import plan_layer
from npukit.mynpu.operation_kind import contraction_kind, spec_kind
from npukit.mynpu.recognised_model import RecognisedDispatch
from npukit.mynpu.report import DispatchRow, placement_report
from npukit.mynpu.stream_plan import Constants, StreamPlan
from npukit.passes.device_targets import CPU_TARGET_PREFIX, device_globals
from npukit.passes.dispatch_inventory import DispatchInventory, dispatch_calls
from npukit.passes.integer_requantization import IntegerRequantization
from npukit.passes.mynpu_binaries import STATIC_FORMAT, ReplaceMynpuBinaries
from npukit.passes.npu_only_dispatches import EmptyNpuDispatches


_STATIC_NEEDS_INLINE = ("a static library (--iree-llvmcpu-link-static, npukit's 'static' mode) with the mynpu "
                        "target needs --iree-execution-model=inline-dynamic (the mynpu variant as the only "
                        "target); otherwise use embedded ELFs ('embedded') or a .vmfb")


class MynpuTarget:
    def __init__(self, options: MynpuOptions, inline: bool) -> None:
        self.options = options
        self.inline = inline
        self.host_format: str | None = None
        self.exports: dict[str, tuple[LayerSpec, StreamPlan]] = {}
        self.constants = Constants()
        self.parallelism = options.config().parallelism
        self.report: dict | None = None
        # Every dispatch as recognised, before the NPU's predicates: what
        # ``npukit explore`` costs on other hardware configurations.
        self.recognised: list[RecognisedDispatch] = []
        self._replace = ReplaceMynpuBinaries(self._executable_for, lambda: self.host_format or "")
        self._integer = IntegerRequantization()
        self._placed: list[dict] = []
        self._empty = EmptyNpuDispatches(lambda: self.exports)
        # IREE's export name -> the name the generated code gives it, when
        # the exports were renamed after partitioning (passes.short_export_names).
        self.export_names: dict[str, str] = {}

    # 'preprocessing' ----------------------------------------------------------

    def retarget(self, module: ir.Operation) -> None:
        devices = device_globals(module)
        if len(devices) != 1:
            raise CompileError(f"the mynpu target needs exactly one device, the module has {len(devices)}")
        text = str(devices[0].attributes["initial_value"])
        if text.count(CPU_TARGET_PREFIX) != 1:
            raise CompileError("the mynpu target pairs the NPU with one llvm-cpu target; the device has "
                               f"{text.count('#hal.executable.target<')} executable targets")
        start = text.index(CPU_TARGET_PREFIX)
        self.host_format = text[start + len(CPU_TARGET_PREFIX):].split('"', 1)[0]
        end = text.rindex("]>")
        cpu_target = text[start:end]
        if not self.inline and "link_static = true" in cpu_target:
            # Both variants would be one static library of the same name (IREE fails generating it).
            raise CompileError(_STATIC_NEEDS_INLINE)
        npu_target = cpu_target.replace(f'"{self.host_format}"', f'"{FORMAT}"', 1)
        targets = npu_target if self.inline else f"{npu_target}, {cpu_target}"
        with module.context:
            devices[0].attributes["initial_value"] = ir.Attribute.parse(text[:start] + targets + text[end:])

    # 'stream' -----------------------------------------------------------------

    def partition(self, module: ir.Operation) -> None:
        sites = binding_sites(module)
        calls = dispatch_calls(module)
        modes = PARALLELISM_CODES if self.options.parallel == "auto" else (self.parallelism,)
        configs = {p: self.options.config(p) for p in modes}
        estimates: dict[str, dict] = {p: {} for p in configs}
        rows: list[DispatchRow] = []
        for op in module.regions[0].blocks[0].operations:
            op = op.operation
            if op.name != "stream.executable":
                continue
            rows.append(self._partition_one(op, sites, calls, configs, estimates))
        if self.options.parallel == "auto":
            totals = {p: sum(e["cycles"] * calls.get(n, 1) for n, e in estimates[p].items()) for p in configs}
            self.parallelism = min(totals, key=lambda p: (totals[p], list(configs).index(p)))
        for row in rows:
            if row.name in estimates[self.parallelism]:
                row.estimate = estimates[self.parallelism][row.name]
        self.report = placement_report(rows, self.options, self.options.config(self.parallelism))

    def _partition_one(self, executable: ir.Operation, sites, calls, configs, estimates) -> DispatchRow:
        name, macs, kinds = _inventory(executable)
        count = calls.get(name, 1)

        def refused(reason: str, binding_count: int) -> DispatchRow:
            self.recognised.append(RecognisedDispatch(name, kinds, contraction_kind(executable), macs, count, None,
                                                      reason, binding_count))
            return DispatchRow(name, kinds, "cpu", reason, macs, count)

        try:
            body = read_dispatch(executable)
        except UnreadableDispatch as e:
            return refused(str(e), 0)
        try:
            spec = match_layer_or_table(body, sites.get(name))
        except NotSupported as e:
            return refused(str(e), body.binding_count)
        self.recognised.append(RecognisedDispatch(name, kinds, spec_kind(spec), macs, count, spec, "",
                                                  body.binding_count))
        constants = Constants(bytearray(self.constants.data))
        try:
            plan, by_parallelism = plan_layer(spec, self.options, configs, constants, body.binding_count)
        except NotSupported as e:
            return DispatchRow(name, kinds, "cpu", str(e), macs, count)
        for parallelism, estimate in by_parallelism.items():
            estimates[parallelism][name] = estimate
        self.constants = constants
        self.exports[name] = (spec, plan)
        return DispatchRow(name, spec.operation, "mynpu", "", spec.macs, count, plan=plan)

    def empty_npu_dispatches(self, module: ir.Operation) -> None:
        """With inline-dynamic, no CPU code for what the NPU runs (npukit.passes.npu_only_dispatches)."""
        if self.inline:
            self._empty(module)

    def requantize_cpu_code(self, module: ir.Operation) -> None:
        self._integer(module)
        for row in self.report["dispatches"] if self.report else ():
            done = self._integer.dispatches.get(row["name"])
            if row["device"] == "cpu":
                row["cpu_requantization"] = done.describe() if done else "none"

    # 'hal' --------------------------------------------------------------------

    def binaries(self, module: ir.Operation) -> None:
        self._replace(module)
        if self.report is not None:
            # Where the executables' CPU code lives: a static library (by name) or inside them.
            self.report["executables"] = self._placed
        if not self._replace.replaced:
            raise CompileError(f"the module has no mynpu-v1 executable to put the NPU's streams in: "
                               f"{_STATIC_NEEDS_INLINE}")

    def _named(self, export: str) -> str:
        return self.export_names.get(export, export)

    def library_leaves_out(self) -> list[str]:
        """The exports a static library leaves out of its table, by the
        name the generated code gives them: the NPU's, with inline-dynamic
        (the mynpu variant the only one, its host code run only for the
        others)."""
        return [self._named(export) for export in self.exports] if self.inline else []

    def _executable_for(self, name: str, host_format: str, host_code: bytes) -> bytes:
        from npukit.mynpu.simulator import StreamError, validate_executable

        exports = [Export(self._named(export), plan.stream, plan.binding_sizes)
                   for export, (_, plan) in self.exports.items()]
        static = host_format == STATIC_FORMAT
        # An embedded ELF has every dispatch (the NPU's ones emptied), names
        # included: the NPU's exports keep only their names' hashes. A static
        # library leaves the NPU's exports out: their names are stored here.
        omitted = set(self.library_leaves_out()) if static else set()
        host_names = tuple(n for n in (self._named(d.name) for d in self.recognised) if n not in omitted)
        executable = Executable(self.options.config(self.parallelism), exports, bytes(self.constants.data),
                                host_format, host_code, hashed_names=True, host_names=host_names)
        data = executable.to_bytes()
        self._placed.append({"name": name, "bytes": len(data), "npu_constants_bytes": len(self.constants.data),
                             "cpu_code": host_format or None,
                             "cpu_code_bytes": 0 if static else len(host_code),
                             "cpu_code_for": "cpu dispatches" if self.inline else "every dispatch",
                             "static_library": host_code.rstrip(b"\0").decode() if static else None})
        try:
            validate_executable(data)
        except StreamError as e:
            raise CompileError(f"the mynpu-v1 executable failed validation: {e}") from None
        return data


def _inventory(executable: ir.Operation) -> tuple[str, int, str]:
    """Export name, MACs and linalg operation kinds of a stream.executable."""
    info = DispatchInventory()
    info(executable)
    name = info.dispatches[0].name if info.dispatches else ir.StringAttr(executable.attributes["sym_name"]).value
    ops = info.dispatches[0].ops if info.dispatches else []
    kinds = ", ".join(dict.fromkeys(o.removeprefix("linalg.") for o in ops if o != "linalg.fill"))
    return name, info.dispatches[0].macs if info.dispatches else 0, kinds or "data movement"
