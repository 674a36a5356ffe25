"""ONNX models through IREE's ONNX importer (the one behind iree-import-onnx).

The file is parsed by protobuf and checked by npukit (onnx_checks) before
ONNX's checker, its shape inference or IREE's importer sees it; external
data is read only once its location has been checked. ``stage`` is told
each step as it starts, so that a crash inside a C++ library can be named.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Callable

from npukit.errors import ModelError
from npukit.frontends.imported_model import ImportedModel
from npukit.frontends.input_shapes import InputShapes, fix_onnx_input_shapes
from npukit.frontends.input_values import InputValues, fix_onnx_input_values
from npukit.frontends.limits import ModelLimits, limits
from npukit.frontends.model_format import ModelFormat
from npukit.frontends.message_text import short
from npukit.frontends.onnx_checks import OnnxChecks
from npukit.frontends.onnx_constant_branches import inline_constant_branches
from npukit.frontends.onnx_constant_folding import fold_small_constants
from npukit.frontends.onnx_reflect_pad import reflect_pads_as_gathers
from npukit.frontends.onnx_unread_conv_input import drop_unread_convolution_input
from npukit.frontends.signature import EntryPoint, TensorSpec

Stage = Callable[[str], None]


def _no_stage(_name: str) -> None:
    pass


def _load(path: Path, checks: OnnxChecks, stage: Stage):
    import onnx
    from onnx import external_data_helper

    stage("parsing")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ModelError(f"{path}: cannot read the model: {e.strerror or e}") from None
    if len(data) > checks.limits.file_bytes:
        raise checks.limit("the model file", len(data), "file_bytes", "bytes")
    try:
        model = onnx.ModelProto.FromString(data)
    except Exception as e:  # protobuf raises several unrelated types
        detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelError(f"{path}: not a readable ONNX model: {detail}") from None
    del data
    _unknown_dimensions_as_unknown(model.graph)
    stage("validating")
    checks.model(model)
    if checks.uses_external_data:
        stage("reading external data")
        external_data_helper.load_external_data_for_model(model, str(path.resolve().parent))
    return model


def _unknown_dimensions_as_unknown(graph) -> None:
    """Some exporters (PaddlePaddle's) declare a dimension of unknown size as -1 where ONNX leaves it
    without a value; onnxruntime reads both alike. A negative size in a declared type (never in a tensor's
    data) becomes an unknown dimension before anything reads it."""
    for value in (*graph.input, *graph.output, *graph.value_info):
        if value.type.WhichOneof("value") != "tensor_type" or not value.type.tensor_type.HasField("shape"):
            continue
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_value") and dim.dim_value < 0:
                dim.Clear()


#: The oldest default-domain opset converted as it is: IREE 3.13's importer lowers some operators only in
#: their newer versions (BatchNormalization from version 15, MaxPool from 12), and models of older opsets
#: (PaddlePaddle's exports, older PyTorch ones) stop at the first such operator.
LOWERED_OPSET = 15


def _in_lowered_opset(model, stage: Stage, notes: list[str]):
    """The model converted to opset LOWERED_OPSET by ONNX's version converter when its opset is older
    (the model as it is, with a note, when the converter cannot convert it)."""
    from onnx import version_converter

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if not 0 < opset < LOWERED_OPSET:
        return model
    stage(f"converting opset {opset} to {LOWERED_OPSET}")
    try:
        converted = version_converter.convert_version(model, LOWERED_OPSET)
    except Exception as e:  # noqa: BLE001 - the converter raises several unrelated types
        notes.append(f"opset {opset} kept: ONNX's version converter could not convert it to {LOWERED_OPSET} "
                     f"({_first_line(e)})")
        return model
    notes.append(f"opset {opset} converted to {LOWERED_OPSET} by ONNX's version converter")
    return converted


#: Rounds of constant folding and branch inlining at most (each inlined branch may hold further Ifs).
_CONSTANT_ROUNDS = 16


def _rewritten_for_iree(model):
    """The graph with the forms IREE 3.13 cannot compile rewritten (shapes inferred before and after)."""
    import onnx

    for _ in range(_CONSTANT_ROUNDS):
        if not fold_small_constants(model) + inline_constant_branches(model):
            break
        model = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    return _reflect_pads_and_windows(model)


def _reflect_pads_and_windows(model):
    import onnx

    if reflect_pads_as_gathers(model) + drop_unread_convolution_input(model):
        model = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    return model


def _dtype(path: Path, value, elem_type: int) -> str:
    import onnx

    try:
        return onnx.helper.tensor_dtype_to_np_dtype(elem_type).name
    except (KeyError, ValueError, TypeError):
        pass
    name = onnx.TensorProto.DataType.Name(elem_type) if elem_type in onnx.TensorProto.DataType.values() else None
    if not name or elem_type == onnx.TensorProto.UNDEFINED:
        raise ModelError(f"{path}: graph value '{short(value.name)}' has no element type")
    return name.lower()


def _tensor_specs(path: Path, values, initializer_names: set[str]) -> list[TensorSpec]:
    specs = []
    for v in values:
        if v.name in initializer_names:
            continue
        t = v.type.tensor_type
        if not v.type.HasField("tensor_type"):
            raise ModelError(f"{path}: graph value '{short(v.name)}' is not a tensor; npukit compiles tensor "
                             "models only")
        dtype = _dtype(path, v, t.elem_type)
        shape: list[int | None] = []
        for d in t.shape.dim:
            shape.append(d.dim_value if d.HasField("dim_value") else None)
        specs.append(TensorSpec(shape=shape, dtype=dtype, name=v.name))
    return specs


def onnx_entry_point(model, path: Path) -> EntryPoint:
    graph = model.graph
    inits = {i.name for i in graph.initializer}
    return EntryPoint(
        name=graph.name or "main_graph",
        inputs=_tensor_specs(path, graph.input, inits),
        outputs=_tensor_specs(path, graph.output, set()),
    )


def _first_line(e: Exception) -> str:
    """An exception's message in one line (an MLIR error: its first diagnostic and where)."""
    diagnostics = getattr(e, "error_diagnostics", None)
    if diagnostics:
        first = diagnostics[0]
        message = str(first.message).strip().splitlines()[0] if str(first.message).strip() else "error"
        return f"{str(e).strip().splitlines()[0].rstrip(':')}: {message} at {first.location}"
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _nodes_with_subgraphs(graph):
    """(op type, name, outputs) of every node, those of If/Loop/Scan bodies included: IREE's
    importer names a body's operations after the body's own nodes."""
    import onnx

    for node in graph.node:
        yield node.op_type, node.name, list(node.output)
        for attribute in node.attribute:
            bodies = [attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else list(attribute.graphs)
            for body in bodies:
                yield from _nodes_with_subgraphs(body)


def import_onnx_proto(model, path: Path, name: str, fmt: ModelFormat = ModelFormat.ONNX,
                      stage: Stage = _no_stage, checks: OnnxChecks | None = None,
                      input_shapes: InputShapes | None = None, input_values: InputValues | None = None
                      ) -> ImportedModel:
    """Imports a parsed model; ``checks`` are those its parsing passed (run here otherwise);
    ``input_shapes`` fix the shapes of inputs with unknown dimensions (npukit.frontends.input_shapes),
    ``input_values`` make inputs constants (npukit.frontends.input_values)."""
    import onnx
    from iree.compiler import ir
    from iree.compiler.extras import onnx_importer

    if checks is None:
        checks = OnnxChecks(path, limits())
        stage("validating")
        checks.model(model)
    stage("checking")
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError, UnicodeError) as e:
        raise ModelError(f"{path}: invalid ONNX model: {_first_line(e)}") from None
    notes = fix_onnx_input_shapes(model.graph, path, input_shapes or {})
    notes += fix_onnx_input_values(model.graph, path, input_values or {})
    model = _in_lowered_opset(model, stage, notes)
    stage("shape inference")
    try:
        model = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception as e:
        raise ModelError(f"{path}: ONNX shape inference failed: {_first_line(e)}") from None
    checks.shapes(model.graph)
    model = _rewritten_for_iree(model)
    entry = onnx_entry_point(model, path)
    dynamic = [t.name for t in entry.inputs if any(d is None for d in t.shape)]
    stage("importing into MLIR")
    context = ir.Context()
    try:
        info = onnx_importer.ModelInfo(model)
        module = info.create_module(context=context).operation
        importer = onnx_importer.NodeImporter.define_function(info.main_graph, module)
        importer.import_all()
        module.verify()
    except Exception as e:
        raise ModelError(f"{path}: IREE's ONNX importer failed: {_first_line(e)}") from None
    buffer = io.BytesIO()
    module.write_bytecode(buffer)
    if dynamic:
        notes.append(f"inputs with dynamic dimensions: {', '.join(dynamic)}")
    nodes = list(_nodes_with_subgraphs(model.graph))
    return ImportedModel(
        path=path,
        format=fmt,
        name=name,
        mlir=buffer.getvalue(),
        entry_points=[entry],
        notes=notes,
        onnx_nodes=nodes,
    )


def import_onnx(path: Path, name: str, stage: Stage = _no_stage, model_limits: ModelLimits | None = None,
                input_shapes: InputShapes | None = None, input_values: InputValues | None = None) -> ImportedModel:
    checks = OnnxChecks(path, model_limits or limits())
    return import_onnx_proto(_load(path, checks, stage), path, name, stage=stage, checks=checks,
                             input_shapes=input_shapes, input_values=input_values)
