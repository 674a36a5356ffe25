"""The tuning database: per CPU preset and layer key (kernel_choice.layer_key),
the kernel choice ``npukit tune`` measured best, with what it measured.

One JSON file, ``$NPUKIT_TUNING_DB`` or ``tuning.json`` in npukit's cache
directory. ``npukit compile`` and ``deploy`` read it for every tuned
compile; a layer without an entry gets the preset's default. Host results
are kept per host CPU (they are timings of this machine's CPU), board
results per preset (instruction counts, the same on every machine).

Every entry carries the key of the kernel code that measured it
(npukit.cpu.layer_kernels.kernel_code_key). The file is shared by every
npukit on the machine (other checkouts, older releases), whose kernels may
run the same choice differently: a compile takes only the entries of its own
kernel code and says how many others it left (``choices_with_notes``).

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
    # The kernel code that measured it (layer_kernels.kernel_code_key); "" for entries written before
    # entries carried it, which no compile takes.
    kernels: str = field(default_factory=lambda: _current_kernels())

    def to_json(self) -> dict:
        return {"choice": self.choice.to_json(), "measured": self.measured, "unit": self.unit, "source": self.source,
                "kernels": self.kernels}

    @staticmethod
    def from_json(d: dict) -> "TunedLayer":
        return TunedLayer(KernelChoice.from_json(d["choice"]), dict(d.get("measured", {})), d.get("unit", ""),
                          d.get("source", ""), str(d.get("kernels", "")))


def _current_kernels() -> str:
    from npukit.cpu.layer_kernels import kernel_code_key

    return kernel_code_key()


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
        """Layer key -> the tuned choice, for one preset: the entries this
        npukit's kernel code measured."""
        return self.choices_with_notes(preset)[0]

    def choices_with_notes(self, preset: CpuPreset) -> tuple[dict[str, KernelChoice], list[str]]:
        """``choices`` and, when entries of other kernel code were left out,
        a note that says how many and why."""
        current = _current_kernels()
        layers = self.sections.get(section_name(preset), {})
        taken = {key: layer.choice for key, layer in layers.items() if layer.kernels == current}
        notes = []
        if len(taken) < len(layers):
            others = sorted({layer.kernels or "none" for layer in layers.values() if layer.kernels != current})
            notes.append(f"{self.path}: {len(layers) - len(taken)} tuning entries for {section_name(preset)} were "
                         f"measured with other kernel code (kernels {', '.join(others)}; this npukit's are "
                         f"{current}) and are not used: run `npukit tune` again to tune these layers")
        return taken, notes

    def record(self, preset: CpuPreset, key: str, layer: TunedLayer) -> None:
        self.sections.setdefault(section_name(preset), {})[key] = layer

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"format": FORMAT, "sections": {name: {key: layer.to_json() for key, layer in sorted(layers.items())}
                                               for name, layers in sorted(self.sections.items())}}
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(data, indent=1) + "\n")
        temporary.replace(self.path)
