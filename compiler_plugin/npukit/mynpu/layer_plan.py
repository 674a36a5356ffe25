"""One recognised layer on one hardware configuration: the NPU's predicates,
the stream (SRAM plan, tiles, commands) and the device validator's cycle
count of it. The compiler's partitioning and ``npukit explore`` both cost
layers here, so a sweep reports exactly what a compile reports."""

from __future__ import annotations

from npukit.layer_recognition.layer_spec import LayerSpec, NotSupported
from npukit.mynpu.isa import HardwareConfig
from npukit.mynpu.options import MynpuOptions
from npukit.mynpu.stream_generator import generate
from npukit.mynpu.stream_plan import Constants, StreamPlan
from npukit.mynpu.supported_operators import check_npu_supported


def depthwise_mapping(options: MynpuOptions) -> str:
    """How depthwise layers become instructions: 'instruction' (OP_DEPTH_CONV)
    or 'per-channel' (one OP_CONV per channel)."""
    return "per-channel" if options.depthwise == "per-channel" else "instruction"


def estimate(config: HardwareConfig, plan: StreamPlan, constants_length: int) -> dict:
    """The device validator's counters for ``plan``'s stream, as the report gives them."""
    from npukit.mynpu.simulator import StreamError, estimate_stream

    try:
        counters = estimate_stream(config, plan.stream, plan.binding_sizes, constants_length)
    except StreamError as e:
        raise NotSupported(f"the device's validator rejected the stream: {e}") from None
    return {
        "macs": counters.macs, "compute_cycles": counters.compute_cycles, "dma_cycles": counters.dma_cycles,
        "cycles": counters.cycles, "dma_bytes": counters.dma_bytes, "sram_peak": counters.sram_high_water,
        "utilisation": round(counters.utilisation(config.pes), 4), "layers": counters.layers,
    }


def plan_layer(spec: LayerSpec, options: MynpuOptions, configs: dict[str, HardwareConfig], constants: Constants,
               binding_count: int) -> tuple[StreamPlan, dict[str, dict]]:
    """The stream of ``spec`` (its constants appended to ``constants``) and its
    estimate for each configuration of ``configs`` (parallelism -> config; the
    stream is the same for every parallelism, only its cycles differ).
    NotSupported with the reason when the NPU does not run the layer."""
    check_npu_supported(spec, options)
    plan = generate(spec, next(iter(configs.values())), constants, binding_count, depthwise_mapping(options))
    return plan, {p: estimate(config, plan, len(constants)) for p, config in configs.items()}
