"""Resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE)
compiled for the host against TFLite's reference kernels (BUILTIN_REF) over
several calls, the state carried from one to the next: int8 and int16 windows
of the last frames (as streaming keyword spotters keep them) initialised
by the CALL_ONCE's subgraph, a float accumulator of the same name in another
container, reads before and after an assignment in one call, and a variable
assigned before it is read with no initialisation. One model, compiled once.
What TFLite refuses to run or what would start differently on the first call
is refused at import, in one line."""

from __future__ import annotations

import numpy as np
import pytest

import npukit
from npukit.errors import ModelError
from npukit.frontends.tflite.importer import import_tflite
from support.oracles import TFLiteReference, assert_float_close
from support.tflite_resource_variables import Program

CALLS = 5


def _sweep_model() -> bytes:
    rng = np.random.default_rng(3)
    p = Program()
    # An int8 window of 3 frames of 4 features, extended by 2 new frames per call (the last 3 kept).
    p.init("window", rng.integers(-128, 128, (1, 3, 4)).astype(np.int8))
    x0 = p.input([1, 2, 4], np.int8, "frames", scale=0.05, zero_point=-3)
    window = p.read("window", [1, 3, 4], np.int8, scale=0.05, zero_point=-3)
    joined = p.concatenate(window, x0, 1, [1, 5, 4], np.int8, scale=0.05, zero_point=-3)
    p.assign("window", p.keep_last(joined, [1, 5, 4], 1, 3, np.int8, scale=0.05, zero_point=-3))
    p.output(joined)
    # An int16 window along the last axis, in a container; a float accumulator of the same name outside it.
    p.init("acc", np.arange(-5, 5, dtype=np.int16).reshape(2, 5) * 999, container="stream")
    p.init("acc", np.full((2, 3), 0.25, np.float32))
    x1 = p.input([2, 3], np.int16, "samples", scale=1 / 4096)
    history = p.read("acc", [2, 5], np.int16, container="stream", scale=1 / 4096)
    longer = p.concatenate(history, x1, 1, [2, 8], np.int16, scale=1 / 4096)
    p.assign("acc", p.keep_last(longer, [2, 8], 1, 5, np.int16, scale=1 / 4096), container="stream")
    p.output(longer)
    x2 = p.input([2, 3], np.float32, "increments")
    total = p.add(p.read("acc", [2, 3], np.float32), x2, [2, 3], np.float32)
    p.assign("acc", total)
    p.output(total)
    # Read, assign, read again in one call: the first read sees the last call's value, the second this one's.
    p.init("order", np.array([[7, -7, 100, -100]], np.int8))
    x3 = p.input([1, 4], np.int8, "latest", scale=0.1)
    p.output(p.read("order", [1, 4], np.int8, scale=0.1))
    p.assign("order", x3)
    p.output(p.read("order", [1, 4], np.int8, scale=0.1))
    # Assigned before it is read, with no initial value: TFLite runs it, each call reading this call's value.
    p.assign("fresh", x1)
    p.output(p.read("fresh", [2, 3], np.int16, scale=1 / 4096))
    return p.build()


def _inputs(rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.integers(-128, 128, (1, 2, 4)).astype(np.int8), rng.integers(-32768, 32768, (2, 3)).astype(np.int16),
            rng.uniform(-2, 2, (2, 3)).astype(np.float32), rng.integers(-128, 128, (1, 4)).astype(np.int8)]


