"""The catalogue of every zoo model: the MLPerf Tiny models and the
third-party models in the shared models directory, and the generated ones.

Each record's figures are read from the file itself (operators, arithmetic,
MACs, weight bytes, peak activation bytes, recurrence), not taken from what
a generator meant to make. ``python -m tests.zoo.catalogue`` prints the table
(building the generated models first when the cache lacks them).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from .specs import GeneratedModel, generated_models

REPO = Path(__file__).resolve().parents[2]

MIB = 1 << 20
KIB = 1 << 10
# The board a model must fit: 4 MiB of flash and 4 MiB of RAM. The flash also
# holds code (npukit's runtime, the kernels, the application) and the RAM a
# stack and the runtime's state: allowances for both are kept free.
BOARD_FLASH = 4 * MIB
BOARD_RAM = 4 * MIB
CODE_ALLOWANCE = 512 * KIB
RAM_ALLOWANCE = 128 * KIB
# Above these a model that fits is still flagged as large for a
# microcontroller (most zoo models have a few M MACs and well under 1 MiB).
LARGE_MACS = 20_000_000
LARGE_WEIGHT_BYTES = 1 * MIB

# The shared models: source, family, description (README.md beside them).
SHARED_MODELS: dict[str, tuple[str, str, str]] = {
    "kws_int8": ("mlperf-tiny", "ds-cnn", "MLPerf Tiny keyword spotting DS-CNN, int8"),
    "kws_f32": ("mlperf-tiny", "ds-cnn", "MLPerf Tiny keyword spotting DS-CNN, float (int8 weights in .tflite)"),
    "resnet8_int8": ("mlperf-tiny", "resnet", "MLPerf Tiny image classification ResNet-8, int8"),
    "resnet8_f32": ("mlperf-tiny", "resnet", "MLPerf Tiny image classification ResNet-8, float"),
    "hello_world_int8": ("third-party", "mlp", "TFLM hello_world: three tiny fully connected layers"),
    "keyword_scrambled_8bit": ("third-party", "svdf", "TFLM keyword model with SVDF layers, int16 input"),
    "micro_speech_quantized": ("third-party", "tiny-conv", "TFLM micro_speech: depthwise (multiplier 8) + FC"),
    "mobilenet_v2_quantized_1x3x224x224": ("third-party", "mobilenet-v2", "PyTorch MobileNetV2 exported to int8 TFLite"),
    "seanet_conv0_int16x8": ("third-party", "seanet-layer", "one int16x8 CONV_2D from SEANet"),
    "seanet_leaky_relu0_int16x8": ("third-party", "seanet-layer", "one int16 LEAKY_RELU from SEANet"),
    "trained_lstm_int8": ("third-party", "lstm", "TFLM mnist_lstm: int8 sequence LSTM"),
}
# Real input ranges of the shared models with float inputs (from the int8
# models' input quantization: kws 0.5847 * (q - 83), resnet8 q + 128).
SHARED_FLOAT_INPUT_RANGES: dict[str, tuple[float, float]] = {
    "kws_f32": (-122.8, 25.7),
    "resnet8_f32": (0.0, 255.0),
}


def shared_models_dir() -> Path:
    return Path(os.environ.get("NPUKIT_MODELS_DIR", REPO.parent / "shared" / "models"))


@dataclass(frozen=True)
class ZooEntry:
    """A zoo model before its file is read (a generated one need not exist yet)."""

    name: str
    source: str  # "mlperf-tiny", "third-party" or "generated"
    family: str
    format: str  # "tflite" or "onnx"
    description: str
    # The range float inputs are drawn from; None for integer inputs (their
    # whole range is used).
    input_range: tuple[float, float] | None
    shared_path: Path | None = None
    generated: GeneratedModel | None = None

    def path(self) -> Path:
        """The model's file, generated first if it is a generated model not yet in the cache."""
        if self.generated is not None:
            from .generator import build

            return build(self.generated)
        assert self.shared_path is not None
        return self.shared_path


