"""Entry-point signatures: the shapes and dtypes a compiled function takes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_MLIR_ELEMENT_TYPES = {
    "i1": "bool",
    "i8": "int8",
    "si8": "int8",
    "ui8": "uint8",
    "i16": "int16",
    "si16": "int16",
    "ui16": "uint16",
    "i32": "int32",
    "si32": "int32",
    "ui32": "uint32",
    "i64": "int64",
    "si64": "int64",
    "ui64": "uint64",
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "complex<f32>": "complex64",
    "complex<f64>": "complex128",
}

_BUILTIN_TENSOR = re.compile(r"^tensor<((?:[0-9?]+x)*)([a-z0-9]+|complex<[a-z0-9]+>)>$")
_TORCH_VTENSOR = re.compile(r"^!torch\.vtensor<\[([0-9?,\s-]*)\],([a-z0-9]+|complex<[a-z0-9]+>)>$")


@dataclass
class TensorSpec:
    shape: list[int | None]
    dtype: str
    name: str = ""

    def to_json(self) -> dict:
        d = {"shape": self.shape, "dtype": self.dtype}
        if self.name:
            d["name"] = self.name
        return d

    @staticmethod
    def from_json(d: dict) -> "TensorSpec":
        return TensorSpec(shape=list(d["shape"]), dtype=d["dtype"], name=d.get("name", ""))


@dataclass
class EntryPoint:
    name: str
    inputs: list[TensorSpec] = field(default_factory=list)
    outputs: list[TensorSpec] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "inputs": [t.to_json() for t in self.inputs],
            "outputs": [t.to_json() for t in self.outputs],
        }

    @staticmethod
    def from_json(d: dict) -> "EntryPoint":
        return EntryPoint(
            name=d["name"],
            inputs=[TensorSpec.from_json(t) for t in d["inputs"]],
            outputs=[TensorSpec.from_json(t) for t in d["outputs"]],
        )


def tensor_spec_from_mlir_type(type_text: str) -> TensorSpec | None:
    """Parses ``tensor<1x4xi8>`` or ``!torch.vtensor<[1,4],si8>``; None for other types.

    An element type with no numpy equivalent keeps its MLIR spelling as dtype.
    """
    text = type_text.strip()
    m = _BUILTIN_TENSOR.match(text)
    if m:
        dims = [d for d in m.group(1).split("x") if d]
        element = m.group(2)
    else:
        m = _TORCH_VTENSOR.match(text)
        if not m:
            return None
        dims = [d.strip() for d in m.group(1).split(",") if d.strip()]
        element = m.group(2)
    dtype = _MLIR_ELEMENT_TYPES.get(element, element)
    shape = [None if d in ("?", "-1") else int(d) for d in dims]
    return TensorSpec(shape=shape, dtype=dtype)
