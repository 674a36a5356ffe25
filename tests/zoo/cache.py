"""Where generated models live, and writing them safely from several processes.

Models are cached under ``$NPUKIT_ZOO_DIR/<key>`` (default
``~/.cache/npukit/zoo/<key>``). The key hashes the generator's source files and
the versions of the tools that make the bytes (TensorFlow, Keras, tf2onnx,
onnxruntime, onnx, numpy), so a change to either starts a fresh directory
instead of reusing models the current generator would not make.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

ZOO_PACKAGE = Path(__file__).resolve().parent

# The modules whose code decides a generated model's bytes.
GENERATOR_SOURCES = (
    "cache.py",
    "specs.py",
    "keras_seeding.py",
    "keras_families.py",
    "keras_operator_models.py",
    "tflite_conversion.py",
    "onnx_conversion.py",
    "onnx_canonical.py",
    "generator.py",
)

# The distributions whose versions decide a generated model's bytes.
GENERATOR_TOOLS = ("tensorflow-cpu", "tensorflow", "keras", "tf2onnx", "onnxruntime", "onnx", "numpy")


def installed_version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "absent"


def content_key(sources: tuple[Path, ...], distributions: tuple[str, ...]) -> str:
    """16 hex digits of a hash over the files' bytes and the distributions' versions."""
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for name in distributions:
        digest.update(f"{name}={installed_version(name)}\0".encode())
    return digest.hexdigest()[:16]


def generator_key() -> str:
    return content_key(tuple(ZOO_PACKAGE / name for name in GENERATOR_SOURCES), GENERATOR_TOOLS)


def zoo_root() -> Path:
    configured = os.environ.get("NPUKIT_ZOO_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "npukit" / "zoo"


def zoo_dir() -> Path:
    """The directory of the current generator's models (created on demand)."""
    path = zoo_root() / generator_key()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise RuntimeError(
            f"cannot create the model zoo's cache directory {path} ({error}); "
            "set NPUKIT_ZOO_DIR to a writable directory"
        ) from error
    return path


def atomic_write(path: Path, data: bytes) -> None:
    """Writes ``data`` to a temporary file beside ``path`` and renames it into
    place, so a reader sees either no file or the whole file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (created if missing), held for
    the block: two processes building the same model take turns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as stream:
        fcntl.flock(stream.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(stream.fileno(), fcntl.LOCK_UN)
