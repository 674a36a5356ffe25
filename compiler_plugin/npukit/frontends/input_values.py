"""Inputs fixed to a value by the user: a model's configuration inputs made constants.

Some models take configuration as inputs: Silero VAD takes its sample rate
(``sr``, int64) and branches on it with ONNX ``If`` nodes, which IREE 3.13
cannot lower. An application that always feeds the same value can say so:
``--input-value sr=16000`` (``input_values`` in ``npukit.compile``) makes
the input a constant of the model, so that the computations on it are done
at import (onnx_constant_folding) and a branch on it becomes the branch
taken (onnx_constant_branches). The compiled model no longer has that input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from npukit.errors import ModelError, TargetError
from npukit.frontends.input_shapes import declared_dims, shape_text

#: Input name -> its values (flat, in the input's declared shape).
InputValues = Mapping[str, tuple[float, ...]]


def parse_input_value(text: str) -> tuple[str, tuple[float, ...]]:
    """``NAME=VALUE`` or ``NAME=V1,V2,...`` (values in the input's declared shape, row-major)."""
    name, sep, values = text.partition("=")
    try:
        parsed = tuple(float(v) for v in values.split(",")) if values.strip() else ()
    except ValueError:
        parsed = ()
    if not sep or not name or not parsed:
        raise TargetError(f"--input-value '{text}': give NAME=VALUE (or NAME=V1,V2,... in the input's shape), "
                          "e.g. sr=16000")
    return name, parsed


def input_values_from(values: "Sequence[str] | Mapping | None") -> dict[str, tuple[float, ...]]:
    """The values of ``--input-value`` texts or of a mapping (name -> a number or a sequence of numbers)."""
    if not values:
        return {}
    if not isinstance(values, Mapping):
        pairs = [parse_input_value(v) for v in values]
    else:
        pairs = []
        for name, value in values.items():
            flat = value if isinstance(value, (list, tuple)) else getattr(value, "ravel", lambda: [value])()
            try:
                pairs.append((name, tuple(float(v) for v in flat)))
            except (TypeError, ValueError):
                raise TargetError(f"input_values: the value of input {name!r} must be numbers, got {value!r}") from None
    found: dict[str, tuple[float, ...]] = {}
    for name, value in pairs:
        if name in found:
            raise TargetError(f"the value of input {name} is given twice")
        found[name] = value
    return found


def fix_onnx_input_values(graph, path: Path, values: InputValues) -> list[str]:
    """Makes the named inputs of ``graph`` (an ONNX GraphProto) constants; returns notes."""
    import numpy as np
    from onnx import helper, numpy_helper

    if not values:
        return []
    initializers = {i.name for i in graph.initializer}
    inputs = {v.name: v for v in graph.input if v.name not in initializers}
    notes = []
    for name, flat in values.items():
        value = inputs.get(name)
        if value is None:
            raise ModelError(f"{path}: the model has no input '{name}'; its inputs are {', '.join(inputs)}")
        tensor_type = value.type.tensor_type
        dims = declared_dims(value)
        shape = shape_text(dims) or "a scalar"
        if any(d is None for d in dims):
            raise ModelError(f"{path}: input '{name}' ({shape}) has dimensions of unknown size; fix them with "
                             "--input-shape before giving its value")
        count = int(np.prod(dims)) if dims else 1
        if len(flat) != count:
            raise ModelError(f"{path}: input '{name}' ({shape}) holds {count} values, {len(flat)} were given")
        dtype = helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
        array = np.asarray(flat, np.float64)
        if np.issubdtype(dtype, np.integer) and (np.any(array != np.round(array)) or np.any(array < np.iinfo(dtype).min)
                                                 or np.any(array > np.iinfo(dtype).max)):
            raise ModelError(f"{path}: input '{name}' is {np.dtype(dtype).name}; {list(flat)} are not such values")
        graph.input.remove(value)
        graph.initializer.append(numpy_helper.from_array(array.astype(dtype).reshape(dims), name))
        shown = ",".join(f"{v:g}" for v in flat[:8]) + (",..." if len(flat) > 8 else "")
        notes.append(f"input {name}: fixed to {shown} (a constant of the model, no longer an input)")
    return notes


def refuse_input_values(path: Path, values: InputValues) -> None:
    """For formats other than ONNX: input values are not theirs to take."""
    if values:
        raise ModelError(f"{path}: --input-value makes ONNX inputs constants; this model is not an ONNX model "
                         f"(inputs given: {', '.join(values)})")
