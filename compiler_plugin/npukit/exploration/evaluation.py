"""One configuration of a sweep: the recognised layers through the NPU's
predicates, scheduling, tiling, stream generation and the device
validator's cycle model (npukit.mynpu.layer_plan, as a compile does them),
the mynpu report of that compile (npukit.mynpu.report), and the CPU's cost
of what stays on the CPU."""

from __future__ import annotations

from npukit.exploration.configuration import Configuration
from npukit.exploration.cpu_cost import CpuCostModel
from npukit.layer_recognition.layer_spec import NotSupported
from npukit.mynpu.layer_plan import plan_layer
from npukit.mynpu.operation_kind import LABELS
from npukit.mynpu.recognised_model import RecognisedModel
from npukit.mynpu.report import DispatchRow, placement_report
from npukit.mynpu.stream_plan import ALIGN, Constants


class ConstantSizes(Constants):
    """The constant segment's layout without its bytes: the same offsets as
    ``Constants`` (so the same streams), for costing only."""

    def __init__(self, length: int = 0) -> None:
        super().__init__()
        self.length = length

    def add(self, blob: bytes) -> int:
        at = self.length + (-self.length % ALIGN)
        self.length = at + len(blob)
        return at

    def __len__(self) -> int:
        return self.length


def mynpu_report(model: RecognisedModel, configuration: Configuration) -> dict:
    """The report ``npukit compile -t mynpu`` writes for ``configuration``
    (``--mynpu-report``, the manifest's ``mynpu`` entry)."""
    options = configuration.options()
    config = options.config(configuration.parallel)
    constants = ConstantSizes()
    rows: list[DispatchRow] = []
    for d in model.dispatches:
        if d.spec is None:
            rows.append(DispatchRow(d.name, d.operation, "cpu", d.reason, d.macs, d.calls))
            continue
        attempt = ConstantSizes(len(constants))
        try:
            plan, estimates = plan_layer(d.spec, options, {configuration.parallel: config}, attempt, d.binding_count)
        except NotSupported as e:
            rows.append(DispatchRow(d.name, d.operation, "cpu", str(e), d.macs, d.calls))
            continue
        constants = attempt
        rows.append(DispatchRow(d.name, d.spec.operation, "mynpu", "", d.spec.macs, d.calls, plan=plan,
                                estimate=estimates[configuration.parallel]))
    return placement_report(rows, options, config)


def evaluate(model: RecognisedModel, configuration: Configuration, cpu: CpuCostModel) -> dict:
    """One configuration's entry of ``explore.json``."""
    report = mynpu_report(model, configuration)
    summary = report["summary"]
    kinds = {d.name: d.kind for d in model.dispatches}
    by_operation: dict[str, dict[str, int]] = {"npu": {}, "cpu": {}}
    layers = []
    cpu_cycles = 0
    for row in report["dispatches"]:
        kind = kinds[row["name"]]
        calls = row["calls"]
        layer = {"name": row["name"], "operation": row["operation"], "kind": kind, "device": row["device"],
                 "reason": row["reason"], "macs": row["macs"], "calls": calls}
        if row["device"] == "mynpu":
            for key in ("cycles", "compute_cycles", "dma_cycles", "dma_bytes", "sram_peak", "utilisation", "tiling"):
                layer[key] = row[key]
            layer["cpu_cycles"] = 0
            side, cycles = "npu", row["cycles"] * calls
        else:
            layer["cycles"] = 0
            layer["cpu_cycles"] = cpu.cycles(kind, row["macs"])
            side, cycles = "cpu", layer["cpu_cycles"] * calls
            cpu_cycles += cycles
        if cycles:
            label = LABELS[kind]
            by_operation[side][label] = by_operation[side].get(label, 0) + cycles
        layers.append(layer)
    npu_cycles = summary["total_cycles"]
    npu_rows = [r for r in report["dispatches"] if r["device"] == "mynpu"]
    return {
        **configuration.to_json(),
        "label": configuration.label,
        "npu_cycles": npu_cycles,
        "cpu_cycles": cpu_cycles,
        "total_us": round(npu_cycles / configuration.clock_mhz + cpu_cycles / cpu.clock_mhz, 3),
        "npu_mac_share": summary["npu_mac_share"],
        "utilisation": round(summary["npu_macs"] / (npu_cycles * configuration.pes), 6) if npu_cycles else 0.0,
        "cycles_by_operation": by_operation,
        "sram_peak": max((r["sram_peak"] for r in npu_rows), default=0),
        "dma_bytes": sum(r["dma_bytes"] * r["calls"] for r in npu_rows),
        "npu_dispatches": summary["npu_dispatches"],
        "macs": summary["macs"],
        "npu_macs": summary["npu_macs"],
        "layers": layers,
    }
