"""The mynpu target compiles every model; the .vmfb runs on IREE's stock runtime.

The stock runtime does not know mynpu-v1 and runs each executable's CPU
variant. For the float models that is the host build's code, bit for bit;
for the int8 models it is the CPU code with integer requantization, whose
outputs are exactly those of TFLite's reference kernels (what the NPU
computes too).
"""

from __future__ import annotations

import numpy as np
import pytest

import npukit
from compiler.test_host_models import check_against_references
from support.models import MLPERF_MODELS, random_inputs
from support.oracles import TFLiteReference


@pytest.mark.parametrize("model", MLPERF_MODELS, ids=lambda m: m.name)
def test_mynpu_runs_on_stock_runtime(model, shared_models, artifact_cache, rng):
    onnx_path = shared_models / f"{model.name}.onnx"
    result = artifact_cache(onnx_path, "mynpu")
    assert result.manifest["target"]["name"] == "mynpu"
    assert result.manifest["target"]["npu"] == "mynpu" and result.manifest["target"]["cpu"] == "host"
    loaded = npukit.load(result)
    if model.quantized:
        tflite = TFLiteReference(shared_models / f"{model.name}.tflite", kernels="reference")
        for x in random_inputs(model, tflite.input_shape, rng, 6):
            np.testing.assert_array_equal(loaded(x)[0], tflite(x))
        return
    check_against_references(model, shared_models, loaded, rng, count=4)
    host = npukit.load(artifact_cache(onnx_path))
    shape = TFLiteReference(shared_models / f"{model.name}.tflite").input_shape
    for x in random_inputs(model, shape, rng, 2):
        np.testing.assert_array_equal(loaded(x)[0], host(x)[0])


def test_mynpu_with_board_cpu(shared_models, artifact_cache):
    result = artifact_cache(shared_models / "kws_int8.onnx", "mynpu+cortex-m4", "embedded")
    assert result.manifest["target"]["name"] == "mynpu+cortex-m4"
    assert result.manifest["files"]["embedded_executable"]["elf"]["machine"] == "EM_ARM"
    assert result.manifest["mynpu"]["summary"]["npu_mac_share"] >= 0.95
