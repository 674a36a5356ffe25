"""Collects compiler diagnostics and turns them into one actionable error."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# The operation an error is about, as MLIR prints it in notes and messages:
#   see current operation: %3 = "torch.operator"(...) <{name = "onnx.Foo"}>
#   failed to legalize operation 'torch.operator'
_ONNX_OP = re.compile(r'name = "(onnx\.[A-Za-z0-9_]+)"|torch\.operator "(onnx\.[A-Za-z0-9_]+)"')
_QUOTED_OP = re.compile(r"operation '([a-z_0-9]+\.[a-z_0-9.]+)'")
_GENERIC_OP = re.compile(r'"([a-z_0-9]+\.[a-z_0-9.]+)"\(')
_LOCATION = re.compile(r'loc\(("[^"]*"(?::\d+:\d+)?|[^()]*)\)')


@dataclass
class Diagnostic:
    severity: str
    message: str


@dataclass
class DiagnosticCollector:
    """Receives diagnostics from an invocation (see iree_capi.enable_callback_diagnostics)."""

    records: list[Diagnostic] = field(default_factory=list)

    def __call__(self, severity: str, message: str) -> None:
        self.records.append(Diagnostic(severity, message))

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.records if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.records if d.severity == "warning"]

    def texts(self) -> list[str]:
        return [f"{d.severity}: {d.message}" for d in self.records]

    def summary(self) -> str:
        """One line: the first error, with the operation and location it names."""
        errors = self.errors
        if not errors:
            return "the compiler failed without a diagnostic"
        first = errors[0].message.strip()
        headline = _shorten(first.splitlines()[0])
        everything = "\n".join(d.message for d in self.records)
        op = failing_operation(everything)
        loc = first_location(everything)
        parts = [headline]
        if op and op not in headline:
            parts.append(f"operation {op}")
        if loc and loc not in headline:
            parts.append(f"at {loc}")
        return "; ".join(parts)


def _shorten(line: str) -> str:
    """Drops an empty location prefix and the operation dump after the message."""
    if line.startswith('loc(""): ') or line.startswith("loc(unknown): "):
        line = line.split(": ", 1)[1]
    for marker in (": %", ': "'):
        cut = line.find(marker)
        if cut > 0:
            line = line[:cut]
    return line


def failing_operation(text: str) -> str | None:
    """The most specific operation name a diagnostic mentions (ONNX op first)."""
    m = _ONNX_OP.search(text)
    if m:
        return m.group(1) or m.group(2)
    m = _QUOTED_OP.search(text)
    if m:
        return m.group(1)
    m = _GENERIC_OP.search(text)
    return m.group(1) if m else None


def first_location(text: str) -> str | None:
    for m in _LOCATION.finditer(text):
        loc = m.group(1).strip()
        if loc and loc not in ("unknown", '""'):
            return loc
    return None
