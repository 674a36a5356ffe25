"""The placement and performance report of a mynpu compile: one row per
dispatch (where it runs, why not on the NPU, MACs, calls per inference, the
device's cycle estimate of one call) and a summary of one inference, as
JSON (``--mynpu-report``, the manifest) and as text for a terminal."""

from __future__ import annotations

from dataclasses import dataclass

from npukit.mynpu.isa import HardwareConfig


@dataclass
class DispatchRow:
    name: str
    operation: str
    device: str  # "mynpu" or "cpu"
    reason: str
    macs: int  # of one call
    calls: int = 1  # per inference
    plan: object | None = None  # StreamPlan for NPU dispatches
    estimate: dict | None = None  # of one call

    def to_json(self) -> dict:
        row = {"name": self.name, "operation": self.operation, "device": self.device, "reason": self.reason,
               "macs": self.macs, "calls": self.calls}
        estimate = self.estimate or {}
        row["cycles"] = estimate.get("cycles", 0)
        if self.device == "mynpu":
            for key in ("compute_cycles", "dma_cycles", "dma_bytes", "sram_peak", "utilisation", "layers"):
                row[key] = estimate.get(key, 0)
            plan = self.plan
            row["tiling"] = {"output_channels": plan.channel_tile, "output_rows": plan.row_tile,
                             "double_buffered": plan.double_buffered}
            if plan.depthwise_mode:
                row["depthwise"] = plan.depthwise_mode
        return row


def placement_report(rows: list[DispatchRow], options, config: HardwareConfig) -> dict:
    total_macs = sum(r.macs * r.calls for r in rows)
    npu_macs = sum(r.macs * r.calls for r in rows if r.device == "mynpu")
    cycles = sum((r.estimate or {}).get("cycles", 0) * r.calls for r in rows if r.device == "mynpu")
    return {
        "hardware": {"pes": config.pes, "sram_bytes": config.sram_bytes, "parallelism": config.parallelism,
                     "dma_bytes_per_cycle": config.dma_bytes_per_cycle, "clock_mhz": config.clock_mhz,
                     "depthwise": options.depthwise, "table": options.table, "pool": options.pool, "mul": options.mul,
                     "parallel_option": options.parallel},
        "summary": {
            "dispatches": len(rows),
            "npu_dispatches": sum(r.device == "mynpu" for r in rows),
            "macs": total_macs,
            "npu_macs": npu_macs,
            "npu_mac_share": round(npu_macs / total_macs, 6) if total_macs else 0.0,
            "total_cycles": cycles,
            "npu_time_us": round(cycles / config.clock_mhz, 3),
        },
        "dispatches": [r.to_json() for r in rows],
    }


def cpu_operations_text(report: dict) -> str:
    """The dispatches left on the CPU, one line each (for stderr)."""
    lines = []
    for row in report["dispatches"]:
        if row["device"] == "cpu":
            macs = f", {row['macs']:,} MACs" if row["macs"] else ""
            arithmetic = row.get("cpu_requantization", "none")
            integer = " [integer requantization]" if arithmetic == "integer" else \
                f" [requantized in f32: {arithmetic.removeprefix('float: ')}]" if arithmetic != "none" else ""
            lines.append(f"mynpu: on the CPU: {row['name']} ({row['operation'] or 'unreadable'}{macs}): "
                         f"{row['reason']}{integer}")
    s = report["summary"]
    lines.append(f"mynpu: {s['npu_dispatches']} of {s['dispatches']} dispatches on the NPU, "
                 f"{100 * s['npu_mac_share']:.1f}% of {s['macs']:,} MACs, {s['total_cycles']:,} estimated cycles")
    return "\n".join(lines)
