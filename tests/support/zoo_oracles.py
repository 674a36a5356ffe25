"""Reference outputs of zoo models on seeded inputs, from oracles nobody here
wrote: TFLite's reference kernels (or its default interpreter, XNNPACK on one
thread) for .tflite, onnxruntime with graph optimizations off for .onnx.

Inputs span an integer input's whole range (int8, int16, ...) and, for a
float input, the range the caller gives. Runs can be cached as .npz files
keyed on the model's bytes, the seed, the count, the range, this code and the
oracles' versions.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from .oracles import OnnxRuntimeReference, TFLiteReference

_ONNX_TYPES = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int8)": np.int8, "tensor(uint8)": np.uint8, "tensor(int16)": np.int16, "tensor(uint16)": np.uint16,
}
#: Types of inputs given fixed values (Oracle's input_values): configuration inputs such as a sample rate.
_FIXED_TYPES = {**_ONNX_TYPES, "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_}


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass(frozen=True)
class ReferenceRun:
    inputs: list[list[np.ndarray]]  # one list of model inputs per sample
    outputs: list[list[np.ndarray]]  # one list of model outputs per sample


class Oracle:
    """A model's reference implementation: ``oracle(inputs) -> outputs``."""

    def __init__(self, path: Path, kernels: str = "reference", input_shapes: dict | None = None,
                 input_values: dict | None = None):
        """``input_shapes`` (input name -> shape) size an ONNX model's unknown dimensions (else 1);
        ``input_values`` (input name -> value) are fed as they are and drawn for no sample (the compiled
        model has them as constants: npukit.compile's input_values)."""
        self.path = Path(path)
        self.fixed = {}
        self.kernels = kernels
        if self.path.suffix == ".tflite":
            threads = 1 if kernels == "default" else None
            self._tflite = TFLiteReference(self.path, kernels=kernels, num_threads=threads)
            self.inputs = [InputSpec(d["name"], tuple(int(x) for x in d["shape"]), np.dtype(d["dtype"]))
                           for d in self._tflite.inputs]
        elif self.path.suffix == ".onnx":
            if kernels != "reference":
                raise ValueError("ONNX models have one oracle: onnxruntime without graph optimizations")
            self._onnx = OnnxRuntimeReference(self.path)
            self.inputs = []
            for value in self._onnx.session.get_inputs():
                if value.name in (input_values or {}):
                    self.fixed[value.name] = np.asarray(input_values[value.name], _FIXED_TYPES[value.type])
                    continue
                if value.type not in _ONNX_TYPES:
                    raise ValueError(f"{self.path}: input {value.name!r} has type {value.type}, not a tensor type "
                                     "the zoo's inputs are drawn for")
                shape = tuple(d if isinstance(d, int) and d > 0 else 1 for d in value.shape)
                shape = tuple((input_shapes or {}).get(value.name, shape))
                self.inputs.append(InputSpec(value.name, shape, np.dtype(_ONNX_TYPES[value.type])))
        else:
            raise ValueError(f"{self.path}: no oracle for {self.path.suffix or 'extension-less'} files")

    def __call__(self, xs: list[np.ndarray]) -> list[np.ndarray]:
        if self.path.suffix == ".tflite":
            return self._tflite.run(xs)
        if self.fixed:
            drawn = iter(xs)
            xs = [self.fixed[v.name] if v.name in self.fixed else next(drawn) for v in self._onnx.session.get_inputs()]
        return [np.asarray(y) for y in self._onnx(*xs)]


