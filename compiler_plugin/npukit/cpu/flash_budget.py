"""Which layers get int16-widened weights, within a flash budget.

On DSP cores the convolution kernel runs fewer instructions per MAC with
its weights widened to int16 at compile time, for twice the weight bytes.
By default every layer keeps one int8 copy of its weights (the model's own
size); a layer is widened only where the user allows it: a tuning result
(``npukit tune``) that chose int16 for its geometry, or a flash budget.

With a budget (bytes for the layer kernels' constants: every replaced
layer's parameter block, i.e. its weights in the kernel's layout, biases and
requantization tables), the layers are first narrowed to fit it (untuned
ones first, then those that save the fewest instructions per byte), then
widened while the total stays within it, the layers with the most MACs per
extra byte first (for a convolution, its output pixels): the instructions a
byte of flash saves. A budget below what the layers need with int8 weights
is an error that says how much they need.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from npukit.cpu.kernel_choice import KernelChoice
from npukit.errors import TargetError


@dataclass
class LayerForms:
    """One layer's choice and the block bytes of its int8 and (when the
    preset offers it) int16 weight forms."""

    name: str
    choice: KernelChoice
    tuned: bool
    macs: int
    narrow_bytes: int  # the block with the choice's weights in int8 (the choice itself when it has no int16 form)
    wide_bytes: int | None = None  # with int16 weights; None: no int16 form (or, without a budget, not asked)

    @property
    def bytes(self) -> int:
        return self.wide_bytes if self.wide else self.narrow_bytes

    @property
    def wide(self) -> bool:
        return self.choice.weights == "int16"

    def gain(self) -> float:
        """MACs per extra byte of the int16 form (the instructions it saves per byte, up to a factor)."""
        return self.macs / max(self.wide_bytes - self.narrow_bytes, 1)


@dataclass
class BudgetOutcome:
    budget: int | None
    total: int
    narrow_total: int
    widened: int
    layers: int

    def to_json(self) -> dict:
        return {"budget": self.budget, "kernel_constants": self.total, "with_int8_weights": self.narrow_total,
                "int16_layers": self.widened, "layers": self.layers}


def fit_budget(layers: list[LayerForms], budget: int | None) -> BudgetOutcome:
    """Sets each layer's weight form within ``budget`` (None: the choices stay
    as given: int8 unless a tuning result chose int16)."""
    narrow_total = sum(layer.narrow_bytes for layer in layers)
    if budget is not None:
        if narrow_total > budget:
            raise TargetError(f"the flash budget of {budget:,} B is below the {narrow_total:,} B the layer kernels' "
                              "constants need with int8 weights (one copy of each weight); raise --flash-budget "
                              "or leave it unset")
        widenable = [layer for layer in layers if layer.wide_bytes is not None]
        # Narrow until it fits (untuned, then least gain per byte first), then widen the best gains that fit.
        for layer in sorted((x for x in widenable if x.wide), key=lambda x: (x.tuned, x.gain())):
            if sum(x.bytes for x in layers) <= budget:
                break
            layer.choice = replace(layer.choice, weights="int8")
        for layer in sorted((x for x in widenable if not x.wide), key=lambda x: -x.gain()):
            extra = layer.wide_bytes - layer.narrow_bytes
            if sum(x.bytes for x in layers) + extra <= budget:
                layer.choice = replace(layer.choice, weights="int16")
    return BudgetOutcome(budget, sum(x.bytes for x in layers), narrow_total, sum(x.wide for x in layers), len(layers))
