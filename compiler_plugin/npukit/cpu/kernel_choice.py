"""How the layer kernels run one layer: the choices a layer's parameter block
carries, which of them a CPU preset offers, and the default when no tuning
result says otherwise.

- ``weights``: "int8" as the model has them (the default: one copy of each
  weight), or "int16", widened at compile time so the Cortex-M DSP dot
  product needs no sign extension (fewer instructions per MAC for twice the
  weight bytes): DSP cores only, where a tuning result chose it or within a
  flash budget (npukit.cpu.flash_budget). For a
  depthwise layer, "taps" orders the int8 weights tap by tap with the
  channels side by side, for the DSP kernel that runs channel-last layers
  four channels at a time (with a channel multiplier M of 1 or 2,
  TAPS_MULTIPLIERS: output channel c reads input channel c / M; other
  multipliers take the "int8" form). Channel-last 3x3 layers at stride 1
  and dilation 1 with M of 1 or 2 on TFLite's small-accumulator output
  stage (right shifts up to 22) also run from int16 channel planes
  (kernels/s8_depthwise_planes.c, which checks that space itself): with
  "int8" weights always, with "taps" where its cost rule, from the two
  kernels' counts on Cortex-M4, puts it below the four-channel kernels
  (all but small planes such as 4x4 and 6x6 with an activation clamp).
- ``conv_form``: the x86 vector convolution's "packed" (im2col panels) or
  "direct" (the input read in place) form, or "auto" for the kernel's own
  rule. Host only; the kernel falls back to packed where direct cannot run.
  With lane-ordered weights, "rows" is the lane convolution's row-taps
  form (``rows_fit``: each input word loaded once for every tap of a
  kernel row that reads it), where AVX-512 runs it; with AVX2 the lane
  kernel runs its own form.
- ``weight_sums``: whether the parameter block carries each output
  channel's weight sum, which only the x86 host kernels read. Not a tuning
  choice but the preset's (``block_weight_sums``, applied by
  ``LayerChoices.for_layer``): a board's flash holds per channel only the
  bias, multiplier and shift; equal choices compare equal either way.

A layer is known by its key (``layer_key``): its shape, strides and
layouts, not its weights, so a tuning result applies to every layer of the
same geometry in any model.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from npukit.layer_recognition.layer_spec import LayerSpec
from npukit.targets.cpu_presets import CpuPreset

WEIGHT_FORMS = ("int8", "int16", "taps", "lanes")
CONV_FORMS = ("auto", "packed", "direct", "rows")
# The channel multipliers the DSP channel-last depthwise kernel takes with
# tap-ordered weights (s8_depthwise.c, s8_depthwise_dsp.S).
TAPS_MULTIPLIERS = (1, 2)


@dataclass(frozen=True)
class KernelChoice:
    weights: str = "int8"
    conv_form: str = "auto"
    weight_sums: bool = field(default=True, compare=False)

    def __post_init__(self) -> None:
        if self.weights not in WEIGHT_FORMS:
            raise ValueError(f"weights {self.weights!r}: expected one of {', '.join(WEIGHT_FORMS)}")
        if self.conv_form not in CONV_FORMS:
            raise ValueError(f"conv_form {self.conv_form!r}: expected one of {', '.join(CONV_FORMS)}")

    def to_json(self) -> dict:
        return {"weights": self.weights, "conv_form": self.conv_form}

    @staticmethod
    def from_json(d: dict) -> "KernelChoice":
        return KernelChoice(**{k: d[k] for k in ("weights", "conv_form") if k in d})

    def describe(self) -> str:
        return f"{self.weights} weights" + (f", {self.conv_form} conv" if self.conv_form != "auto" else "")


def has_dsp(preset: CpuPreset) -> bool:
    return "+dsp" in preset.features.split(",")


def _is_x86_host(preset: CpuPreset) -> bool:
    import platform

    return preset.is_host and platform.machine() in ("x86_64", "AMD64")


def block_weight_sums(preset: CpuPreset) -> bool:
    """Whether the preset's kernels read weight sums from the parameter
    block: the x86 host kernels do (kernels/s8_layer.h); the portable and DSP
    kernels sum a depthwise layer's weights per call and need none."""
    return _is_x86_host(preset)


def _is_convolution(spec: LayerSpec) -> bool:
    """Whether the layer runs on the convolution kernel (packed weights, the
    choices above); depthwise layers and averages have one way to run."""
    return spec.kind in ("conv", "fully_connected")


