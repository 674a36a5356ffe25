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


@pytest.mark.slow
def test_flash_budget_widens_the_weights_on_the_board(shared_models):
    """By default every weight is stored once, as int8; a flash budget lets
    the Cortex-M4 build widen the convolutions' weights to int16: more
    constants, fewer instructions, the same outputs as the host. The deploy
    table and JSON show the layer kernels' blocks and what is left of IREE's
    constant pool."""
    from npukit.deploy.deploy_report import format_table

    model = shared_models / "kws_int8.tflite"
    default = deploy(model, "mps2-an386", seed=3, samples=2)
    wide = deploy(model, "mps2-an386", seed=3, samples=2, flash_budget=1 << 30)
    for result in (default, wide):
        assert all(s.identical_to_host for s in result.samples), result.console
    assert default.to_json()["kernel_constants"]["int16_layers"] == 0
    assert wide.to_json()["kernel_constants"]["int16_layers"] == 6
    assert wide.flash.constants > default.flash.constants and wide.instructions < default.instructions
    (pool,) = default.to_json()["constant_pools"]
    assert pool["kept"] < pool["bytes"]
    table = format_table(wide)
    assert "layer kernels' blocks" in table and "budget 1,073,741,824 B" in table and "IREE's constant pool" in table
