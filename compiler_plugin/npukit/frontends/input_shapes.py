"""Input shapes given by the user for a model's unknown dimensions.

ONNX exporters leave dimensions unknown (a batch, an image's height and
width, a sequence length). IREE compiles such a model with dynamic shapes,
which costs speed and, for some operators, fails in IREE's code generation
(a reflect pad of unknown length, a convolution whose workgroup count
cannot be expressed). ``--input-shape NAME=1x3x320x320`` (``input_shapes``
in ``npukit.compile``) fixes an input's shape before shape inference, so the
whole graph is compiled for that one shape; a dimension the model declares
must keep its size, and a named dimension (an ONNX ``dim_param`` such as
``batch``) given one size takes it in the other inputs that share its name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping, Sequence

from npukit.errors import ModelError, TargetError

#: Input name -> its shape; the name None stands for a model's only input.
InputShapes = Mapping["str | None", tuple[int, ...]]

_SEPARATORS = re.compile(r"[x,]")


def shape_text(shape) -> str:
    """A shape as the messages write it: 1x3x?x? (None: an unknown size)."""
    return "x".join("?" if d is None else str(d) for d in shape)


def declared_dims(value) -> list:
    """An ONNX graph value's declared dimensions (None: an unknown size; [] without a declared shape)."""
    if not value.type.HasField("tensor_type") or not value.type.tensor_type.HasField("shape"):
        return []
    return [d.dim_value if d.HasField("dim_value") else None for d in value.type.tensor_type.shape.dim]


def parse_input_shape(text: str) -> tuple[str | None, tuple[int, ...]]:
    """``NAME=1x3x320x320`` (or ``1,3,320,320``; the name may be left out when the model has one input)."""
    name, sep, dims = text.rpartition("=")
    if not sep:
        name = None
    parts = [p.strip() for p in _SEPARATORS.split(dims.strip())]
    if not dims.strip() or not all(p.isdigit() for p in parts) or any(int(p) == 0 for p in parts):
        raise TargetError(f"--input-shape '{text}': give NAME=D1xD2x... with positive sizes, e.g. x=1x3x224x224 "
                          "(NAME may be left out when the model has one input)")
    return (name or None), tuple(int(p) for p in parts)


def input_shapes_from(values: "Sequence[str] | Mapping | None") -> dict[str | None, tuple[int, ...]]:
    """The shapes of ``--input-shape`` values or of a mapping, checked for form (not yet against a model)."""
    if not values:
        return {}
    pairs = values.items() if isinstance(values, Mapping) else [parse_input_shape(v) for v in values]
    shapes: dict[str | None, tuple[int, ...]] = {}
    for name, shape in pairs:
        if name is not None and not isinstance(name, str):
            raise TargetError(f"input_shapes: input names are strings, got {name!r}")
        try:
            dims = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise TargetError(f"input_shapes: the shape of input {name!r} must be a sequence of sizes, "
                              f"got {shape!r}") from None
        if any(d <= 0 for d in dims) or any(isinstance(d, bool) for d in shape):
            raise TargetError(f"input_shapes: the shape of input {name!r} must have positive sizes, got {shape!r}")
        if name in shapes:
            raise TargetError(f"the shape of input {name or '(the only input)'} is given twice")
        shapes[name] = dims
    if None in shapes and len(shapes) > 1:
        raise TargetError("a shape without an input name is only for a model with one input; name every input "
                          "(NAME=D1xD2x...)")
    return shapes


