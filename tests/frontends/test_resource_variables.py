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
from support.tflite_resource_variables import Program, with_states_as_outputs

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


@pytest.mark.parametrize("malformed", ["one input", "an output"])
def test_assignment_outside_its_signature_is_refused(tmp_path, malformed):
    """An ASSIGN_VARIABLE with one input, or with an output, is refused in one line by the graph check
    (operator_signatures) before its lowering reads it."""
    p = Program()
    x = p.input([1, 4], np.int8, "x", scale=0.1)
    p.init("state", np.zeros((1, 4), np.int8))
    handle = p.handle(p.main, "state")
    if malformed == "one input":
        p.operator(p.main, "ASSIGN_VARIABLE", [handle], [])
        match = "1 inputs; ASSIGN_VARIABLE takes 2"
    else:
        out = p.tensor(p.main, [1, 4], np.int8, "extra", scale=0.1)
        p.operator(p.main, "ASSIGN_VARIABLE", [handle, x], [out])
        match = "1 outputs; ASSIGN_VARIABLE has 0"
    p.output(x)
    _refused(tmp_path, p, match)


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


def _streaming_model() -> bytes:
    """Two state windows in a chain, as pymicro-wakeword's detectors keep them: each window joined with the
    newest frames (IREE copies the state and the frames into the parts of one buffer), its last frames
    assigned back, and a convolution over the whole joined window; the second window takes the first
    convolution's output."""
    rng = np.random.default_rng(11)
    p = Program()
    p.init("frames", np.full((1, 2, 1, 40), -128, np.int8))
    p.init("features", np.full((1, 4, 1, 30), -128, np.int8))
    x = p.input([1, 3, 1, 40], np.int8, "audio", scale=0.1, zero_point=-128)
    window = p.read("frames", [1, 2, 1, 40], np.int8, scale=0.1, zero_point=-128)
    joined = p.concatenate(window, x, 1, [1, 5, 1, 40], np.int8, scale=0.1, zero_point=-128)
    kept = p.keep_last(joined, [1, 5, 1, 40], 1, 2, np.int8, scale=0.1, zero_point=-128)
    p.assign("frames", kept)
    first = p.conv(joined, rng.integers(-127, 128, (30, 5, 1, 40)).astype(np.int8),
                   rng.integers(-4000, 4000, 30).astype(np.int32), [1, 1, 1, 30], 0.1, 0.004, 1.5, -128)
    state = p.read("features", [1, 4, 1, 30], np.int8, scale=1.5, zero_point=-128)
    longer = p.concatenate(state, first, 1, [1, 5, 1, 30], np.int8, scale=1.5, zero_point=-128)
    kept_features = p.keep_last(longer, [1, 5, 1, 30], 1, 4, np.int8, scale=1.5, zero_point=-128)
    p.assign("features", kept_features)
    p.output(p.conv(longer, rng.integers(-127, 128, (60, 5, 1, 30)).astype(np.int8),
                    rng.integers(-4000, 4000, 60).astype(np.int32), [1, 1, 1, 60], 1.5, 0.002, 0.5, -128))
    p.output(kept)
    p.output(kept_features)
    return p.build()


def test_inline_dynamic_execution_model_carries_the_state(tmp_path):
    """The boards' execution model on npukit's runtime: IREE copies each state window and the new frames into
    the parts of one transient buffer that a layer then reads whole, and allocates the states' next values
    anew on every call. Packed in program order, the parts stay where the layer reads them; the memory plan
    keeps the state of the last call apart from this call's (0 LSB against the reference kernels over
    several calls; before, the first call's outputs were wrong and the second call failed the plan)."""
    path = tmp_path / "streaming.tflite"
    path.write_bytes(_streaming_model())
    reference = TFLiteReference(path, kernels="reference")
    result = npukit.compile(path, output="static", execution_model="inline-dynamic", out_dir=tmp_path / "inline")
    assert "refused" not in result.manifest["memory_plan"]
    compiled = npukit.load(result, runtime="npukit")
    rng = np.random.default_rng(5)
    for call in range(CALLS):
        x = rng.integers(-128, 128, (1, 3, 1, 40)).astype(np.int8)
        want, got = reference.run([x]), compiled(x)
        assert len(want) == len(got) == 3
        for n, (w, g) in enumerate(zip(want, got)):
            g = np.asarray(g).reshape(w.shape)
            assert np.array_equal(g, w), f"call {call}, output {n}: {np.abs(g.astype(int) - w).max()} LSB off"


