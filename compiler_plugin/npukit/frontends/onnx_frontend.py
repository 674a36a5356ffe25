"""ONNX models through IREE's ONNX importer (the one behind iree-import-onnx)."""

from __future__ import annotations

import io
from pathlib import Path

from npukit.errors import ModelError
from npukit.frontends.imported_model import ImportedModel
from npukit.frontends.model_format import ModelFormat
from npukit.frontends.signature import EntryPoint, TensorSpec


def _load(path: Path):
    import onnx

    try:
        model = onnx.load(str(path))
    except Exception as e:  # protobuf raises several unrelated types
        raise ModelError(f"{path}: not a readable ONNX model: {e}") from None
    return model


def _tensor_specs(values, initializer_names: set[str]) -> list[TensorSpec]:
    import onnx

    specs = []
    for v in values:
        if v.name in initializer_names:
            continue
        t = v.type.tensor_type
        if not v.type.HasField("tensor_type"):
            raise ModelError(f"graph value '{v.name}' is not a tensor; npukit compiles tensor models only")
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name
        shape: list[int | None] = []
        for d in t.shape.dim:
            shape.append(d.dim_value if d.HasField("dim_value") else None)
        specs.append(TensorSpec(shape=shape, dtype=dtype, name=v.name))
    return specs


def onnx_entry_point(model) -> EntryPoint:
    graph = model.graph
    inits = {i.name for i in graph.initializer}
    return EntryPoint(
        name=graph.name or "main_graph",
        inputs=_tensor_specs(graph.input, inits),
        outputs=_tensor_specs(graph.output, set()),
    )


def import_onnx_proto(model, path: Path, name: str, fmt: ModelFormat = ModelFormat.ONNX) -> ImportedModel:
    import onnx
    from iree.compiler import ir
    from iree.compiler.extras import onnx_importer

    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        first = str(e).strip().splitlines()[0]
        raise ModelError(f"{path}: invalid ONNX model: {first}") from None
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception as e:
        raise ModelError(f"{path}: ONNX shape inference failed: {e}") from None
    entry = onnx_entry_point(model)
    dynamic = [t.name for t in entry.inputs if any(d is None for d in t.shape)]
    context = ir.Context()
    try:
        info = onnx_importer.ModelInfo(model)
        module = info.create_module(context=context).operation
        importer = onnx_importer.NodeImporter.define_function(info.main_graph, module)
        importer.import_all()
        module.verify()
    except Exception as e:
        raise ModelError(f"{path}: the ONNX importer failed: {str(e).strip().splitlines()[0]}") from None
    buffer = io.BytesIO()
    module.write_bytecode(buffer)
    notes = []
    if dynamic:
        notes.append(f"inputs with dynamic dimensions: {', '.join(dynamic)}")
    nodes = [(n.op_type, n.name, list(n.output)) for n in model.graph.node]
    return ImportedModel(
        path=path,
        format=fmt,
        name=name,
        mlir=buffer.getvalue(),
        entry_points=[entry],
        notes=notes,
        onnx_nodes=nodes,
    )


def import_onnx(path: Path, name: str) -> ImportedModel:
    return import_onnx_proto(_load(path), path, name)
