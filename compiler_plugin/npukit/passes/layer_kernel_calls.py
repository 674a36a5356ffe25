"""The tuned CPU pipeline's main step: quantized layers call npukit's kernels.

At the 'stream' boundary each dispatch is matched with the same predicates
the NPU uses (npukit.layer_recognition): an int8 convolution,
depthwise convolution or fully connected layer with its requantization,
ReLU and residual addition; an average pool over another layer's int32
accumulators with that layer's output stage fused in
(npukit.layer_recognition.accumulator_average); and an int8 elementwise
operation of one tensor, run as a 256-entry table of its own values
(npukit.layer_recognition.table_lookup), or of two, TFLite's int8 MUL
(npukit.layer_recognition.elementwise_product); int8 average and max pools
(npukit.layer_recognition.int8_pool) and a float input's QUANTIZE
(npukit.layer_recognition.float_quantize), which an x86 host leaves to IREE's
vectorised code (kernel_choice.iree_code_preferred). A matched dispatch's
body is replaced by one call to ``npukit_s8_layer`` (``npukit_s8_unweighted``
for the layers without weights, which then link no other kernel;
npukit/cpu/kernels) with the layer's parameter block, tables and packed
weights as read-only data of the executable, and one workgroup. The kernels
compute TFLite's integer arithmetic exactly for layers whose dispatch
computes it (the TFLite frontend's); a layer whose
dispatch requantizes in float (an ONNX QDQ graph: DequantizeLinear, the
layer in float, QuantizeLinear) keeps that float arithmetic, operation by
operation (layer_recognition.float_parameters), unless ``float_output`` is
off (the mynpu pairing, where the CPU computes what the NPU computes).

The kernels reach the executable as an object IREE links in
(``hal.executable.objects``) for .vmfb and embedded ELF output; a static
library is merged with the kernels after the compile (npukit.cpu.target_kernels).
Dispatches that do not match keep IREE's code, with the reason recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from iree.compiler import ir

from npukit.layer_recognition.accumulator_average import match_accumulator_average
from npukit.cpu.flash_budget import BudgetOutcome, LayerForms, fit_budget
from npukit.cpu.kernel_choice import KernelChoice, LayerChoices, candidates, iree_code_preferred, layer_key
from npukit.cpu.layer_kernels import KernelUnsupported, compact_blocks, entry_point, layer_block, reduction_length
from npukit.layer_recognition.constant_pool import binding_sites, constant_reader
from npukit.layer_recognition.dispatch_ir import UnreadableDispatch, read_dispatch
from npukit.layer_recognition.layer_match import match_layer_or_table, reduces_accumulators
from npukit.layer_recognition.layer_spec import UNWEIGHTED_KINDS, LayerSpec, NotSupported
from npukit.passes.device_targets import cpu_executable_targets


@dataclass
class KernelDispatch:
    """What became of one dispatch: the layer the kernel runs and how
    (npukit.cpu.kernel_choice), or why not."""

    operation: str = ""
    reason: str = ""
    layer: str = ""
    choice: KernelChoice | None = None
    tuned: bool = False
    candidates: list[KernelChoice] = field(default_factory=list)
    k_padded: int = 0  # the reduction the convolution kernel takes (0: a kernel without one)
    refused: str = ""  # why a tuned choice for this layer was not used (kernel_choice.LayerChoices.checked)

    @property
    def replaced(self) -> bool:
        return not self.reason

    def to_json(self) -> dict:
        if not self.replaced:
            return {"reason": self.reason}
        return {"operation": self.operation, "layer": self.layer, "choice": self.choice.to_json(),
                "tuned": self.tuned, "candidates": [c.to_json() for c in self.candidates], "k_padded": self.k_padded,
                **({"refused": self.refused} if self.refused else {})}


@dataclass
class LayerKernelCalls:
    """The 'stream' hook. ``objects``: what each executable links for the
    kernels (npukit.cpu.target_kernels.TargetKernels.link_objects), or none when a
    static library is merged with them later; ``choices``: how each layer
    runs on the preset."""

    objects: list[Path]
    choices: LayerChoices
    dispatches: dict[str, KernelDispatch] = field(default_factory=dict)
    float_output: bool = True
    # Bytes the replaced layers' parameter blocks may take (npukit.cpu.flash_budget); None: no budget.
    flash_budget: int | None = None
    budget: BudgetOutcome | None = None

    def __call__(self, module: ir.Operation) -> None:
        sites = binding_sites(module)
        objects = ""
        if self.objects:
            targets = cpu_executable_targets(module)
            linked = ", ".join(f'#hal.executable.object<{{path = "{p}"}}>' for p in self.objects)
            entries = ", ".join(f"{t} = [{linked}]" for t in targets)
            objects = f"attributes {{hal.executable.objects = #hal.executable.objects<{{{entries}}}>}} "
        layers = []
        for op in list(module.regions[0].blocks[0].operations):
            op = op.operation
            if op.name == "stream.executable":
                layer = self._layer(op, sites)
                if layer is not None:
                    layers.append(layer)
        self.budget = fit_budget([layer[3] for layer in layers], self.flash_budget)
        for executable, body, spec, forms, blocks, refused in layers:
            block = blocks[forms.choice]
            text = _executable_text(executable, body.name, body.binding_count, spec, block, objects)
            parsed = ir.Module.parse(text, executable.context)
            replacement = parsed.body.operations[0].operation
            replacement.move_before(executable)
            executable.erase()
            self.dispatches[body.name] = KernelDispatch(
                operation=spec.operation, layer=layer_key(spec), choice=forms.choice, tuned=forms.tuned,
                candidates=candidates(spec, self.choices.preset),
                k_padded=0 if spec.kind == "depthwise" or spec.kind in UNWEIGHTED_KINDS else reduction_length(spec),
                refused=refused)

    def summary(self) -> dict[str, dict]:
        """Export name -> {"operation": the layer the kernel runs, "layer":
        its key, "choice", "tuned", "candidates"} or {"reason": why IREE's code stays}."""
        return {name: d.to_json() for name, d in self.dispatches.items()}

    def _layer(self, executable: ir.Operation, sites) -> tuple | None:
        """(executable, its body, the layer, its weight forms) for a dispatch
        the kernels run, else None with the reason recorded."""
        try:
            body = read_dispatch(executable)
        except UnreadableDispatch as e:
            self.dispatches[ir.StringAttr(executable.attributes["sym_name"]).value] = KernelDispatch(reason=str(e))
            return None
        site = sites.get(body.name)
        try:
            if _workload_count(executable):
                raise NotSupported("a workload known only at run time")
            spec = _match(body, site)
            preferred = iree_code_preferred(spec, self.choices.preset)
            if preferred:
                raise NotSupported(preferred)
            choice, tuned, refused = self.choices.checked(spec)
            blocks = self._blocks(spec, choice)
        except (NotSupported, KernelUnsupported) as e:
            self.dispatches[body.name] = KernelDispatch(reason=str(e))
            return None
        narrow, *wide = blocks.values()
        forms = LayerForms(body.name, choice, tuned, spec.macs, len(narrow), len(wide[0]) if wide else None)
        return executable, body, spec, forms, blocks, refused

    def _blocks(self, spec: LayerSpec, choice: KernelChoice) -> dict[KernelChoice, bytes]:
        """The layer's parameter block with the choice's weights in int8 and,
        where the preset offers it and the choice or a flash budget may take
        it, in int16 (in that order); compact on 32-bit targets (s8_layer.h)."""
        preset = self.choices.preset
        compact = compact_blocks(preset)
        narrow = replace(choice, weights="int8") if choice.weights == "int16" else choice
        blocks = {narrow: layer_block(spec, narrow, self.float_output, compact)}
        wide = replace(choice, weights="int16")
        if (choice == wide or self.flash_budget is not None) and wide in candidates(spec, preset):
            blocks[wide] = layer_block(spec, wide, self.float_output, compact)
        return blocks


def _match(body, site) -> LayerSpec:
    """The layer the kernels run for a dispatch: the NPU's layers (int8
    elementwise operations as tables among them) and averages over
    requantized accumulators."""
    if not isinstance(site, str) and reduces_accumulators(body):
        return match_accumulator_average(body, constant_reader(body, site))
    return match_layer_or_table(body, site)


def _workload_count(executable: ir.Operation) -> int:
    for op in executable.regions[0].blocks[0].operations:
        if op.operation.name == "stream.executable.export":
            return len(op.operation.regions[0].blocks[0].arguments)
    return 0


def _executable_text(executable: ir.Operation, export: str, binding_count: int, spec: LayerSpec, block: bytes,
                     objects: str) -> str:
    name = ir.StringAttr(executable.attributes["sym_name"]).value
    second = spec.add.residual if spec.add else spec.operand  # the kernel's fourth argument, where there is one
    tensors = [spec.ifm.tensor, spec.ofm.tensor] + ([second.tensor] if second else [])
    extent: dict[int, int] = {}
    for t in tensors:
        extent[t.binding] = max(extent.get(t.binding, 0), t.extent)
    args = ", ".join(f"%arg{i}: !stream.binding {{stream.alignment = 64 : index}}" for i in range(binding_count))
    lines = ["%c0 = arith.constant 0 : index"]
    for binding, size in sorted(extent.items()):
        lines += [f"%m{binding} = stream.binding.subspan %arg{binding}[%c0] : !stream.binding -> memref<{size}xi8>",
                  f"%p{binding} = memref.extract_aligned_pointer_as_index %m{binding} : memref<{size}xi8> -> index"]
    params = f"@npukit_layer_{export}"
    lines += [f"%block = memref.get_global {params} : memref<{len(block)}xi8>",
              f"%params = memref.extract_aligned_pointer_as_index %block : memref<{len(block)}xi8> -> index"]
    residual = f"%p{second.tensor.binding}" if second else "%c0"
    lines += [f"func.call @{entry_point(spec)}(%params, %p{spec.ifm.tensor.binding}, %p{spec.ofm.tensor.binding}, "
              f"{residual}) : (index, index, index, index) -> ()", "return"]
    body = "\n        ".join(lines)
    return f"""
stream.executable private @{name} {objects}{{
  stream.executable.export public @{export} workgroups() -> (index, index, index) {{
    %c1 = arith.constant 1 : index
    stream.return %c1, %c1, %c1 : index, index, index
  }}
  builtin.module {{
    "memref.global"() <{{sym_name = "{params[1:]}", sym_visibility = "private", type = memref<{len(block)}xi8>, initial_value = dense<"0x{block.hex().upper()}"> : tensor<{len(block)}xi8>, constant, alignment = 16 : i64}}> : () -> ()
    func.func private @{entry_point(spec)}(index, index, index, index) attributes {{hal.import.static, llvm.passthrough = ["nounwind"]}}
    func.func @{export}({args}) {{
        {body}
    }}
  }}
}}
"""