_DETECTORS = ("alexa", "hey_jarvis", "hey_mycroft", "okay_nabu")


@pytest.mark.slow
@pytest.mark.parametrize("name", _DETECTORS)
def test_streaming_detectors_under_inline_dynamic(name, tmp_path):
    """pymicro-wakeword 2.5.0's four int8 detectors (from npukit's cache of the published models, fetched once
    as benchmarks/published_models.py fetches them), each state exposed as an output, on npukit's runtime
    with the inline-dynamic execution model and its memory plan: the logit and the 6 states equal the
    reference kernels' over successive calls (hey_jarvis's states were up to 255 LSB off from the first call,
    and every detector's second call failed the memory plan)."""
    from benchmarks.published_models import fetch
    from npukit.cpu.archive_build import cache_dir

    cache = cache_dir() / "published-models"
    cache.mkdir(parents=True, exist_ok=True)
    (found,) = [p for n, p, _ in fetch(cache, (("pymicro-wakeword==2.5.0", "pymicro_wakeword/models/*.tflite"),))
                if n == f"{name}.tflite"]
    path = tmp_path / found.name
    path.write_bytes(with_states_as_outputs(found.read_bytes()))
    reference = TFLiteReference(path, kernels="reference")
    result = npukit.compile(path, output="static", execution_model="inline-dynamic", out_dir=tmp_path / "inline")
    assert "refused" not in result.manifest["memory_plan"]
    compiled = npukit.load(result, runtime="npukit")
    rng = np.random.default_rng(2)
    shape = tuple(result.entry_points[0].inputs[0].shape)
    for call in range(CALLS):
        x = rng.integers(-128, 128, shape).astype(np.int8)
        want, got = reference.run([x]), compiled(x)
        assert len(want) == len(got) == 7
        for n, (w, g) in enumerate(zip(want, got)):
            g = np.asarray(g).reshape(w.shape)
            assert np.array_equal(g.view(w.dtype), w), f"call {call}, output {n}: {g} != {w}"


def test_call_once_of_a_missing_subgraph_is_refused(tmp_path):
    p = Program()
    p.init("state", np.zeros((1, 4), np.int8))
    x = p.input([1, 4], np.int8, "x", scale=0.1)
    p.output(p.concatenate(p.read("state", [1, 4], np.int8, scale=0.1), x, 1, [1, 8], np.int8, scale=0.1))
    p.main.graph.operators[0].builtinOptions.initSubgraphIndex = 5
    _refused(tmp_path, p, r"not a valid TFLite model: operator 0 \(CALL_ONCE\) runs subgraph 5; the model has 2")


@pytest.mark.slow
def test_streaming_model_on_cortex_m4_board(tmp_path):
    """The synthetic streaming model deployed on mps2-an386 (inline-dynamic, the memory plan): every call's
    outputs equal the reference kernels making the same calls in the same order, and the host's."""
    from npukit.deploy.deploy_model import deploy

    path = tmp_path / "streaming.tflite"
    path.write_bytes(_streaming_model())
    result = deploy(path, "mps2-an386", samples=3, seed=5)
    context = f"console:\n{result.console}"
    assert result.artifact.manifest["execution_model"] == "inline-dynamic", context
    assert "refused" not in result.artifact.manifest["memory_plan"], context
    assert result.outputs_identical_to_host, context
    # The firmware's calls: the first sample twice (its second run checked), then each other sample once.
    reference = TFLiteReference(path, kernels="reference")
    reference.run(list(result.samples[0].inputs))
    for k, sample in enumerate(result.samples):
        want = reference.run(list(sample.inputs))
        assert len(sample.outputs) == len(want) == 3
        for got, expected in zip(sample.outputs, want):
            assert np.array_equal(np.asarray(got).reshape(expected.shape), expected), f"sample {k}; {context}"
