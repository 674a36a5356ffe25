"""Single-op programs from the ONNX conformance suite on npukit's runtime.

For each program: IREE's stock runtime on the .vmfb and npukit's runtime on
static and embedded artifacts (both execution models) must agree bit for bit,
and match the suite's expected output.
"""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest

import npukit

OPS = [
    # convolution
    "test_basic_conv_with_padding",
    "test_basic_conv_without_padding",
    "test_conv_with_strides_padding",
    "test_conv_with_autopad_same",
    "test_convtranspose",
    # pooling
    "test_averagepool_2d_pads",
    "test_averagepool_2d_strides",
    "test_maxpool_2d_default",
    "test_maxpool_2d_pads",
    "test_globalaveragepool",
    "test_globalmaxpool",
    # matmul / gemm
    "test_matmul_2d",
    "test_matmul_4d",
    "test_gemm_default_vector_bias",
    "test_gemm_all_attributes",
    "test_matmulinteger",
    # elementwise
    "test_add_bcast",
    "test_sub_int8",
    "test_mul_uint8",
    "test_div",
    "test_relu",
    "test_sigmoid",
    "test_leakyrelu",
    "test_hardswish",
    "test_pow",
    "test_max_int32",
    # reductions
    "test_reduce_sum_default_axes_keepdims_random",
    "test_reduce_mean_default_axes_keepdims_random",
    "test_reduce_max_default_axes_keepdims_random",
    # softmax
    "test_softmax_axis_1",
    "test_softmax_large_number",
    "test_logsoftmax_axis_2",
    # reshape / transpose / concat
    "test_reshape_reordered_all_dims",
    "test_transpose_all_permutations_3",
    "test_concat_3d_axis_1",
    "test_flatten_axis2",
    # quantize / dequantize
    "test_qlinearmatmul_2D_int8_float32",
    "test_dequantizelinear_axis",
]

COMBINATIONS = [
    ("static", "inline-dynamic"),
    ("static", "async"),
    ("embedded", "inline-dynamic"),
    ("embedded", "async"),
]


@pytest.fixture(scope="module")
def conformance_cases():
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {c.name: c for c in node.collect_testcases(None)}


def test_at_least_thirty_programs():
    assert len(set(OPS)) >= 30


@pytest.mark.parametrize("name", OPS)
def test_conformance_op(name, conformance_cases, tmp_path):
    case = conformance_cases[name]
    model_path = tmp_path / f"{name}.onnx"
    onnx.save(case.model, model_path)
    inputs, expected = case.data_sets[0]
    stock = npukit.run(npukit.compile(model_path, out_dir=tmp_path / "vmfb"), *inputs)
    want = expected[0]
    if want.dtype.kind == "f":
        np.testing.assert_allclose(stock[0], want, rtol=1e-4, atol=1e-5)
    else:
        assert np.abs(stock[0].astype(np.int64) - want.astype(np.int64)).max() <= 1
    for mode, execution_model in COMBINATIONS:
        artifact = npukit.compile(
            model_path, output=mode, execution_model=execution_model, out_dir=tmp_path / f"{mode}-{execution_model}"
        )
        got = npukit.run(artifact, *inputs, runtime="npukit")
        assert len(got) == len(stock)
        for g, s in zip(got, stock):
            assert g.dtype == s.dtype and g.shape == s.shape, (mode, execution_model)
            np.testing.assert_array_equal(g, s, err_msg=f"{name} {mode} {execution_model}")
