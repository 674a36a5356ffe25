"""Describes a crash of IREE inside a compile worker in one line."""

from __future__ import annotations

import re
import signal

# Stack frames look like:  #13 0x... mlir::...::AutoInputConversionPipelinePass::runOnOperation() File.cpp:0:0
_PASS_FRAME = re.compile(r"(?:\(anonymous namespace\)::)?([A-Za-z0-9_]+(?:Pass|Pipeline))::runOnOperation")


def signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def crashing_pass(stderr: str) -> str | None:
    """The innermost pass named in LLVM's stack dump, if any."""
    m = _PASS_FRAME.search(stderr)
    return m.group(1) if m else None


def describe_crash(returncode: int, stderr: str, last_phase: str | None) -> str:
    parts = [f"IREE crashed ({signal_name(returncode)})"]
    where = crashing_pass(stderr)
    if where:
        parts.append(f"in {where}")
    if last_phase:
        parts.append(f"after phase '{last_phase}'")
    else:
        parts.append("before phase 'input' (while lowering the model's operators)")
    return " ".join(parts)
