"""The compile-time memory plan and the live-activation lower bound.

Placement: buffers whose intervals share no step share bytes, the others
never overlap, offsets are 64-byte aligned. The lower bound agrees with the
zoo's model readers (tests/zoo, written separately on the tflite and onnx
packages). On the host, a compiled model's header states the planned block
(<NAME>_ARENA_SIZE) and the runtime's high-water mark in it after two runs is
exactly that, with outputs equal to IREE's runtime.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

import npukit
from npukit.codegen.memory_plan import ALIGNMENT, place, plan_memory
from npukit.frontends.activation_liveness import activation_liveness
from zoo.onnx_reader import OnnxModel
from zoo.tflite_reader import TFLiteModel


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


@pytest.mark.parametrize("seed", range(20))
def test_placement_never_overlaps_live_buffers(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    sizes = [int(s) for s in rng.integers(1, 5000, n)]
    intervals = []
    for _ in range(n):
        first = int(rng.integers(0, 10))
        intervals.append((first, first + int(rng.integers(0, 5))))
    offsets = place(sizes, intervals)
    for i, j in itertools.combinations(range(n), 2):
        if _overlap(intervals[i], intervals[j]):
            assert offsets[i] + sizes[i] <= offsets[j] or offsets[j] + sizes[j] <= offsets[i], (i, j)
    assert all(o % ALIGNMENT == 0 for o in offsets)
    # No worse than giving every buffer its own bytes.
    assert max(o + s for o, s in zip(offsets, sizes)) <= sum(-(-s // ALIGNMENT) * ALIGNMENT for s in sizes)


def test_buffers_with_disjoint_lifetimes_share_bytes():
    offsets = place([1000, 800, 600], [(0, 1), (2, 3), (1, 2)])
    assert offsets[0] == offsets[1] == 0 and offsets[2] == 1024


def test_plan_lists_buffers_in_allocation_order():
    plan = plan_memory("f", [490], [(12, "external"), (40000, "transient")])
    assert [b.role for b in plan.buffers] == ["input 0", "external", "transient"]
    assert plan.persistent_count == 1
    assert plan.arena_size == max(b.offset + b.bytes for b in plan.buffers)
    assert plan.buffers[2].offset == 0  # the largest first


def test_state_buffers_of_two_runs_never_share_bytes():
    """A program with state allocates its next value on every run and keeps it past the run: the plan lists
    two runs, which the runtime takes in turn, each run's state buffer apart from everything, the other
    buffers of the two runs in the same bytes."""
    plan = plan_memory("f", [], [(3072, "external"), (3008, "variable"), (1340, "transient")])
    assert [b.role for b in plan.buffers] == ["external", "variable", "transient"] * 2
    assert plan.persistent_count == 0
    external, state, slab, external_2, state_2, slab_2 = plan.buffers
    assert (external.offset, slab.offset) == (external_2.offset, slab_2.offset)
    for a in (state, state_2):
        for b in plan.buffers:
            if b is not a:
                assert a.offset + a.bytes <= b.offset or b.offset + b.bytes <= a.offset, (a, b)


def test_a_program_without_state_plans_one_run():
    plan = plan_memory("f", [], [(3072, "external"), (1340, "transient")])
    assert [b.role for b in plan.buffers] == ["external", "transient"]


@pytest.mark.parametrize("name", ["kws_int8.onnx", "kws_int8.tflite", "resnet8_int8.onnx", "resnet8_int8.tflite",
                                  "kws_f32.onnx", "zoo/micro_speech_quantized.tflite",
                                  "zoo/trained_lstm_int8.tflite", "zoo/keyword_scrambled_8bit.tflite"])
def test_lower_bound_agrees_with_the_zoo_readers(name, shared_models):
    path = shared_models / name
    reader = TFLiteModel(path) if path.suffix == ".tflite" else OnnxModel(path)
    liveness = activation_liveness(path)
    assert liveness.lower_bound == reader.peak_activation_bytes
    assert len(liveness.operators) > 0


def test_kws_lower_bound_is_two_feature_maps(shared_models):
    # 25x5x64 int8 feature maps: a depthwise layer's input and output.
    assert activation_liveness(shared_models / "kws_int8.tflite").lower_bound == 2 * 25 * 5 * 64


@pytest.mark.parametrize("model", ["kws_int8.onnx", "resnet8_int8.tflite"])
def test_header_arena_size_is_the_runtime_high_water_mark_on_the_host(model, shared_models, rng, tmp_path):
    path = shared_models / model
    artifact = npukit.compile(path, target="host", output="static", execution_model="inline-dynamic",
                              out_dir=tmp_path / "static")
    plan = artifact.manifest["memory_plan"]
    header = (artifact.directory / f"{artifact.name}_model.h").read_text()
    found = re.search(rf"#define {artifact.name.upper()}_ARENA_SIZE (\d+)u", header)
    assert found and int(found.group(1)) == plan["arena_size"] > 0, header
    assert artifact.manifest["activations"]["lower_bound"] == activation_liveness(path).lower_bound

    entry = artifact.entry_points[0]
    inputs = [rng.integers(-128, 128, spec.shape).astype(spec.dtype) for spec in entry.inputs]
    stock = npukit.load(npukit.compile(path, target="host", out_dir=tmp_path / "vmfb"))
    loaded = npukit.load(artifact, runtime="npukit")
    for _ in range(2):
        for got, want in zip(loaded(*inputs), stock(*inputs)):
            assert np.array_equal(got, want)
    stats = loaded.native.stats()
    assert stats["buffer_plan_size"] == plan["arena_size"]
    assert stats["buffer_plan_high_water_mark"] == plan["arena_size"]
    assert stats["arena_invalid_frees"] == 0


def test_address_tables_count_as_constants():
    from npukit.deploy.firmware_size import map_sections

    text = "\n".join([
        "Linker script and memory map",
        " .rodata.weights  0x00001000       0x40 model.o",
        " .data.rel.ro.kws_int8_linked_library_query_v0_names",
        "                0x00001040       0x34 model.o",
        " .data.counter  0x20000000        0x4 app.o",
        " .bss.slots     0x20000004       0x10 app.o",
    ])
    assert map_sections(text) == [("rodata", "model.o", 0x40), ("rodata", "model.o", 0x34), ("data", "app.o", 4),
                                  ("bss", "app.o", 0x10)]
