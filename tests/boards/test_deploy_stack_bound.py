"""The stack bound a deploy reads from the firmware's machine code before it
runs holds on the board: the painted stack's high-water mark after the runs
is at most the bound, for CPU and NPU builds on a Cortex-M4 and an RV32
board, and the firmware's stack is sized from it."""

from __future__ import annotations

import pytest

from npukit.deploy.deploy_model import deploy
from npukit.deploy.firmware_stack import stack_size_for
from npukit.stack.indirect_calls import RECURSION_LIMITS

CASES = [(model, board, npu) for model in ("kws_int8.tflite", "resnet8_int8.tflite")
         for board in ("mps2-an386", "virt-rv32imf") for npu in (None, "mynpu")]
# kws_int8.onnx: IREE's float code realigns its stack on Cortex-M4.
CASES += [("kws_int8.onnx", "mps2-an386", None), ("zoo/hello_world_int8.tflite", "mps2-an386", None), ("zoo/micro_speech_quantized.tflite", "mps2-an386", None),
          ("zoo/micro_speech_quantized.tflite", "virt-rv32imf", "mynpu")]


@pytest.mark.slow
@pytest.mark.parametrize("model,board,npu", CASES)
def test_measured_stack_within_the_static_bound(model, board, npu, shared_models):
    result = deploy(shared_models / model, board, npu=npu, seed=5)
    stack = result.stack
    context = f"{model} on {board} ({npu or 'CPU'}): {stack.to_json() if stack else None}"
    assert result.outputs_match_host, context
    assert stack is not None and stack.bytes is not None, context
    assert 0 < result.ram.stack_high_water <= stack.bytes, context
    assert result.ram.stack_size == stack_size_for(stack.bytes), context
    assert stack.model is not None and 0 < stack.model.bytes <= stack.bytes, context
    dispatch = result.artifact.manifest["stack"]["dispatch_stack"]
    assert dispatch is not None and dispatch < stack.model.bytes, context
    limits = {a.split(" at most ")[0] for a in stack.whole.assumptions}
    assert limits <= set(RECURSION_LIMITS), context


@pytest.mark.slow
def test_embedded_executables_have_no_bound(shared_models):
    # Their code is loaded into RAM at run time: the firmware's machine code does not hold it.
    result = deploy(shared_models / "kws_int8.tflite", "mps2-an386", mode="embedded", seed=5)
    assert result.outputs_match_host
    assert result.stack.bytes is None and "loaded at run time" in result.stack.whole.reason
    assert result.ram.stack_size == 32768 and "stack" not in result.artifact.manifest
