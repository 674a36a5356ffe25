"""Recognises a model file's format from its name and its first bytes."""

from __future__ import annotations

import enum
from pathlib import Path

from npukit.errors import ModelError

_MLIR_BYTECODE_MAGIC = b"ML\xefR"
_TFLITE_IDENTIFIER = b"TFL3"


class ModelFormat(str, enum.Enum):
    ONNX = "onnx"
    TFLITE = "tflite"
    MLIR = "mlir"
    MLIR_BYTECODE = "mlirbc"


_SUFFIXES = {
    ".onnx": ModelFormat.ONNX,
    ".tflite": ModelFormat.TFLITE,
    ".mlir": ModelFormat.MLIR,
    ".mlirbc": ModelFormat.MLIR_BYTECODE,
}


def read_model_head(path: Path, size: int = 64) -> bytes:
    if not path.exists():
        raise ModelError(f"{path}: no such file")
    if path.is_dir():
        raise ModelError(f"{path}: is a directory, not a model file")
    try:
        with path.open("rb") as f:
            return f.read(size)
    except OSError as e:
        raise ModelError(f"{path}: cannot read the model: {e.strerror or e}") from None


def detect_format(path: Path) -> ModelFormat:
    """The model's format; ModelError when missing, unreadable or unrecognised."""
    head = read_model_head(path)
    if not head:
        raise ModelError(f"{path}: the file is empty")
    if head.startswith(_MLIR_BYTECODE_MAGIC):
        return ModelFormat.MLIR_BYTECODE
    if head[4:8] == _TFLITE_IDENTIFIER:
        return ModelFormat.TFLITE
    by_suffix = _SUFFIXES.get(path.suffix.lower())
    if by_suffix is ModelFormat.ONNX:
        return ModelFormat.ONNX
    if by_suffix is ModelFormat.MLIR and _looks_like_text(head):
        return ModelFormat.MLIR
    if by_suffix is ModelFormat.TFLITE:
        raise ModelError(f"{path}: not a TFLite flatbuffer (no 'TFL3' identifier)")
    if by_suffix is ModelFormat.MLIR_BYTECODE:
        raise ModelError(f"{path}: not MLIR bytecode (bad magic number)")
    if by_suffix is ModelFormat.MLIR:
        raise ModelError(f"{path}: not MLIR text")
    raise ModelError(
        f"{path}: model format not recognised; npukit reads .onnx, .tflite, .mlir and .mlirbc files"
    )


def _looks_like_text(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        # A multi-byte character may be cut at the end of the sample.
        try:
            head[:-3].decode("utf-8")
        except UnicodeDecodeError:
            return False
    return b"\x00" not in head
