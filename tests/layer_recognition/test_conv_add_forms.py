"""Forms IREE gives a CONV_2D -> ADD pair after canonicalising it (the
conv_add_ranges sweep runs them end to end): an ADD clamp whose minimum is
unsigned below a negative lower bound, an ADD folded to a constant that its
initializer fills next to the constant pool, and a VALID window as wide as
the input, whose output dimension of one pixel IREE drops. The recogniser
reads each into the layer TFLite defines, and refuses what it cannot prove."""

from __future__ import annotations

from pathlib import Path

import iree.compiler as ireec
import numpy as np
import pytest
from iree.compiler import ir

from kernels.layer_sweeps import NONE, RELU6, _conv_add_branches
from npukit.frontends.tflite.importer import import_tflite
from npukit.layer_recognition import integer_epilogue as ie
from npukit.layer_recognition.constant_pool import binding_sites, constant_pools
from npukit.layer_recognition.dispatch_ir import read_dispatch
from npukit.layer_recognition.integer_parameters import OutputStage, _check_sum_not_negative
from npukit.layer_recognition.layer_match import match_layer_at_site
from npukit.layer_recognition.layer_spec import ElementwiseAdd, NotSupported, TensorLayout
from npukit.layer_recognition.scalar_expression import Node
from support.tflite_builder import build_model


def _const(value: int) -> Node:
    return Node("const", value=value, type="i32")


def _clamp(outer: str, low: int, high: int) -> Node:
    x = Node("arg", value=0, type="i32")
    return Node(outer, (Node("arith.maxsi", (x, _const(low)), type="i32"), _const(high)), type="i32")


def test_unsigned_minimum_below_a_negative_bound_is_marked():
    assert ie.match_clamp(_clamp("arith.minsi", -128, 127)) == ie.Clamp(Node("arg", value=0, type="i32"), -128, 127)
    unsigned = ie.match_clamp(_clamp("arith.minui", -128, 127))
    assert unsigned is not None and unsigned.unsigned_below_zero
    assert not ie.match_clamp(_clamp("arith.minui", 0, 127)).unsigned_below_zero  # a clamp for every value
    # A requantization's value takes any sign: such a clamp is not its clamp.
    narrowed = Node("arith.trunci", (_clamp("arith.minui", -128, 127),), type="i8")
    assert ie.match_requantization(narrowed) is None


def _add(output_zp: int, conv_zp: int = -90, residual_zp: int = -128) -> ElementwiseAdd:
    layout = TensorLayout(None, ())
    return ElementwiseAdd(layout, residual_zp, conv_zp, (1130254589, 0), (1073741824, 0), (1745844662, -19),
                          output_zp, -128, 127)


def test_unsigned_clamp_needs_a_sum_that_is_never_negative():
    stage = OutputStage(np.zeros(4, np.int32), [(1 << 30, -5)] * 4, None, -90, -128, 127)
    _check_sum_not_negative(_add(100), stage)  # the smallest sum: (-128 + 90) s1 + 0 s2, above -100
    with pytest.raises(NotSupported, match="may be negative"):
        _check_sum_not_negative(_add(2), stage)
    with pytest.raises(NotSupported, match="may be negative"):
        _check_sum_not_negative(_add(100, residual_zp=127), stage)  # a residual term down to -255 s2


def _recognised(path: Path) -> tuple[dict, ir.Module, ir.Context]:
    imported = import_tflite(path, "m")
    stream = ireec.compile_str(imported.mlir, target_backends=["llvm-cpu"],
                               extra_args=["--iree-llvmcpu-target-cpu=host", "--compile-to=stream",
                                           *imported.iree_flags])
    context = ir.Context()
    module = ir.Module.parse(stream.decode(), context)
    sites = binding_sites(module.operation)
    found = {}
    for op in module.body.operations:
        op = op.operation
        if op.name == "stream.executable":
            body = read_dispatch(op)
            try:
                found[body.name] = match_layer_at_site(body, sites.get(body.name))
            except NotSupported as e:
                found[body.name] = e
    return found, module, context


def test_folded_add_leaves_the_other_layers_their_constants(tmp_path):
    """An ADD whose ReLU6 leaves 127 alone: IREE folds the layer and the ADD
    to a constant that the pool's initializer fills and stores in a second
    constant global; the pool is still the composite's global, and the
    layers before and after read their weights from it."""
    branches = _conv_add_branches(np.random.default_rng(3), [
        (16, 72, (3, 3), (1, 1), NONE, NONE, True, -128, 3, -5, 2, 1.3, None),  # 72 channels: in the pool
        (8, 8, (3, 3), (1, 1), NONE, RELU6, True, -128, 2, -3, 127, 1.2, None),
        (12, 80, (3, 3), (1, 1), NONE, NONE, True, 5, 1, 9, -4, 0.8, None),
    ])
    build_model(branches, tmp_path / "m.tflite", chain=True)
    found, module, context = _recognised(tmp_path / "m.tflite")
    with context:
        [pool] = constant_pools(module.operation)
        assert pool.global_name.startswith("__constant"), pool.global_name
    assert len(found) == 2, found  # the folded layer has no dispatch
    for name, spec in found.items():
        assert not isinstance(spec, Exception), f"{name}: {spec}"
        assert spec.add is not None
    weights = sorted(spec.weights.shape for spec in found.values())
    assert weights == [(72, 1, 1, 16), (80, 1, 1, 12)]


@pytest.mark.parametrize("size,kernel", [((5, 3), (3, 3)), ((3, 5), (3, 3)), ((2, 4), (2, 3))])
def test_window_spanning_the_input_keeps_its_channels(tmp_path, size, kernel):
    """A VALID window as wide (or as high) as the input: one output pixel
    along it, a dimension IREE drops; the window's dimension then reads the
    input alone like the channels. The layer is the TFLite one: its kernel,
    output shape and weights in [OC][KH][KW][IC]."""
    branches = _conv_add_branches(np.random.default_rng(5), [
        (8, 6, size, kernel, NONE, NONE, True, -128, 1, -2, 4, 1.1, None)])
    build_model(branches, tmp_path / "m.tflite", chain=True)
    found, _, _ = _recognised(tmp_path / "m.tflite")
    [spec] = found.values()
    assert not isinstance(spec, Exception), spec
    (h, w), (kh, kw) = size, kernel
    assert spec.kind == "conv" and spec.kernel == kernel
    assert spec.ifm_chw == (8, h, w) and spec.ofm_chw == (6, h - kh + 1, w - kw + 1)
    assert np.array_equal(spec.weights, branches[0].inputs[1].data)