@dataclass(frozen=True)
class ZooRecord:
    name: str
    source: str
    family: str
    format: str
    description: str
    path: Path
    arithmetic: str  # "int8", "int16x8", "float32" or "mixed"
    operators: tuple[str, ...]
    macs: int
    weight_bytes: int
    peak_activation_bytes: int
    recurrent: bool
    input_range: tuple[float, float] | None
    # Why the model's oracle cannot run it (read from the file), if it cannot.
    oracle_limitations: tuple[str, ...] = ()

    @property
    def fits_board(self) -> bool:
        return (self.weight_bytes + CODE_ALLOWANCE <= BOARD_FLASH
                and self.peak_activation_bytes + RAM_ALLOWANCE <= BOARD_RAM)

    @property
    def size_class(self) -> str:
        """"small", "large" (fits the 4 MiB board but is above the usual
        microcontroller model) or "too-big" (does not fit it)."""
        if not self.fits_board:
            return "too-big"
        if self.macs > LARGE_MACS or self.weight_bytes > LARGE_WEIGHT_BYTES:
            return "large"
        return "small"


def _float_input_range(generated: GeneratedModel) -> tuple[float, float] | None:
    if generated.form in ("int8", "int8-per-tensor", "int16x8"):
        return None
    return generated.architecture.input_range


def shared_entries(directory: Path | None = None) -> list[ZooEntry]:
    """Every .tflite and .onnx file in the shared models directory and its
    zoo/ folder. A missing directory is an error (the zoo needs it)."""
    directory = directory or shared_models_dir()
    files = sorted(directory.glob("*.tflite")) + sorted(directory.glob("*.onnx")) + \
        sorted((directory / "zoo").glob("*.tflite")) + sorted((directory / "zoo").glob("*.onnx"))
    if not files:
        raise FileNotFoundError(
            f"no shared models in {directory}; set NPUKIT_MODELS_DIR to the directory holding "
            "kws_int8.tflite, ... and zoo/"
        )
    entries = []
    for path in files:
        source, family, description = SHARED_MODELS.get(
            path.stem, ("third-party" if path.parent.name == "zoo" else "mlperf-tiny", "unclassified", "")
        )
        entries.append(ZooEntry(
            name=f"{path.stem}.{path.suffix[1:]}", source=source, family=family, format=path.suffix[1:],
            description=description, input_range=SHARED_FLOAT_INPUT_RANGES.get(path.stem), shared_path=path,
        ))
    return entries


def generated_entries() -> list[ZooEntry]:
    return [
        ZooEntry(name=g.file_name, source="generated", family=g.family, format=g.format,
                 description=f"{g.architecture.description} ({g.form})", input_range=_float_input_range(g),
                 generated=g)
        for g in generated_models()
    ]


def entries() -> list[ZooEntry]:
    return shared_entries() + generated_entries()


_RECORDS: dict[tuple[str, Path, int, int], ZooRecord] = {}


def read_record(entry: ZooEntry) -> ZooRecord:
    """The entry's record, read from its file (generated first if needed)."""
    path = entry.path()
    stat = path.stat()
    key = (entry.name, path, stat.st_mtime_ns, stat.st_size)
    if key not in _RECORDS:
        if entry.format == "tflite":
            from .tflite_reader import TFLiteModel

            model = TFLiteModel(path)
        elif entry.format == "onnx":
            from .onnx_reader import OnnxModel

            model = OnnxModel(path)
        else:
            raise ValueError(f"{path}: unknown model format {entry.format!r}")
        _RECORDS[key] = ZooRecord(
            name=entry.name, source=entry.source, family=entry.family, format=entry.format,
            description=entry.description, path=path, arithmetic=model.arithmetic,
            operators=model.operator_names, macs=model.macs, weight_bytes=model.weight_bytes,
            peak_activation_bytes=model.peak_activation_bytes, recurrent=model.recurrent,
            input_range=entry.input_range, oracle_limitations=model.oracle_limitations,
        )
    return _RECORDS[key]


def catalogue() -> list[ZooRecord]:
    """Every zoo model's record (generated models built first when missing)."""
    from .generator import build_all

    build_all()
    return [read_record(entry) for entry in entries()]


def format_table(records: list[ZooRecord], operators: bool = True) -> str:
    header = ["model", "source", "format", "arithmetic", "family", "MACs", "weights KiB", "peak act. KiB",
              "recurrent", "size class"] + (["operators"] if operators else [])
    rows = [header, ["---"] * len(header)]
    for r in records:
        rows.append([
            r.name, r.source, r.format, r.arithmetic, r.family, f"{r.macs:,}", f"{r.weight_bytes / KIB:,.1f}",
            f"{r.peak_activation_bytes / KIB:,.1f}", "yes" if r.recurrent else "no", r.size_class,
        ] + ([" ".join(r.operators)] if operators else []))
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.zoo.catalogue", description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-operators", action="store_true", help="leave out the operators column")
    args = parser.parse_args(argv)
    print(format_table(catalogue(), operators=not args.no_operators))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
