"""Shape computations in .tflite models (a SHAPE, sliced, packed with sizes
and given to a RESHAPE, as Keras exports a Reshape or Flatten layer) are
computed at import (frontends/tflite/constant_operators.py). Each operator
of that space is swept against TFLite's reference kernels: the model's
outputs are the shape computations themselves, so the interpreter computes
every value that the importer folds. Operators outside the space stay in
the graph, and two chains that end in a RESHAPE of int8 data compile and
equal TFLite's outputs."""

from __future__ import annotations

import numpy as np
import pytest

import npukit
from npukit.frontends.tflite.constant_operators import fold_constant_operators
from npukit.frontends.tflite.flatbuffer_reader import read_tflite
from support.tflite_builder import Branch, Spec, build_model, random_input, run_reference

I32, I64 = np.int32, np.int64


def _shape(x: Spec, dtype=I32) -> tuple[Branch, Spec]:
    out = Spec((len(x.shape),), dtype)
    return Branch("SHAPE", [x], [out], {"outType": 2 if dtype is I32 else 4}), out


def _const(values, dtype=I32) -> Spec:
    return Spec.constant(np.asarray(values, dtype))


def _strided(v: Spec, lo, hi, step, out_shape, **masks) -> tuple[Branch, Spec]:
    """A STRIDED_SLICE; ``masks`` by name (begin, end, shrinkAxis) and offset."""
    out = Spec(out_shape, v.dtype)
    options = {f"{k}Mask" if k != "offset" else k: m for k, m in masks.items()}
    return Branch("STRIDED_SLICE", [v, _const(lo), _const(hi), _const(step)], [out], options), out


def _binary(op: str, a: Spec, b: Spec, out_shape) -> tuple[Branch, Spec]:
    out = Spec(out_shape, a.dtype)
    return Branch(op, [a, b], [out]), out