def test_resource_variables_equal_reference_kernels(tmp_path):
    path = tmp_path / "resource_variables.tflite"
    path.write_bytes(_sweep_model())
    reference = TFLiteReference(path, kernels="reference")
    compiled = npukit.load(npukit.compile(path, out_dir=tmp_path / "host"))
    rng = np.random.default_rng(0)
    changed = False
    for call in range(CALLS):
        xs = _inputs(rng)
        want, got = reference.run(xs), compiled(*xs)
        assert len(got) == len(want) == 6
        for n, (w, g) in enumerate(zip(want, got)):
            g = np.asarray(g).reshape(w.shape)
            if w.dtype == np.float32:
                assert_float_close(g, w)
            else:
                assert g.dtype == w.dtype and np.array_equal(g, w), f"call {call}, output {n}: {g} != {w}"
        if call == 0:
            first = [w.copy() for w in want]
        else:
            changed = changed or not np.array_equal(want[0][:, :3], first[0][:, :3])
    assert changed  # the window's old frames come from earlier calls, not from the initial value alone


def _refused(tmp_path, program: Program, match: str) -> None:
    path = tmp_path / "refused.tflite"
    path.write_bytes(program.build())
    with pytest.raises(ModelError, match=match):
        import_tflite(path, "refused")


def test_read_before_any_assignment_is_refused(tmp_path):
    p = Program()
    x = p.input([1, 4], np.int8, "x", scale=0.1)
    p.output(p.concatenate(p.read("state", [1, 4], np.int8, scale=0.1), x, 1, [1, 8], np.int8, scale=0.1))
    _refused(tmp_path, p, r"READ_VARIABLE.*reads the resource variable 'state' before anything assigns it")


def test_assignment_of_another_shape_is_refused(tmp_path):
    p = Program()
    p.init("state", np.zeros((1, 3), np.int8))
    x = p.input([1, 4], np.int8, "x", scale=0.1)
    p.assign("state", x)
    p.output(p.read("state", [1, 4], np.int8, scale=0.1))
    _refused(tmp_path, p, r"ASSIGN_VARIABLE.*an assignment of int8\[1,4\] for the resource variable 'state', "
                          r"which holds int8\[1,3\]")


def test_initialisation_after_use_is_refused(tmp_path):
    p = Program()
    x = p.input([1, 4], np.int8, "x", scale=0.1)
    p.assign("state", x)
    p.init("state", np.zeros((1, 4), np.int8))
    p.output(p.read("state", [1, 4], np.int8, scale=0.1))
    _refused(tmp_path, p, r"CALL_ONCE.*initialises the resource variable 'state' after the model has used it")


def test_computed_initial_value_is_refused(tmp_path):
    p = Program()
    p.init("state", np.zeros((1, 4), np.int8))
    # The initialisation subgraph's value tensor loses its data: a value computed by nothing.
    p.build()
    p.model.buffers[p.initialiser.graph.tensors[1].buffer].data = None
    x = p.input([1, 4], np.int8, "x", scale=0.1)
    p.output(p.concatenate(p.read("state", [1, 4], np.int8, scale=0.1), x, 1, [1, 8], np.int8, scale=0.1))
    _refused(tmp_path, p, r"CALL_ONCE.*assigns a computed value to the resource variable 'state'")


def test_inline_dynamic_execution_model_is_refused(tmp_path):
    """The boards' execution model computed wrong states for a published streaming detector: refused, in one
    line, before IREE runs."""
    path = tmp_path / "resource_variables.tflite"
    path.write_bytes(_sweep_model())
    with pytest.raises(ModelError, match="resource variables .* inline-dynamic execution model"):
        npukit.compile(path, target="cortex-m4", output="static", out_dir=tmp_path / "m4")


def test_call_once_of_a_missing_subgraph_is_refused(tmp_path):
    p = Program()
    p.init("state", np.zeros((1, 4), np.int8))
    x = p.input([1, 4], np.int8, "x", scale=0.1)
    p.output(p.concatenate(p.read("state", [1, 4], np.int8, scale=0.1), x, 1, [1, 8], np.int8, scale=0.1))
    p.main.graph.operators[0].builtinOptions.initSubgraphIndex = 5
    _refused(tmp_path, p, r"not a valid TFLite model: operator 0 \(CALL_ONCE\) runs subgraph 5; the model has 2")
