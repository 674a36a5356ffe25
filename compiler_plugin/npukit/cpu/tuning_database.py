"""The tuning database: per CPU preset and layer key (kernel_choice.layer_key),
the kernel choice ``npukit tune`` measured best, with what it measured.

One JSON file, ``$NPUKIT_TUNING_DB`` or ``tuning.json`` in npukit's cache
directory. ``npukit compile`` and ``deploy`` read it for every tuned
compile; a layer without an entry gets the preset's default. Host results
are kept per host CPU (they are timings of this machine's CPU), board
results per preset (instruction counts, the same on every machine).

Writes go to a temporary file first and replace the database in one step,
so a failed or interrupted tune never leaves it half-written.
"""

from __future__ import annotations

import json
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

from npukit.cpu.kernel_choice import KernelChoice
from npukit.errors import NpukitError
from npukit.targets.cpu_presets import CpuPreset

FORMAT = 1


def default_path() -> Path:
    from npukit.cpu.archive_build import cache_dir

    return Path(os.environ.get("NPUKIT_TUNING_DB") or cache_dir() / "tuning.json")


def host_cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def section_name(preset: CpuPreset) -> str:
    """Where a preset's results live: the host's carry its CPU's name."""
    return f"host: {host_cpu_name()}" if preset.is_host else preset.name


@dataclass
class TunedLayer:
    choice: KernelChoice
    # What each candidate measured (choice.describe() -> figure), and the unit.
    measured: dict[str, float] = field(default_factory=dict)
    unit: str = ""
    # Where the layer was met: the model and its dispatch.
    source: str = ""

    def to_json(self) -> dict:
        return {"choice": self.choice.to_json(), "measured": self.measured, "unit": self.unit, "source": self.source}

    @staticmethod
    def from_json(d: dict) -> "TunedLayer":
        return TunedLayer(KernelChoice.from_json(d["choice"]), dict(d.get("measured", {})), d.get("unit", ""),
                          d.get("source", ""))


class TuningDatabase:
    def __init__(self, path: "str | os.PathLike[str] | None" = None):
        self.path = Path(path) if path is not None else default_path()
        self.sections: dict[str, dict[str, TunedLayer]] = {}
        if self.path.exists():
            try:
                data = json.loads(self.path.read_text())
                if data.get("format") != FORMAT:
                    raise ValueError(f"format {data.get('format')!r}, this npukit reads format {FORMAT}")
                self.sections = {name: {key: TunedLayer.from_json(v) for key, v in layers.items()}
                                 for name, layers in data["sections"].items()}
            except (ValueError, KeyError, TypeError) as e:
                raise NpukitError(f"{self.path}: not a readable npukit tuning database ({e}); delete it or point "
                                  "NPUKIT_TUNING_DB at another file") from None

    def choices(self, preset: CpuPreset) -> dict[str, KernelChoice]:
        """Layer key -> the tuned choice, for one preset."""
        return {key: layer.choice for key, layer in self.sections.get(section_name(preset), {}).items()}

    def record(self, preset: CpuPreset, key: str, layer: TunedLayer) -> None:
        self.sections.setdefault(section_name(preset), {})[key] = layer

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"format": FORMAT, "sections": {name: {key: layer.to_json() for key, layer in sorted(layers.items())}
                                               for name, layers in sorted(self.sections.items())}}
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(data, indent=1) + "\n")
        temporary.replace(self.path)