def _cases() -> dict[str, list[Branch]]:
    """Chains of shape computations on int8 and float inputs of a few ranks."""
    x = Spec((1, 5, 128, 3), np.int8, 0.5, 0)
    cases: dict[str, list[Branch]] = {}
    for shape in ((7,), (3, 4), (1, 5, 128, 3)):
        for dtype in (I32, I64):
            branch, _ = _shape(Spec(shape, np.float32), dtype)
            cases[f"shape_{len(shape)}d_{np.dtype(dtype).name}"] = [branch]

    def on_shape(name, make, dtype=I32):
        shape_branch, s = _shape(x, dtype)
        cases[name] = [shape_branch, *make(s)]

    slices = {  # begin, end, strides, output shape, masks
        "first_scalar": ([0], [1], [1], (), {"shrinkAxis": 1}),
        "middle": ([1], [3], [1], (2,), {}),
        "negative_bounds": ([-3], [-1], [1], (2,), {}),
        "stride_2": ([0], [4], [2], (2,), {}),
        "begin_mask": ([2], [3], [1], (3,), {"begin": 1}),
        "end_mask": ([1], [0], [1], (3,), {"end": 1}),
        "last_scalar": ([-1], [0], [1], (), {"shrinkAxis": 1}),
        "clamped": ([-9], [9], [3], (2,), {}),
        "offset": ([1], [2], [1], (2,), {"offset": True}),
    }
    for name, (b, e, st, out_shape, masks) in slices.items():
        on_shape(f"strided_slice_{name}", lambda s, b=b, e=e, st=st, o=out_shape, m=masks:
                 [_strided(s, b, e, st, o, **m)[0]])
    on_shape("slice_to_end", lambda s: [Branch("SLICE", [s, _const([1]), _const([-1])], [Spec((3,), I32)])])
    on_shape("slice_sized", lambda s: [Branch("SLICE", [s, _const([0]), _const([2])], [Spec((2,), I32)])])

    def keras_reshape(s):  # batch from the shape, then the layer's constant sizes
        first, batch = _strided(s, [0], [1], [1], (), shrinkAxis=1)
        sizes = [Spec.constant(np.int32(v)) for v in (5, 128, 1)]
        return [first, Branch("PACK", [batch, *sizes], [Spec((4,), I32)], {"valuesCount": 4, "axis": 0})]

    on_shape("pack_scalars", keras_reshape)

    def pack_vectors(s):
        a, va = _strided(s, [0], [2], [1], (2,))
        b, vb = _strided(s, [2], [4], [1], (2,))
        return [a, b, Branch("PACK", [va, vb], [Spec((2, 2), I32)], {"valuesCount": 2, "axis": 1})]

    on_shape("pack_axis_1", pack_vectors)
    for axis in (0, -1):
        on_shape(f"concatenation_axis_{axis}", lambda s, axis=axis: [
            Branch("CONCATENATION", [s, _const([-1, 7])], [Spec((6,), I32)], {"axis": axis})])
    on_shape("gather_vector", lambda s: [
        Branch("GATHER", [s, _const([3, 0, 1])], [Spec((3,), I32)], {"axis": 0})])
    on_shape("gather_scalar", lambda s: [
        Branch("GATHER", [s, Spec.constant(np.int32(2))], [Spec((), I32)], {"axis": 0})])
    on_shape("reshape", lambda s: [Branch("RESHAPE", [s, _const([2, 2])], [Spec((2, 2), I32)])])
    on_shape("expand_squeeze", lambda s: [
        Branch("EXPAND_DIMS", [s, Spec.constant(np.int32(0))], [e := Spec((1, 4), I32)]),
        Branch("SQUEEZE", [e], [Spec((4,), I32)], {"squeezeDims": [0]})])
    on_shape("cast_to_int64", lambda s: [Branch("CAST", [s], [Spec((4,), I64)], {"inDataType": 2, "outDataType": 4})])
    on_shape("cast_to_int32", lambda s: [Branch("CAST", [s], [Spec((4,), I32)], {"inDataType": 4, "outDataType": 2})],
             dtype=I64)

    def arithmetic(s):
        t = s.dtype
        under, d = _binary("SUB", s, _const([4, 4, 4, 4], t), (4,))  # [-3, 1, 124, -1]
        branches = [under]
        for op, other in (("ADD", _const([2, -9, 0, 5], t)), ("MUL", Spec.constant(t(-3))),
                          ("FLOOR_DIV", _const([2, -3, 5, -2], t)), ("MAXIMUM", _const([0, 2, 100, -4], t)),
                          ("MINIMUM", _const([0, 2, 100, -4], t))):
            if op == "FLOOR_DIV" and t is I64:
                continue  # TFLite's FLOOR_DIV has no int64 kernel
            branches.append(_binary(op, d, other, (4,))[0])
        return branches

    on_shape("arithmetic", arithmetic)
    on_shape("arithmetic_int64", arithmetic, dtype=I64)
    for keep in (False, True):
        on_shape(f"reduce_prod_keep_{keep}", lambda s, keep=keep: [
            Branch("REDUCE_PROD", [s, _const([0])], [Spec((1,) if keep else (), I32)], {"keepDims": keep})])
    on_shape("fill", lambda s: [
        (dims := _strided(s, [1], [3], [1], (2,)))[0],
        Branch("FILL", [dims[1], Spec.constant(np.int32(7))], [Spec((5, 128), I32)])])
    on_shape("range", lambda s: [
        (limit := _strided(s, [3], [4], [1], (), shrinkAxis=1))[0],
        Branch("RANGE", [Spec.constant(np.int32(0)), limit[1], Spec.constant(np.int32(1))], [Spec((3,), I32)])])
    return cases


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_folded_values_equal_tflite(name, tmp_path):
    path = tmp_path / f"{name}.tflite"
    build_model(CASES[name], path, chain=True)
    graph = read_tflite(path)
    rng = np.random.default_rng(3)
    inputs = [random_input(Spec(graph.tensors[i].shape, np.dtype(graph.tensors[i].dtype).type), rng)
              for i in graph.inputs]
    wants = run_reference(path, inputs)
    folded = fold_constant_operators(graph)
    assert not graph.operators, f"{name}: {[op.opcode for op in graph.operators]} not computed at import"
    assert folded == len(CASES[name])
    for index, want in zip(graph.outputs, wants):
        got = graph.tensors[index].data
        assert got is not None and got.dtype == want.dtype, f"{name}: {got!r} against {want!r}"
        assert np.array_equal(got, want), f"{name}: {got.tolist()} against TFLite's {want.tolist()}"