# Layers whose kernels IREE's own code outruns on an x86 host: it vectorises an int8 pool and a float
# quantization across the whole tensor (measured: rock_paper_scissors on the host, 101.9 us a call with
# IREE's pools, 204.6 with the kernels'; a mean is the same window sum); the boards take the kernels.
X86_HOST_IREE_KINDS = ("average_pool", "max_pool", "mean", "quantize")


def iree_code_preferred(spec: LayerSpec, preset: CpuPreset) -> str | None:
    """Why IREE's code runs a layer the kernels take, on this preset; None where the kernels run it."""
    if spec.kind in X86_HOST_IREE_KINDS and _is_x86_host(preset):
        return f"an {spec.operation}: IREE's vectorised code runs it faster than the kernels on an x86 host"
    return None


def _channels_last(spec: LayerSpec) -> bool:
    """Input and output with their channels side by side (HWC)."""
    return spec.ifm.addressing().sc == 1 and spec.ofm.addressing().sc == 1


def _lanes_fit(spec: LayerSpec) -> bool:
    """A channel-last layer the lane kernels read and write in place: input,
    output and residual with their channels side by side, and a depthwise
    layer with a channel multiplier of 1, 2 or 4. A padded layer runs from
    channel-last strips of its padded input (kernels/s8_padded_x86.c), or
    where one output pixel's window does not fit a strip, on the portable
    kernel of the same weights, which reads the padding tap by tap."""
    from npukit.cpu.lane_weights import DEPTHWISE_MULTIPLIERS, channels_last_input

    if spec.kind not in ("conv", "fully_connected", "depthwise") or not channels_last_input(spec):
        return False
    if spec.ofm.addressing().sc != 1 and spec.ofm_chw[0] != 1:
        return False
    if spec.add is not None and spec.add.residual.addressing().sc != 1:
        return False
    return spec.kind != "depthwise" or spec.multiplier in DEPTHWISE_MULTIPLIERS


# The row-taps form's kernel widths and output channels (one AVX-512 vector).
ROWS_KERNEL_W = (2, 3, 4, 5)
ROWS_MAX_CHANNELS = 16


def rows_fit(spec: LayerSpec) -> bool:
    """A layer the lane convolution's row-taps form covers
    (kernels/s8_conv_lanes_x86.c, NPUKIT_S8_CONV_ROWS), which checks the
    same: a convolution of 1 to 16 output channels and kernel rows of 2 to
    5 taps at stride and dilation 1 along the row, over input channels side
    by side (a multiple of four) in columns that follow each other, so that
    a kernel row's taps are one lane segment (a padded layer's strip always
    has such columns); any stride, dilation and padding in height."""
    from npukit.cpu.lane_weights import lane_segment

    ic, kw = spec.ifm_chw[0], spec.kernel[1]
    return (spec.kind == "conv" and _lanes_fit(spec) and 1 <= spec.ofm_chw[0] <= ROWS_MAX_CHANNELS
            and kw in ROWS_KERNEL_W and ic >= 4 and ic % 4 == 0 and spec.stride[1] == 1 and spec.dilation[1] == 1
            and lane_segment(spec) == kw * ic)


def _lane_candidates(spec: LayerSpec) -> list[KernelChoice]:
    """The lane kernel's forms for this layer, the default first: the
    row-taps form where it fits, except for 8 output channels, which the
    ordinary form runs as pairs of pixels (measured: a 3x3 8->8 layer at
    32x32 9.9 us, 12.1 us in rows; 16->16 22.9 against 16.2 us)."""
    lanes, rows = KernelChoice(weights="lanes"), KernelChoice(weights="lanes", conv_form="rows")
    if not rows_fit(spec):
        return [lanes]
    return [lanes, rows] if spec.ofm_chw[0] == 8 else [rows, lanes]


def default_choice(spec: LayerSpec, preset: CpuPreset) -> KernelChoice:
    """Without a tuning result: int8 weights (int16 ones only within a flash
    budget, npukit.cpu.flash_budget), tap-ordered depthwise weights for
    channel-last layers on DSP cores; on the host lane-ordered weights for
    channel-last layers, the x86 kernel's own rule for the others."""
    return candidates(spec, preset)[0]