def fix_onnx_input_shapes(graph, path: Path, shapes: InputShapes) -> list[str]:
    """Sets the shapes of ``graph``'s inputs (an ONNX GraphProto, before shape inference); returns notes."""
    if not shapes:
        return []
    initializers = {i.name for i in graph.initializer}
    inputs = [v for v in graph.input if v.name not in initializers]

    listing = ", ".join(f"{v.name} ({shape_text(declared_dims(v))})" for v in inputs)
    by_name = {v.name: v for v in inputs}
    if None in shapes:
        if len(inputs) != 1:
            raise ModelError(f"{path}: the model has {len(inputs)} inputs, {listing}; name the one whose shape "
                             "is given (--input-shape NAME=D1xD2x...)")
        shapes = {inputs[0].name: shapes[None]}
    symbols: dict[str, set[int]] = {}
    notes = []
    for name, shape in shapes.items():
        value = by_name.get(name)
        if value is None:
            raise ModelError(f"{path}: the model has no input '{name}'; its inputs are {listing}")
        if not value.type.HasField("tensor_type"):
            raise ModelError(f"{path}: input '{name}' is not a tensor; its shape cannot be set")
        tensor_type = value.type.tensor_type
        old = declared_dims(value)
        if tensor_type.HasField("shape") and len(old) != len(shape):
            raise ModelError(f"{path}: input '{name}' has {len(old)} dimensions ({shape_text(old)}), the shape "
                             f"given has {len(shape)} ({shape_text(shape)})")
        dims = list(tensor_type.shape.dim) if tensor_type.HasField("shape") else []
        for axis, size in enumerate(shape):
            if axis < len(dims) and old[axis] is not None and old[axis] != size:
                raise ModelError(f"{path}: input '{name}' has size {old[axis]} in dimension {axis} "
                                 f"({shape_text(old)}); the shape given ({shape_text(shape)}) must keep it")
            if axis < len(dims) and dims[axis].dim_param not in ("", "?"):
                symbols.setdefault(dims[axis].dim_param, set()).add(size)
        if not dims:
            for _ in shape:
                dims.append(tensor_type.shape.dim.add())
        for dim, size in zip(dims, shape):
            dim.Clear()
            dim.dim_value = size
        notes.append(f"input {name}: shape {shape_text(old) if old else 'unknown'} fixed to {shape_text(shape)}")
    # The other inputs' dimensions of a name given one size take that size ("?" names no dimension; a name
    # given several sizes, which onnxruntime accepts too, is left to shape inference).
    for value in inputs:
        if value.name in shapes or not value.type.HasField("tensor_type"):
            continue
        old = declared_dims(value)
        named = [d.dim_param for d in value.type.tensor_type.shape.dim if len(symbols.get(d.dim_param, ())) == 1]
        for dim in value.type.tensor_type.shape.dim:
            if dim.dim_param in named:
                (size,) = symbols[dim.dim_param]
                dim.Clear()
                dim.dim_value = size
        if named:
            notes.append(f"input {value.name}: shape {shape_text(old)} fixed to {shape_text(declared_dims(value))} "
                         f"(named dimensions {', '.join(sorted(set(named)))} as in the shapes given)")
    return notes


def dynamic_inputs_hint(entry_points) -> str:
    """For a failed compile: which inputs have unknown dimensions and how to fix them ('' when none has)."""
    dynamic = [t for e in entry_points or () for t in e.inputs if any(d is None for d in t.shape)]
    if not dynamic:
        return ""
    example = " ".join(f"--input-shape {t.name}={shape_text(1 if d is None else d for d in t.shape)}"
                       for t in dynamic)
    listing = ", ".join(f"{t.name} ({shape_text(t.shape)})" for t in dynamic)
    return (f"; the model's inputs have unknown dimensions ({listing}) and IREE compiles such models with "
            f"dynamic shapes, which some operators do not support: fix them, e.g. {example} (the sizes your "
            "application uses)")


def check_fixed_shapes(path: Path, entry_points, shapes: InputShapes) -> None:
    """For formats whose inputs have fixed shapes (.tflite; MLIR, whose signature fixes them: ``entry_points``
    None): shapes given must be the model's own."""
    if not shapes:
        return
    if entry_points is None:
        raise ModelError(f"{path}: --input-shape sets unknown dimensions of ONNX models; an MLIR module's function "
                         "signature fixes its input shapes (edit the signature instead)")
    inputs = [t for e in entry_points[:1] for t in e.inputs]
    listing = ", ".join(f"{t.name} ({shape_text(t.shape)})" for t in inputs)
    if None in shapes and len(inputs) == 1:
        shapes = {inputs[0].name: shapes[None]}
    for name, shape in shapes.items():
        match = next((t for t in inputs if t.name == name), None)
        if match is None or tuple(match.shape) != tuple(shape):
            raise ModelError(f"{path}: a .tflite model's inputs have fixed shapes, {listing}; --input-shape "
                             f"{name or ''}{'=' if name else ''}{shape_text(shape)} differs (re-export the model "
                             "for that shape)")
