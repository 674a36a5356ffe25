"""The table ``npukit deploy`` prints, and the board list."""

from __future__ import annotations

import numpy as np

from npukit.targets.boards import Board
from npukit.deploy.deploy_model import DeployResult


def _kib(n: int) -> str:
    return f"{n / 1024:,.1f} KiB" if n < (1 << 20) else f"{n / (1 << 20):,.0f} MiB"


def _row(label: str, value: str, note: str = "") -> str:
    return f"  {label:<34}{value:>16}{('  ' + note) if note else ''}"


def _bytes_row(label: str, n: int, total: int | None = None) -> str:
    share = f"{100 * n / total:.0f}%" if total else ""
    return _row(label, f"{n:,} B", share)


def format_outputs(result: DeployResult) -> str:
    lines = []
    with np.printoptions(threshold=32, linewidth=100, precision=5):
        for i, out in enumerate(result.outputs):
            shape = "x".join(map(str, out.shape)) or "scalar"
            lines.append(f"  output {i}: {out.dtype}[{shape}]")
            lines += ["    " + line for line in str(out).splitlines()]
    where = "npukit's runtime with the NPU simulator" if result.npu else "IREE's runtime"
    count = len(result.samples)
    identical = sum(s.identical_to_host for s in result.samples)
    close = sum(s.matches_host and not s.identical_to_host for s in result.samples)
    differ = count - identical - close
    if count == 1:
        verdict = "are identical to" if identical else "are within 1 LSB of" if close else "DIFFER FROM"
        lines.append(f"  outputs {verdict} the host's ({where} on this machine)")
    else:
        parts = [f"{identical} identical to the host's"] + ([f"{close} within 1 LSB"] if close else []) + \
            ([f"{differ} DIFFER"] if differ else [])
        lines.append(f"  outputs of {count} samples (the first shown): {', '.join(parts)} ({where} on this machine)")
    return "\n".join(lines)


def _instruction_rows(result: DeployResult) -> list[str]:
    step = result.instruction_step
    counted = f"counted in steps of {step}" if step > 1 else "exact (minstret)"
    npu = result.npu
    if npu is None:
        ipm = result.instructions_per_mac
        return [
            _row("instructions per inference", f"{result.instructions:,}", counted),
            _row("  first inference", f"{result.first_run_instructions:,}"),
            _row("  loading the model", f"{result.load_instructions:,}"),
            _row("MACs per inference", f"{result.macs:,}"),
            _row("instructions per MAC", f"{ipm:.2f}" if ipm is not None else "n/a"),
            _row("dispatches per inference", f"{result.dispatches}"),
        ]
    cpu_macs = result.macs - npu.macs
    share = npu.macs / result.macs if result.macs else 0.0
    return [
        _row("CPU instructions per inference", f"{result.cpu_instructions:,}", counted),
        _row("  simulating the NPU (not counted)", f"{npu.simulation_instructions:,}"),
        _row("  first inference (all)", f"{result.first_run_instructions:,}"),
        _row("  loading the model", f"{result.load_instructions:,}"),
        _row(f"{npu.name} cycles per inference", f"{npu.cycles:,}",
             f"{npu.microseconds:,.1f} us at {npu.clock_mhz} MHz, counted by the simulator"),
        _row("MACs per inference", f"{result.macs:,}"),
        _row(f"  on {npu.name}", f"{npu.macs:,}", f"{100 * share:.2f}%"),
        _row("  on the CPU", f"{cpu_macs:,}"),
        _row("dispatches per inference", f"{result.dispatches}", f"{npu.dispatches} on {npu.name}"),
    ]


def _stack_bound_row(result: DeployResult) -> str:
    s = result.stack
    if s is None or s.bytes is None:
        return _row("  stack bound", "none", s.whole.reason if s else "not computed")
    model = f", {s.model.bytes:,} B from the model's run" if s.model and s.model.bytes is not None else ""
    return _row("  stack bound (before running)", f"{s.bytes:,} B",
                f"stack {result.ram.stack_size:,} B{model}")


