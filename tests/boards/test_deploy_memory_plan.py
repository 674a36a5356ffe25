"""The compile-time memory plan on a board: the header's <NAME>_ARENA_SIZE is
exactly the high-water mark the runtime reports for the planned block on
mps2-an386, on the CPU and with the NPU; the arena's high-water mark holds the
block once, and the deploy JSON reports the plan and the lower bound."""

from __future__ import annotations

import re

import numpy as np
import pytest

from npukit.deploy.deploy_model import deploy
from npukit.frontends.activation_liveness import activation_liveness


@pytest.mark.slow
@pytest.mark.parametrize("npu", [None, "mynpu"])
def test_header_arena_size_is_the_runtime_high_water_mark_on_the_board(npu, shared_models, tmp_path):
    model = shared_models / "kws_int8.onnx"
    result = deploy(model, "mps2-an386", npu=npu, samples=2, keep=tmp_path / "fw")
    context = result.console
    assert result.outputs_identical_to_host, context
    header = (result.project_dir / "model-artifact" / "kws_int8_model.h").read_text()
    found = re.search(r"#define KWS_INT8_ARENA_SIZE (\d+)u", header)
    assert found, header
    planned = int(found.group(1))
    assert planned == result.arena_planned == result.ram.buffer_plan_size, context
    assert result.ram.buffer_plan_high_water == planned, context
    # The block is inside the arena's high-water mark, with the runtime's objects beside it.
    assert planned < result.ram.runtime_arena, context
    figures = result.to_json()
    assert figures["arena_planned"] == figures["arena_plan_high_water"] == planned
    assert figures["activation_lower_bound"] == activation_liveness(model).lower_bound == 16000
    assert figures["ram_without_stack"] == result.ram.static_data + result.ram.runtime_arena
    assert np.array_equal(result.outputs[0], result.host_outputs[0])
