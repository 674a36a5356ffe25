"""Writes <name>_model.h/.c: the per-model C API over npukit's runtime.

An application calls ``<name>_load(runtime)`` and ``<name>_run(runtime,
inputs, outputs)`` with plain byte buffers; shapes, element types and the
entry point come from the compile.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2
import numpy as np

from npukit.frontends.signature import EntryPoint, TensorSpec

if TYPE_CHECKING:
    from npukit.codegen.memory_plan import MemoryPlan
    from npukit.stack.executables_stack import DispatchStack

# HAL element types: (numerical type << 24) | bits.
_ELEMENT_TYPES = {
    "bool": (0x13, 8),
    "int8": (0x11, 8),
    "uint8": (0x12, 8),
    "int16": (0x11, 16),
    "uint16": (0x12, 16),
    "int32": (0x11, 32),
    "uint32": (0x12, 32),
    "int64": (0x11, 64),
    "uint64": (0x12, 64),
    "float16": (0x21, 16),
    "bfloat16": (0x22, 16),
    "float32": (0x21, 32),
    "float64": (0x21, 64),
    "complex64": (0x23, 64),
    "complex128": (0x23, 128),
    "float8_e5m2": (0x24, 8),
    "float8_e4m3fn": (0x25, 8),
    "float8_e5m2fnuz": (0x26, 8),
    "float8_e4m3fnuz": (0x27, 8),
    "float8_e8m0fnu": (0x28, 8),
}

_QUERY = re.compile(r"(?<![\w$])([A-Za-z_][\w$]*_library_query)\s*\(")


def hal_element_type(dtype: str) -> int:
    try:
        numerical, bits = _ELEMENT_TYPES[dtype]
    except KeyError:
        raise ValueError(f"tensors of dtype {dtype} cannot cross npukit's runtime API") from None
    return (numerical << 24) | bits


def tensor_bytes(spec: TensorSpec) -> int:
    """Bytes of a statically shaped tensor crossing the runtime API."""
    if any(d is None for d in spec.shape):
        raise ValueError(f"tensor '{spec.name}' has a dynamic shape; the C wrapper needs static shapes")
    count = int(np.prod(spec.shape)) if spec.shape else 1
    bits = hal_element_type(spec.dtype) & 0xFF
    return (count * bits + 7) // 8


def _tensor(spec: TensorSpec) -> dict:
    return {
        "name": spec.name,
        "dtype": spec.dtype,
        "shape": list(spec.shape),
        "element_type": hal_element_type(spec.dtype),
        "bytes": tensor_bytes(spec),
    }


def static_library_queries(header: Path) -> list[str]:
    """The query functions a generated <name>_executables.h declares."""
    return sorted(set(_QUERY.findall(header.read_text())))


def write_model_wrapper(
    directory: Path, name: str, entry: EntryPoint, static_header: Path | None, embedded: bool = False,
    mynpu_sram_bytes: int | None = None, memory_plan: "MemoryPlan | None" = None,
    dispatch_stack: "DispatchStack | None" = None,
) -> list[Path]:
    """Writes <name>_model.h/.c; |embedded| artifacts register the ELF loader,
    mynpu artifacts the mynpu simulator with |mynpu_sram_bytes| of SRAM; with
    |memory_plan| the header states <NAME>_ARENA_SIZE and loading the model
    puts the plan in use; with |dispatch_stack| it states
    <NAME>_DISPATCH_STACK_SIZE."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("npukit.codegen", "templates"),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    inputs = [_tensor(t) for t in entry.inputs]
    outputs = [_tensor(t) for t in entry.outputs]
    context = {
        "name": name,
        "NAME": name.upper(),
        "entry": entry.name,
        "inputs": inputs,
        "outputs": outputs,
        "max_rank": max([len(t["shape"]) for t in inputs] + [1]),
        "static_header": static_header.name if static_header else None,
        "queries": static_library_queries(static_header) if static_header else [],
        "embedded": embedded,
        "mynpu_sram_bytes": mynpu_sram_bytes,
        "plan": memory_plan,
        "stack": dispatch_stack,
    }
    header = directory / f"{name}_model.h"
    source = directory / f"{name}_model.c"
    header.write_text(env.get_template("model.h.j2").render(**context))
    source.write_text(env.get_template("model.c.j2").render(**context))
    return [header, source]
