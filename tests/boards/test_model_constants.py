"""The model constants a firmware holds (the model's rodata, from the link
map) stay within 1.1 x what the model itself holds + 4 KiB on the CPU and
NPU builds of small models, where the fixed costs weigh most: the static
library's tables, the vm-c module's strings and tables, the softmax's
exponentials (benchmarks/model_constants.py reports every zoo model). An
NPU build's rodata also holds the NPU's program, its command streams and
export table (the mynpu-v1 executable less its constants segment): code,
as the CPU's is, and growing with the layers the NPU runs, so it is
counted apart from the constants here; the segment (weights, biases,
requantization and activation tables) is not."""

from __future__ import annotations

import pytest

from npukit.deploy.deploy_model import deploy
from npukit.frontends.tflite.flatbuffer_reader import read_tflite
from zoo.catalogue import entries

LAYERS = {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "CONV_3D"}


def own_constants(model) -> int:
    """int8 weights + int32 biases of the quantized layers + 8 B per output channel."""
    graph = read_tflite(model)
    total = 0
    for op in graph.operators:
        weights = graph.tensors[op.inputs[1]] if op.opcode in LAYERS else None
        if weights is None or weights.dtype != "int8" or weights.data is None:
            continue
        total += weights.data.nbytes + 8 * graph.tensors[op.outputs[0]].shape[-1]
        if len(op.inputs) > 2 and op.inputs[2] >= 0 and graph.tensors[op.inputs[2]].data is not None:
            total += graph.tensors[op.inputs[2]].data.nbytes
    return total


@pytest.mark.slow
@pytest.mark.parametrize("npu", [None, "mynpu"], ids=["cpu", "npu"])
@pytest.mark.parametrize("name", ["ds_cnn_xs-int8", "kws_int8", "squeeze_excite-int8"])
def test_small_model_constants_within_the_bound(name, npu, shared_models):
    model = shared_models / f"{name}.tflite" if name == "kws_int8" else \
        next(e for e in entries() if e.name == f"{name}.tflite").path()
    own = own_constants(model)
    result = deploy(model, "mps2-an386", npu=npu, seed=0, samples=1)
    assert result.outputs_identical_to_host
    executables = result.artifact.manifest["mynpu"]["executables"] if npu else []
    program = sum(e["bytes"] - e["npu_constants_bytes"] for e in executables)
    assert 0 <= program < result.flash.constants
    assert result.flash.constants - program <= 1.1 * own + 4096, (result.flash.constants, program, own)