def _memory_plan_rows(result: DeployResult) -> list[str]:
    r = result.ram
    planned, bound = result.arena_planned, result.activation_lower_bound
    rows = [_row("RAM without the stack", f"{r.without_stack:,} B",
                 f"{r.without_stack / bound:.2f}x the lower bound" if bound else "")]
    if planned is not None:
        used = "as planned" if r.buffer_plan_high_water == planned else f"{r.buffer_plan_high_water:,} B used"
        rows.append(_row("  planned buffers (in the arena)", f"{planned:,} B", used))
    else:
        refused = (result.artifact.manifest.get("memory_plan") or {}).get("refused", "")
        rows.append(_row("  planned buffers", "none", refused))
    if bound:
        rows.append(_row("live-activation lower bound", f"{bound:,} B", "largest sum of live activations"))
    return rows


def _constant_rows(manifest: dict) -> list[str]:
    """What the model's constants hold: the layer kernels' blocks (with the
    weight forms and any flash budget) and what is left of IREE's pool."""
    rows = []
    k = manifest.get("kernel_constants")
    if k and k.get("layers"):
        budget = f", budget {k['budget']:,} B" if k.get("budget") is not None else ""
        rows.append(_row("    layer kernels' blocks", f"{k['kernel_constants']:,} B",
                         f"int16 weights in {k['int16_layers']} of {k['layers']} layers{budget}"))
    pools = manifest.get("constant_pools") or []
    if pools:
        before, kept = sum(p["bytes"] for p in pools), sum(p["kept"] for p in pools)
        whole = [p["reason"] for p in pools if p.get("reason")]
        note = f"{before - kept:,} B read by no dispatch dropped" + (f"; kept whole: {whole[0]}" if whole else "")
        rows.append(_row("    IREE's constant pool", f"{kept:,} B", note))
    return rows


def format_table(result: DeployResult) -> str:
    a, f, r = result.artifact, result.flash, result.ram
    lines = [
        f"{a.name} on {result.board.name} ({result.board.description}; {a.mode}, "
        f"{a.manifest['execution_model']}{', with ' + result.npu.name if result.npu else ''})",
        _row("flash (text + rodata)", f"{f.total:,} B", _kib(f.total)),
        _bytes_row("  model code", f.model_code, f.total),
        _bytes_row("  model constants", f.constants, f.total),
        *_constant_rows(a.manifest),
        _bytes_row("  npukit runtime", f.runtime, f.total),
    ]
    if result.npu:
        lines.append(_bytes_row("  NPU simulator (the NPU's stand-in)", f.npu_simulator, f.total))
    lines += [
        _bytes_row("  start-up, console, C library", f.other, f.total),
        _row("RAM", f"{r.total:,} B", _kib(r.total)),
        _bytes_row("  static data (.data + .bss)", r.static_data, r.total),
        _bytes_row("  runtime arena high-water", r.runtime_arena, r.total),
        _bytes_row("  stack high-water", r.stack_high_water, r.total),
        _stack_bound_row(result),
    ]
    if result.npu:
        lines.append(_row("  simulated NPU SRAM (not counted)", f"{r.simulated_npu_sram:,} B"))
    lines += _memory_plan_rows(result)
    lines += _instruction_rows(result)
    return "\n".join(lines)


def format_board_list(boards: list[Board]) -> str:
    lines = [f"{'board':<15}{'CPU':<11}{'flash':>10}{'RAM':>10}  description"]
    for b in boards:
        flash = "in RAM" if b.shares_code_and_data else _kib(b.code_region.length)
        lines.append(f"{b.name:<15}{b.cpu.name:<11}{flash:>10}{_kib(b.data_region.length):>10}  {b.description}")
    lines.append("(flash 'in RAM': code and data share the board's RAM)")
    return "\n".join(lines)