def _kept(branches: list[Branch], tmp_path) -> list[str]:
    path = tmp_path / "kept.tflite"
    build_model(branches, path, chain=True)
    graph = read_tflite(path)
    fold_constant_operators(graph)
    return [op.opcode for op in graph.operators]


def test_operators_outside_the_space_stay_in_the_graph(tmp_path):
    x = Spec((2, 3, 4), np.int8, 0.5, 0)
    shape, s = _shape(x)
    negative = _strided(s, [2], [0], [-1], (2,))[0]
    by_zero = _binary("FLOOR_DIV", s, _const([1, 0, 1]), (3,))[0]
    out_of_range = Branch("GATHER", [s, _const([3])], [Spec((1,), I32)], {"axis": 0})
    floats = Branch("ADD", [Spec.constant(np.ones(3, np.float32)), Spec.constant(np.ones(3, np.float32))],
                    [Spec((3,), np.float32)])
    runtime = Branch("ADD", [Spec((3,), I32), _const([1, 2, 3])], [Spec((3,), I32)])
    assert _kept([shape, negative, by_zero, out_of_range, floats, runtime], tmp_path) == \
        ["STRIDED_SLICE", "FLOOR_DIV", "GATHER", "ADD", "ADD"]


def test_reshapes_by_computed_shapes_compile_and_equal_tflite(tmp_path):
    """A Keras Reshape after a dense layer (the batch from SHAPE, packed with the
    layer's sizes) and a Flatten (the product of the shape's tail)."""
    dense = Spec((1, 640), np.int8, 0.25, 3)
    shape, s = _shape(dense)
    first, batch = _strided(s, [0], [1], [1], (), shrinkAxis=1)
    sizes = [Spec.constant(np.int32(v)) for v in (5, 128, 1)]
    packed = Spec((4,), I32)
    reshaped = Spec((1, 5, 128, 1), np.int8, 0.25, 3)
    image = Spec((1, 4, 5, 6), np.int8, 0.5, -2)
    image_shape, t = _shape(image)
    tail_branch, tail = _strided(t, [1], [0], [1], (3,), end=1)
    product = Spec((), I32)
    flat_shape = Spec((2,), I32)
    flat = Spec((1, 120), np.int8, 0.5, -2)
    branches = [shape, first, Branch("PACK", [batch, *sizes], [packed], {"valuesCount": 4, "axis": 0}),
                Branch("RESHAPE", [dense, packed], [reshaped]),
                image_shape, tail_branch, Branch("REDUCE_PROD", [tail, _const([0])], [product], {"keepDims": False}),
                Branch("PACK", [Spec.constant(np.int32(1)), product], [flat_shape], {"valuesCount": 2, "axis": 0}),
                Branch("RESHAPE", [image, flat_shape], [flat])]
    path = tmp_path / "computed_reshapes.tflite"
    build_model(branches, path, chain=True)
    rng = np.random.default_rng(5)
    inputs = [random_input(dense, rng), random_input(image, rng)]
    wants = run_reference(path, inputs)
    loaded = npukit.load(npukit.compile(path, out_dir=tmp_path / "host"))
    for got, want in zip(loaded(*inputs), wants):
        assert np.array_equal(np.asarray(got).reshape(want.shape), want)