def candidates(spec: LayerSpec, preset: CpuPreset) -> list[KernelChoice]:
    """The choices worth measuring for this layer on this preset; the
    default first. One candidate means there is nothing to tune."""
    if spec.kind == "depthwise" and spec.multiplier in TAPS_MULTIPLIERS and has_dsp(preset) and _channels_last(spec):
        return [KernelChoice(weights="taps"), KernelChoice()]
    if _is_x86_host(preset) and _lanes_fit(spec):  # then the pixel-lane kernels' forms
        return [*_lane_candidates(spec), *_weight_order_candidates(spec, preset)]
    return _weight_order_candidates(spec, preset)


def _weight_order_candidates(spec: LayerSpec, preset: CpuPreset) -> list[KernelChoice]:
    """The choices among the kernels that read weights in output-channel order."""
    if not _is_convolution(spec):
        return [KernelChoice()]
    if has_dsp(preset):
        return [KernelChoice(weights="int8"), KernelChoice(weights="int16")]
    if _is_x86_host(preset):  # padded layers from strips of their padded input (kernels/s8_padded_x86.c)
        return [KernelChoice(), KernelChoice(conv_form="packed"), KernelChoice(conv_form="direct")]
    return [KernelChoice()]


def layer_key(spec: LayerSpec) -> str:
    """The layer's geometry as text: equal keys, equal kernel work."""

    def chw(v) -> str:
        return "x".join(str(int(d)) for d in v)

    def strides(layout) -> str:
        a = layout.addressing()
        return f"{a.sc},{a.sh},{a.sw}"

    parts = [spec.kind, f"in {chw(spec.ifm_chw)} [{strides(spec.ifm)}]", f"out {chw(spec.ofm_chw)} [{strides(spec.ofm)}]",
             f"kernel {chw(spec.kernel)}", f"stride {chw(spec.stride)}", f"dilation {chw(spec.dilation)}",
             "int32 out" if spec.multipliers is None else "add" if spec.add is not None else "int8 out"]
    if spec.padded:
        parts.append(f"padding {','.join(str(p) for p in spec.padding)}")
    return " ".join(parts)


@dataclass
class LayerChoices:
    """The choices a tuned compile makes: ``chosen`` (layer key -> choice,
    from the tuning database or given) where the preset offers it, the
    preset's default everywhere else."""

    preset: CpuPreset
    chosen: dict[str, KernelChoice] = field(default_factory=dict)

    def for_layer(self, spec: LayerSpec) -> tuple[KernelChoice, bool]:
        """(the choice, whether it came from ``chosen``), with the preset's
        parameter-block tables (``block_weight_sums``)."""
        choice, tuned, _ = self.checked(spec)
        return choice, tuned

    def checked(self, spec: LayerSpec) -> tuple[KernelChoice, bool, str]:
        """``for_layer`` and, when ``chosen`` names a choice for this layer
        that is not among its candidates, why the default runs instead. A
        chosen entry passes the same test as the defaults: it must be one of
        the layer's candidates, which follow from this layer's parameters
        (not only from its key, which several layers may share)."""
        sums = block_weight_sums(self.preset)
        choice = self.chosen.get(layer_key(spec))
        offered = candidates(spec, self.preset)
        if choice is not None and choice in offered:
            return replace(choice, weight_sums=sums), True, ""
        refused = ""
        if choice is not None:
            refused = (f"tuned choice '{choice.describe()}' refused: the kernels offer this layer on "
                       f"{self.preset.name} only {', '.join(repr(c.describe()) for c in offered)}")
        return replace(offered[0], weight_sums=sums), False, refused


def tuned_cpu_job(preset: CpuPreset, objects: list, chosen: dict[str, KernelChoice],
                  flash_budget: int | None = None) -> dict:
    """The compile job's ``tuned_cpu`` entry (npukit.driver.compile_job)."""
    return {"objects": [str(o) for o in objects], "preset": preset.name,
            "choices": {key: c.to_json() for key, c in chosen.items()}, "flash_budget": flash_budget}


def layer_choices(tuned_cpu: dict) -> LayerChoices:
    """The LayerChoices a compile job's ``tuned_cpu`` entry describes."""
    from npukit.targets.cpu_presets import get_preset

    return LayerChoices(get_preset(tuned_cpu["preset"]),
                        {key: KernelChoice.from_json(c) for key, c in tuned_cpu.get("choices", {}).items()})