def seeded_inputs(specs: list[InputSpec], seed: int, count: int,
                  float_range: tuple[float, float] | None) -> list[list[np.ndarray]]:
    """``count`` samples over an integer input's whole range or over
    ``float_range`` for a float input. The first sample is uniform over the
    whole range; each later one is uniform over a random part of it (a
    random centre, an eighth to a half of the range wide), so that samples
    differ in level and spread as real inputs do, not only in noise that a
    model's pooling averages away."""
    rng = np.random.default_rng(seed)
    samples = []
    for index in range(count):
        sample = []
        for spec in specs:
            if np.issubdtype(spec.dtype, np.integer):
                if spec.dtype.itemsize > 2:
                    raise ValueError(f"input {spec.name!r} is {spec.dtype}: its whole range is no useful input")
                info = np.iinfo(spec.dtype)
                low, high = float(info.min), float(info.max)
            elif np.issubdtype(spec.dtype, np.floating):
                if float_range is None:
                    raise ValueError(f"input {spec.name!r} is {spec.dtype}: a float input needs a value range")
                low, high = float_range
            else:
                raise ValueError(f"input {spec.name!r} is {spec.dtype}: no seeded inputs for that type")
            if index > 0:
                width = (high - low) * rng.uniform(0.125, 0.5)
                centre = rng.uniform(low + width / 2, high - width / 2)
                low, high = centre - width / 2, centre + width / 2
            if np.issubdtype(spec.dtype, np.integer):
                x = rng.integers(int(np.ceil(low)), int(np.floor(high)), size=spec.shape, endpoint=True)
            else:
                x = rng.uniform(low, high, size=spec.shape)
            sample.append(x.astype(spec.dtype))
        samples.append(sample)
    return samples


def _oracle_key() -> str:
    digest = hashlib.sha256()
    for source in (Path(__file__), Path(__file__).with_name("oracles.py")):
        digest.update(source.read_bytes())
    for name in ("ai-edge-litert", "onnxruntime", "numpy"):
        try:
            digest.update(f"{name}={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name}=absent".encode())
    return digest.hexdigest()[:12]


def _cache_file(directory: Path, path: Path, kernels: str, seed: int, count: int,
                float_range: tuple[float, float] | None, input_shapes: dict | None = None) -> Path:
    model = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    fixed = (sorted(input_shapes.items()),) if input_shapes else ()
    settings = hashlib.sha256(repr((kernels, seed, count, float_range, *fixed)).encode()).hexdigest()[:12]
    return directory / f"{path.stem}-{model}-{settings}-{_oracle_key()}.npz"


def reference_run(path: Path, float_range: tuple[float, float] | None, seed: int = 0, count: int = 3,
                  kernels: str = "reference", cache_dir: Path | None = None,
                  input_shapes: dict | None = None, input_values: dict | None = None) -> ReferenceRun:
    """The oracle's outputs on ``count`` seeded inputs (``input_shapes``, ``input_values``: see Oracle), read from
    ``cache_dir`` when an equal run was stored there, stored there otherwise."""
    path = Path(path)
    fixed = {**(input_shapes or {}), **{f"value:{k}": v for k, v in (input_values or {}).items()}}
    cached = _cache_file(cache_dir, path, kernels, seed, count, float_range, fixed) if cache_dir else None
    if cached is not None and cached.exists():
        with np.load(cached) as stored:
            return ReferenceRun(
                [[stored[f"in{s}_{i}"] for i in range(int(stored["inputs"]))] for s in range(count)],
                [[stored[f"out{s}_{o}"] for o in range(int(stored["outputs"]))] for s in range(count)],
            )
    oracle = Oracle(path, kernels, input_shapes, input_values)
    inputs = seeded_inputs(oracle.inputs, seed, count, float_range)
    outputs = [oracle(sample) for sample in inputs]
    if cached is not None:
        arrays = {"inputs": np.array(len(oracle.inputs)), "outputs": np.array(len(outputs[0]))}
        for s in range(count):
            arrays.update({f"in{s}_{i}": x for i, x in enumerate(inputs[s])})
            arrays.update({f"out{s}_{o}": y for o, y in enumerate(outputs[s])})
        cached.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{cached.stem}.", suffix=".npz", dir=cached.parent)
        with os.fdopen(fd, "wb") as stream:
            np.savez(stream, **arrays)
        os.replace(temporary, cached)
    return ReferenceRun(inputs, outputs)


def dequantized_steps(path: Path) -> list[float | None]:
    """Per output of an ONNX model: the scale of the DequantizeLinear that
    produces it (one quantization step of a dequantized float output), else
    None (an int8 output)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path), load_external_data=False)
    initializers = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    producers = {out: node for node in model.graph.node for out in node.output}
    steps = []
    for output in model.graph.output:
        node = producers.get(output.name)
        scale = initializers.get(node.input[1]) if node is not None and node.op_type == "DequantizeLinear" else None
        steps.append(float(np.max(scale)) if scale is not None else None)
    return steps
