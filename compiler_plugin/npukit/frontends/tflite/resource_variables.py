"""TFLite's resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE,
CALL_ONCE), as streaming models keep their state between calls (a keyword
spotter's last few frames of features, for example).

In TFLite a variable is named by its VAR_HANDLE's ``(container,
shared_name)``; the interpreter keeps its value across ``invoke()`` calls.
READ_VARIABLE copies the value out, ASSIGN_VARIABLE replaces it, and
CALL_ONCE runs its initialisation subgraph on the first ``invoke()`` only;
reading a variable nothing has assigned is an error. Here each variable is
a mutable ``util.global``: its initial value is what the CALL_ONCE's
subgraph assigns (which must be constants: the subgraph is read at import,
never run), READ_VARIABLE loads it and ASSIGN_VARIABLE stores it, in the
operators' order, so every call of the compiled function continues from the
last one as successive ``invoke()`` calls do. Shapes and types are fixed:
an assignment of another shape or type than the variable's is refused.
"""

from __future__ import annotations

import numpy as np

from npukit.frontends.tflite.flatbuffer_reader import Operator, Tensor, TfliteGraph
from npukit.frontends.tflite.lowering import LoweringContext, lowers
from npukit.frontends.tflite.mlir_builder import COMPUTED_TYPES

#: An initialisation subgraph may hold only these (a handle and a constant assigned to it).
_INITIALISERS = ("VAR_HANDLE", "ASSIGN_VARIABLE")


def _key(op: Operator) -> tuple[str, str]:
    return (str(op.option("container", "")), str(op.option("shared_name", "")))


def _describe(key: tuple[str, str]) -> str:
    container, name = key
    return f"resource variable '{container + '/' if container else ''}{name}'"


def _handle(ctx: LoweringContext, position: int) -> tuple[str, str]:
    t = ctx.input(position)
    if t is None or t.dtype != "resource":
        raise ctx.fail(f"input {position} is not a resource variable's handle")
    key = ctx.resource_handles.get(t.index)
    if key is None:
        raise ctx.unsupported(f"a handle ({t.describe()}) that no earlier VAR_HANDLE gives")
    return key


def _global(ctx: LoweringContext, key: tuple[str, str], initial: np.ndarray, dtype: str) -> str:
    name = f"resource_{len(ctx.resource_globals)}"
    ctx.builder.state_global(name, initial, dtype)
    ctx.state.append(name)
    ctx.resource_globals[key] = name
    return name


def _check_form(ctx: LoweringContext, key: tuple[str, str], shape: tuple[int, ...], dtype: str, what: str) -> None:
    name = ctx.resource_globals[key]
    have_shape, have_dtype = ctx.builder._globals[name]  # noqa: SLF001 - the global's declared type
    if (tuple(have_shape), have_dtype) != (tuple(shape), dtype):
        raise ctx.unsupported(f"{what} of {dtype}[{','.join(map(str, shape))}] for the {_describe(key)}, which "
                              f"holds {have_dtype}[{','.join(map(str, have_shape))}] (a variable that changes "
                              "shape or type)")


@lowers("VAR_HANDLE")
def var_handle(ctx: LoweringContext, op: Operator) -> None:
    if op.inputs or len(op.outputs) != 1 or ctx.output(0).dtype != "resource":
        raise ctx.fail("a VAR_HANDLE takes no input and gives one resource handle")
    ctx.resource_handles[op.outputs[0]] = _key(op)


@lowers("CALL_ONCE")
def call_once(ctx: LoweringContext, op: Operator) -> None:
    """The initialisation subgraph read at import: each constant it assigns becomes a variable's initial value."""
    if op.inputs or op.outputs:
        raise ctx.fail("a CALL_ONCE takes no input and gives no output")
    index = op.option("init_subgraph_index", 0)
    init: TfliteGraph | None = ctx.graph.init_subgraphs.get(index)
    if init is None:
        raise ctx.fail(f"its initialisation subgraph {index} was not read")
    if index in ctx.resource_inits:
        return  # TFLite runs a subgraph once, however many CALL_ONCEs name it
    ctx.resource_inits.add(index)
    if init.inputs or init.outputs:
        raise ctx.unsupported(f"an initialisation subgraph ({index}) with inputs or outputs")
    local: dict[int, tuple[str, str]] = {}
    for step in init.operators:
        if step.opcode not in _INITIALISERS:
            raise ctx.unsupported(f"an initialisation subgraph ({index}) that computes ({step.describe()})",
                                  supported="one that assigns constants to variables")
        if step.opcode == "VAR_HANDLE":
            local[step.outputs[0]] = _key(step)
            continue
        if len(step.inputs) != 2 or step.inputs[0] not in local:
            raise ctx.fail(f"{step.describe()} of subgraph {index} assigns to no VAR_HANDLE's handle")
        key, value = local[step.inputs[0]], init.tensors[step.inputs[1]]
        _initialise(ctx, key, value, index)


def _initialise(ctx: LoweringContext, key: tuple[str, str], value: Tensor, index: int) -> None:
    if value.data is None:
        raise ctx.unsupported(f"an initialisation subgraph ({index}) that assigns a computed value to the "
                              f"{_describe(key)}", supported="one that assigns constants")
    if value.dtype not in COMPUTED_TYPES:
        raise ctx.unsupported(f"a {value.dtype} {_describe(key)}")
    if key in ctx.resource_globals:
        # TFLite runs CALL_ONCE at its place on the first call: a variable the model touched before it would
        # start from another value on the first call than on the later ones.
        raise ctx.unsupported(f"a CALL_ONCE that initialises the {_describe(key)} after the model has used it")
    _global(ctx, key, np.asarray(value.data).reshape(value.shape), value.dtype)


@lowers("READ_VARIABLE")
def read_variable(ctx: LoweringContext, op: Operator) -> None:
    key = _handle(ctx, 0)
    if key not in ctx.resource_globals:
        raise ctx.fail(f"reads the {_describe(key)} before anything assigns it (TFLite refuses to run it)")
    out = ctx.output(0)
    _check_form(ctx, key, out.shape, out.dtype, "a read")
    ctx.define(0, ctx.builder.load_global(ctx.resource_globals[key]))


@lowers("ASSIGN_VARIABLE")
def assign_variable(ctx: LoweringContext, op: Operator) -> None:
    if len(op.inputs) != 2 or op.outputs:
        raise ctx.fail("an ASSIGN_VARIABLE takes a handle and a value and gives no output")
    key = _handle(ctx, 0)
    value_tensor = ctx.input(1)
    value = ctx.value(value_tensor.index)
    if key not in ctx.resource_globals:
        # Assigned before any read: the global's initial value is never seen.
        if value_tensor.dtype not in COMPUTED_TYPES:
            raise ctx.unsupported(f"a {value_tensor.dtype} {_describe(key)}")
        _global(ctx, key, np.zeros(value_tensor.shape, np.dtype(_numpy(value_tensor.dtype))), value_tensor.dtype)
    _check_form(ctx, key, value_tensor.shape, value_tensor.dtype, "an assignment")
    if tuple(value.shape) != value_tensor.shape:
        value = ctx.builder.reshape(value, value_tensor.shape)
    ctx.builder.store_global(ctx.resource_globals[key], value)


def _numpy(dtype: str):
    return {"int8": np.int8, "uint8": np.uint8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
            "float32": np.float32, "bool": np.bool_}[dtype]
