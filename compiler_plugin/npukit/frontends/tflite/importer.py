"""The TFLite frontend: a .tflite flatbuffer read directly (no TensorFlow)
and each operator lowered to the MLIR of its reference kernel's arithmetic,
with every quantization parameter taken from the file exactly (int32 and
int64 biases, per-channel scales and zero points, fused activations).

An operator or type without a lowering stops the import with one line
naming the file, the operator (its index, name and output) and what is
supported.
"""

from __future__ import annotations

from pathlib import Path

from iree.compiler import ir

from npukit.errors import InternalError, ModelError
from npukit.frontends.imported_model import ImportedModel
from npukit.frontends.model_format import ModelFormat
from npukit.frontends.signature import EntryPoint, TensorSpec
from npukit.frontends.tflite import contractions, elementwise, pooling, recurrent, resampling, \
    resource_variables, shape_operators, softmax  # noqa: F401
from npukit.frontends.tflite.constant_operators import fold_constant_operators
from npukit.frontends.tflite.flatbuffer_reader import TfliteGraph, read_tflite
from npukit.frontends.tflite.graph_checks import check_graph
from npukit.frontends.tflite.lowering import LOWERINGS, LoweringContext, UnsupportedOperator
from npukit.frontends.tflite.mlir_builder import ModuleBuilder

FUNCTION = "main"
_SIGNATURE_DTYPES = {"int8", "int16", "int32", "int64", "uint8", "float32", "bool"}


def supported_operators() -> list[str]:
    return sorted(LOWERINGS)


def _check_signature(graph: TfliteGraph) -> None:
    for kind, indices in (("input", graph.inputs), ("output", graph.outputs)):
        for i in indices:
            t = graph.tensors[i]
            if t.dtype not in _SIGNATURE_DTYPES:
                raise ModelError(f"{graph.path}: model {kind} {t.describe()}: a {t.dtype} {kind} is not supported "
                                 f"(int8, int16, int32, uint8 and float32 are)")
    if not graph.outputs:
        raise ModelError(f"{graph.path}: the model has no outputs")


def lower_graph(graph: TfliteGraph, unroll_time_steps: bool = False) -> tuple[ModuleBuilder, LoweringContext]:
    """The model's MLIR module (raises ModelError / UnsupportedOperator).
    ``unroll_time_steps`` emits recurrent operators' steps one by one
    instead of as a loop (for comparing the two)."""
    _check_signature(graph)
    fold_constant_operators(graph)
    check_graph(graph, set(LOWERINGS))
    builder = ModuleBuilder()
    ctx = LoweringContext(graph, builder, unroll_time_steps=unroll_time_steps)
    arguments = builder.begin_function(FUNCTION, [(graph.tensors[i].shape, graph.tensors[i].dtype)
                                                  for i in graph.inputs])
    for i, value in zip(graph.inputs, arguments):
        ctx.values[i] = value
    missing = sorted({op.opcode for op in graph.operators if op.opcode not in LOWERINGS})
    for op in graph.operators:
        ctx.operator = op
        lowering = LOWERINGS.get(op.opcode)
        if lowering is None:
            others = f" (the model also has {', '.join(m for m in missing if m != op.opcode)})" \
                if len(missing) > 1 else ""
            raise UnsupportedOperator(
                f"{graph.path}: {ctx.where()}: the operator {op.opcode} is not supported{others}; npukit's TFLite "
                f"importer supports {', '.join(supported_operators())}")
        with builder.at(ctx.location()):
            try:
                lowering(ctx, op)
            except (ModelError, UnsupportedOperator):
                raise
            except ValueError as e:
                raise ctx.fail(str(e)) from None
            except Exception as e:  # noqa: BLE001 - a fault of the lowering: one line naming the operator
                raise _lowering_fault(ctx, e) from None
    ctx.operator = None
    with builder.at("outputs"):
        results = [ctx.value(i) for i in graph.outputs]
    builder.end_function(results)
    return builder, ctx


def _lowering_fault(ctx: LoweringContext, e: Exception) -> InternalError:
    import traceback

    detail = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return InternalError(
        f"{ctx.graph.path}: {ctx.where()}: npukit's {ctx.operator.opcode} lowering failed "
        f"({type(e).__name__}{': ' + detail if detail else ''})",
        [ln for ln in "".join(traceback.format_exception(e)).splitlines() if ln.strip()])


def _spec(graph: TfliteGraph, index: int) -> TensorSpec:
    t = graph.tensors[index]
    return TensorSpec(shape=list(t.shape), dtype=t.dtype, name=t.name)


def import_tflite(path: Path, name: str) -> ImportedModel:
    graph = read_tflite(path)
    builder, ctx = lower_graph(graph)
    with builder.context:
        try:
            builder.module.operation.verify()
        except ir.MLIRError as e:
            raise ModelError(f"{path}: the imported module does not verify: {_verifier_message(e)}") from None
    entry = EntryPoint(name=FUNCTION, inputs=[_spec(graph, i) for i in graph.inputs],
                       outputs=[_spec(graph, i) for i in graph.outputs])
    flags = ["--iree-input-demote-f64-to-f32=false"] if ctx.uses_f64 else []
    return ImportedModel(path=path, format=ModelFormat.TFLITE, name=name, mlir=builder.bytecode(),
                         entry_points=[entry], iree_flags=flags)


def _verifier_message(error: Exception) -> str:
    """The verifier's first diagnostic (its text starts with a bare 'Verification failed:')."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    useful = [line for line in lines if line.rstrip(":") != "Verification failed"]
    return useful[0] if useful else (lines[0] if lines else type(error).__name__)
