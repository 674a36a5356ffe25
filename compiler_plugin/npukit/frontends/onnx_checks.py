"""Checks of a parsed ONNX model before ONNX's own C++ code or IREE reads it.

Protobuf parsing itself is safe (bounded by the file, nesting limited); what
the parsed messages claim is not checked by it. This module checks, in
Python, everything the ONNX checker, shape inference and IREE's importer
would otherwise trust:

- every text field is UTF-8 (proto2 strings are not validated by protobuf);
- opset and IR versions that ONNX knows;
- graphs (the main graph, subgraphs of If/Loop/Scan, local functions): every
  value defined once, every node input defined before it is used (so no
  dangling or cyclic reference), every graph output defined;
- tensors (initializers, constants, attribute tensors): a known element type,
  no negative dimension, the data's size matching the shape, external data
  inside the model's directory and within its file;
- declared and inferred shapes: no negative dimension, rank and size within
  npukit's limits (npukit.frontends.limits).

Each refusal is a ModelError (ModelLimitError for a limit) in one line that
names the file and where in the model the problem is.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from npukit.errors import ModelError
from npukit.frontends.limits import ModelLimits
from npukit.frontends.message_text import short

# ONNX TensorProto.DataType -> (name, bits per element, the typed field
# holding its values, values of that field per element). Strings have no size.
_TYPES: dict[int, tuple[str, int, str, int]] = {
    1: ("FLOAT", 32, "float_data", 1), 2: ("UINT8", 8, "int32_data", 1), 3: ("INT8", 8, "int32_data", 1),
    4: ("UINT16", 16, "int32_data", 1), 5: ("INT16", 16, "int32_data", 1), 6: ("INT32", 32, "int32_data", 1),
    7: ("INT64", 64, "int64_data", 1), 8: ("STRING", 0, "string_data", 1), 9: ("BOOL", 8, "int32_data", 1),
    10: ("FLOAT16", 16, "int32_data", 1), 11: ("DOUBLE", 64, "double_data", 1), 12: ("UINT32", 32, "uint64_data", 1),
    13: ("UINT64", 64, "uint64_data", 1), 14: ("COMPLEX64", 64, "float_data", 2),
    15: ("COMPLEX128", 128, "double_data", 2), 16: ("BFLOAT16", 16, "int32_data", 1),
    17: ("FLOAT8E4M3FN", 8, "int32_data", 1), 18: ("FLOAT8E4M3FNUZ", 8, "int32_data", 1),
    19: ("FLOAT8E5M2", 8, "int32_data", 1), 20: ("FLOAT8E5M2FNUZ", 8, "int32_data", 1),
    21: ("UINT4", 4, "int32_data", 1), 22: ("INT4", 4, "int32_data", 1), 23: ("FLOAT4E2M1", 4, "int32_data", 1),
    24: ("FLOAT8E8M0", 8, "int32_data", 1),
}
_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL


def _is_repeated(field) -> bool:
    flag = getattr(field, "is_repeated", None)
    return bool(flag) if flag is not None else field.label == field.LABEL_REPEATED


class _Scope:
    """Names visible in a graph: its own and those of the graphs around it."""

    def __init__(self, outer: "_Scope | None" = None) -> None:
        self.names: set[str] = set()
        self.outer = outer

    def __contains__(self, name: str) -> bool:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.names:
                return True
            scope = scope.outer
        return False


class OnnxChecks:
    def __init__(self, path: Path, limits: ModelLimits) -> None:
        self.path = path
        self.directory = path.resolve().parent
        self.limits = limits
        self.operators = 0
        self.values = 0
        self.constant_bytes = 0
        # Whether a tensor's data is in an external file (checked, to be read after the checks).
        self.uses_external_data = False

    # Errors -------------------------------------------------------------------------

    def fail(self, reason: str, where: str) -> ModelError:
        return ModelError(f"{self.path}: not a valid ONNX model: {reason} ({where})")

    def limit(self, what: str, value: int, name: str, unit: str = "") -> ModelError:
        return self.limits.exceeded(self.path, what, value, name, unit)

    # The model ----------------------------------------------------------------------

    def model(self, model) -> None:
        """Checks everything but inferred shapes (see ``shapes``)."""
        import onnx

        self.text(model)
        if model.ir_version < 1 or model.ir_version > onnx.IR_VERSION:
            raise self.fail(f"IR version {model.ir_version}; this ONNX release reads 1 to {onnx.IR_VERSION}",
                            "the model header")
        if not model.HasField("graph"):
            raise self.fail("no graph", "the model")
        newest = onnx.defs.onnx_opset_version()
        for opset in model.opset_import:
            if opset.domain in ("", "ai.onnx") and not 1 <= opset.version <= newest:
                raise self.fail(f"opset version {opset.version}; ONNX defines 1 to {newest}", "the opset imports")
        for i, function in enumerate(model.functions):
            scope = _Scope()
            scope.names.update(n for n in function.input if n)
            where = f"function {i} '{short(function.name)}'"
            self.nodes(function.node, scope, where)
            for name in function.output:
                if name and name not in scope:
                    raise self.fail(f"output '{short(name)}' is never computed", where)
        self.graph(model.graph, _Scope(), "the main graph")

    def text(self, message) -> None:
        """Every string field is UTF-8 (protobuf hands proto2 strings over as bytes when they are not)."""
        stack = [(message, "model")]
        while stack:
            msg, where = stack.pop()
            for field, value in msg.ListFields():
                if field.type == field.TYPE_STRING:
                    for s in (value if _is_repeated(field) else (value,)):
                        if not isinstance(s, str):
                            raise self.fail(f"the text of '{field.name}' is not UTF-8", where)
                elif field.type == field.TYPE_MESSAGE:
                    items = value if _is_repeated(field) else (value,)
                    for i, item in enumerate(items):
                        inner = f"{field.name} {i}" if _is_repeated(field) else field.name
                        stack.append((item, inner if where == "model" else f"{where}, {inner}"))

    def graph(self, graph, outer: _Scope, where: str) -> None:
        scope = _Scope(outer)
        for v in graph.input:
            self.define(scope, v.name, f"{where}, input '{short(v.name)}'", allow_again=False)
            self.value_type(v.type, f"{where}, input '{short(v.name)}'")
        for t in graph.initializer:
            # An initializer may repeat a graph input's name (it is the input's default).
            self.define(scope, t.name, f"{where}, initializer '{short(t.name)}'", allow_again=True)
            self.tensor(t, f"{where}, initializer '{short(t.name)}'")
        for s in graph.sparse_initializer:
            name = s.values.name
            self.define(scope, name, f"{where}, sparse initializer '{short(name)}'", allow_again=True)
            self.sparse_tensor(s, f"{where}, sparse initializer '{short(name)}'")
        self.nodes(graph.node, scope, where)
        for v in graph.output:
            if v.name not in scope:
                raise self.fail(f"graph output '{short(v.name)}' is never computed", where)
            self.value_type(v.type, f"{where}, output '{short(v.name)}'")
        for v in graph.value_info:
            self.value_type(v.type, f"{where}, value '{short(v.name)}'")

    def define(self, scope: _Scope, name: str, where: str, allow_again: bool) -> None:
        if not name:
            raise self.fail("a value without a name", where)
        if name in scope.names and not allow_again:
            raise self.fail(f"'{short(name)}' is defined twice", where)
        if name not in scope.names:
            self.values += 1
            if self.values > self.limits.tensors:
                raise self.limit("the model", self.values, "tensors", "values")
        scope.names.add(name)

    def nodes(self, nodes, scope: _Scope, where: str) -> None:
        for i, node in enumerate(nodes):
            self.operators += 1
            if self.operators > self.limits.operators:
                raise self.limit("the model", self.operators, "operators", "operators")
            at = f"{where}, node {i} ('{short(node.name)}', {short(node.op_type) or 'no operator'})"
            if not node.op_type:
                raise self.fail("a node without an operator type", at)
            for name in node.input:
                if name and name not in scope:
                    raise self.fail(f"input '{short(name)}' is not computed before the node (a dangling or "
                                    "cyclic reference)", at)
            for attribute in node.attribute:
                self.attribute(attribute, scope, at)
            for name in node.output:
                if name:
                    self.define(scope, name, at, allow_again=False)

    def attribute(self, attribute, scope: _Scope, where: str) -> None:
        at = f"{where}, attribute '{short(attribute.name)}'"
        for field in ("floats", "ints", "strings", "tensors", "graphs", "sparse_tensors", "type_protos"):
            count = len(getattr(attribute, field))
            if count > self.limits.tensor_elements:
                raise self.limit(at, count, "tensor_elements", "values")
        if attribute.HasField("t"):
            self.tensor(attribute.t, at)
        for t in attribute.tensors:
            self.tensor(t, at)
        if attribute.HasField("sparse_tensor"):
            self.sparse_tensor(attribute.sparse_tensor, at)
        for s in attribute.sparse_tensors:
            self.sparse_tensor(s, at)
        if attribute.HasField("g"):
            self.graph(attribute.g, scope, f"{at}, subgraph")
        for k, g in enumerate(attribute.graphs):
            self.graph(g, scope, f"{at}, subgraph {k}")
        if attribute.HasField("tp"):
            self.value_type(attribute.tp, at)

    # Tensors ------------------------------------------------------------------------

    def shape(self, dims: list[int], element_bits: int, where: str) -> int:
        """The element count of a shape, after checking it against the limits."""
        if len(dims) > self.limits.rank:
            raise self.limit(where, len(dims), "rank", "dimensions")
        if any(d < 0 for d in dims):
            raise self.fail(f"a negative dimension in shape {list(dims)}", where)
        elements = math.prod(dims)
        if elements > self.limits.tensor_elements:
            raise self.limit(where, elements, "tensor_elements", "elements")
        size = (elements * element_bits + 7) // 8
        if size > self.limits.tensor_bytes:
            raise self.limit(where, size, "tensor_bytes", "bytes")
        return elements

    def element_type(self, code: int, where: str) -> tuple[str, int, str, int]:
        kind = _TYPES.get(code)
        if kind is None:
            raise self.fail(f"element type {code} is not one npukit reads", where)
        return kind

    def tensor(self, t, where: str) -> None:
        name, bits, field, per_element = self.element_type(t.data_type, where)
        dims = list(t.dims)
        elements = self.shape(dims, bits, where)
        size = (elements * bits + 7) // 8
        if t.data_location == _EXTERNAL:
            self.external_data(t, size, where)
            self.uses_external_data = True
        elif t.raw_data:
            if bits == 0:
                raise self.fail("STRING data in raw_data", where)
            if len(t.raw_data) != size:
                raise self.fail(f"{len(t.raw_data)} bytes of data for {elements} {name} values", where)
        else:
            count = len(getattr(t, field))
            packed = (elements + 1) // 2 if bits == 4 else None
            if count != elements * per_element and count != packed:
                raise self.fail(f"{count} values in {field} for {elements} {name} elements", where)
        self.constant_bytes += size
        if self.constant_bytes > self.limits.constant_bytes:
            raise self.limit("the model's constants", self.constant_bytes, "constant_bytes", "bytes")

    def sparse_tensor(self, s, where: str) -> None:
        self.shape(list(s.dims), 8, where)
        self.tensor(s.values, f"{where}, values")
        self.tensor(s.indices, f"{where}, indices")

    def external_data(self, t, size: int, where: str) -> None:
        entries = {e.key: e.value for e in t.external_data}
        location = entries.get("location", "")
        if not location:
            raise self.fail("external data without a location", where)
        relative = Path(location)
        if relative.is_absolute() or ".." in relative.parts or location.startswith(("/", "\\")) or "\x00" in location:
            raise self.fail(f"external data at '{short(location)}', outside the model's directory", where)
        target = (self.directory / relative).resolve()
        if target != self.directory and self.directory not in target.parents:
            raise self.fail(f"external data at '{short(location)}' leads outside the model's directory", where)
        if not target.is_file():
            raise ModelError(f"{self.path}: the external data file '{short(location)}' is missing ({where})")
        try:
            offset = int(entries.get("offset", "0"))
            length = int(entries["length"]) if "length" in entries else None
        except ValueError:
            raise self.fail("external data with an offset or length that is not a number", where) from None
        available = os.stat(target).st_size
        if length is None:
            length = available - offset
        if offset < 0 or length < 0 or offset + length > available:
            raise self.fail(f"external data at offset {offset}, {length} bytes, past the end of "
                            f"'{short(location)}' ({available} bytes)", where)
        if length != size:
            raise self.fail(f"{length} bytes of external data for a tensor of {size} bytes", where)

    # Types --------------------------------------------------------------------------

    def value_type(self, type_proto, where: str) -> None:
        kind = type_proto.WhichOneof("value")
        if kind in ("tensor_type", "sparse_tensor_type"):
            t = getattr(type_proto, kind)
            bits = self.element_type(t.elem_type, where)[1] if t.elem_type else 8
            if t.HasField("shape"):
                dims = [d.dim_value for d in t.shape.dim if d.HasField("dim_value")]
                if len(t.shape.dim) > self.limits.rank:
                    raise self.limit(where, len(t.shape.dim), "rank", "dimensions")
                self.shape(dims, bits, where)
        elif kind == "sequence_type":
            self.value_type(type_proto.sequence_type.elem_type, where)
        elif kind == "optional_type":
            self.value_type(type_proto.optional_type.elem_type, where)
        elif kind == "map_type":
            self.value_type(type_proto.map_type.value_type, where)

    def shapes(self, graph) -> None:
        """The shapes shape inference found: each within the limits."""
        for v in (*graph.input, *graph.value_info, *graph.output):
            self.value_type(v.type, f"value '{short(v.name)}'")
