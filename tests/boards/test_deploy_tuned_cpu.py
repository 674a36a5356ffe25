"""``npukit deploy --cpu-pipeline tuned``: the int8 models with npukit's
kernels run on the boards (static libraries and embedded ELFs on both
boards) and give, on several random inputs, exactly the host's tuned
outputs: the kernels' float output stage computes the ONNX graph's float
requantization on the boards' FPUs as on the host. (How the host's outputs
relate to onnxruntime's, whose float32 sums can round a layer across a half
step: tests/compiler/test_onnx_qdq_rounding.py.)"""

from __future__ import annotations

import pytest

from npukit.deploy.deploy_model import deploy


@pytest.mark.slow
@pytest.mark.parametrize("model,board,mode", [
    ("kws_int8", "mps2-an386", "static"),
    ("resnet8_int8", "mps2-an386", "static"),
    ("resnet8_int8", "mps2-an386", "embedded"),
    ("kws_int8", "virt-rv32imf", "embedded"),
    ("resnet8_int8", "virt-rv32imf", "static"),
])
def test_tuned_int8_model_on_board(model, board, mode, shared_models):
    result = deploy(shared_models / f"{model}.onnx", board, mode=mode, cpu_pipeline="tuned", seed=5, samples=4)
    context = f"{model} tuned on {board} ({mode}); console:\n{result.console}"
    assert result.artifact.manifest["cpu_pipeline"] == "tuned" and not result.artifact.manifest["warnings"], context
    outputs = []
    for sample in result.samples:
        assert sample.identical_to_host, context
        outputs.append(sample.outputs[0].tobytes())
    assert len(set(outputs)) > 1, context  # the inputs reach different outputs
    assert result.instructions > 0
