"""A compile target: a CPU preset, optionally paired with the mynpu NPU.

Spelled on the command line and in the API as ``host``, ``cortex-m4``, ...,
``mynpu`` (the NPU with the host CPU for the layers it does not run) or
``mynpu+<preset>`` (the NPU beside a board's CPU).
"""

from __future__ import annotations

from dataclasses import dataclass

from npukit.errors import TargetError
from npukit.targets.cpu_presets import CpuPreset, get_preset

NPU_NAMES = ("mynpu",)


@dataclass(frozen=True)
class Target:
    cpu: CpuPreset
    npu: str | None = None

    @property
    def name(self) -> str:
        if self.npu is None:
            return self.cpu.name
        if self.cpu.is_host:
            return self.npu
        return f"{self.npu}+{self.cpu.name}"

    @staticmethod
    def parse(spec: "str | Target") -> "Target":
        if isinstance(spec, Target):
            return spec
        if not isinstance(spec, str) or not spec.strip():
            raise TargetError(f"target must be a name such as 'host' or 'cortex-m4', got {spec!r}")
        parts = [p.strip().lower() for p in spec.split("+")]
        npus = [p for p in parts if p in NPU_NAMES]
        cpus = [p for p in parts if p not in NPU_NAMES]
        if len(npus) > 1 or len(cpus) > 1 or not parts or "" in parts:
            raise TargetError(
                f"target '{spec}' is not of the form CPU, NPU or NPU+CPU (for example 'mynpu+cortex-m4')"
            )
        try:
            cpu = get_preset(cpus[0]) if cpus else get_preset("host")
        except TargetError as e:
            raise TargetError(f"{e}{_board_hint(cpus[0])}") from None
        return Target(cpu=cpu, npu=npus[0] if npus else None)

    def to_json(self) -> dict:
        c = self.cpu
        return {
            "name": self.name,
            "npu": self.npu,
            "cpu": c.name,
            "triple": c.triple or "host",
            "core": c.core,
            "llvm_cpu": c.cpu,
            "features": c.features,
            "abi": c.abi,
            "float_abi": c.float_abi,
            "index_bits": c.index_bits,
        }


def _board_hint(name: str) -> str:
    """Where ``name`` is a QEMU board rather than a CPU target: which target it is."""
    from npukit.targets.boards import get_board

    try:
        board = get_board(name)
    except TargetError:
        return ""
    return f"; '{board.spec.name}' is a board: compile for its CPU, {board.cpu.name}, or `npukit deploy --board " \
           f"{board.spec.name}`"
