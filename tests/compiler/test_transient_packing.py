"""Transient slabs packed in the order the inline execution model runs the
commands (npukit/passes/transient_packing.py). Exactness: every int8 zoo
model on npukit's runtime with the inline model equals TFLite's reference
kernels (tests/zoo, test_host_npukit_runtime), and the boards' deploys
equal the host."""

from __future__ import annotations

import pytest

from npukit.passes.transient_packing import _buffers, _groups, _Use


# Nine channel-last depthwise layers side by side whose padded inputs IREE
# copies into one slab: packed in program order the slab is the largest
# padded input, 4,032 bytes, the size of the external buffer holding the
# nine outputs.
_EQUAL_SIZE_CASES = [
    # channels, multiplier, (h, w), kernel, stride, dilation, padding, activation, per_channel, zp, large bias
    (8, 1, (9, 9), (3, 3), (2, 2), (1, 1), 0, 1, True, -128, False),
    (12, 1, (5, 7), (3, 3), (1, 1), (1, 1), 1, 3, True, 3, False),
    (4, 1, (3, 3), (3, 3), (1, 1), (1, 1), 1, 0, False, -128, False),
    (20, 1, (1, 9), (3, 3), (1, 1), (1, 1), 0, 1, True, 0, False),
    (8, 1, (7, 1), (3, 3), (2, 1), (1, 1), 0, 3, True, -7, False),
    (16, 1, (10, 5), (3, 3), (2, 1), (1, 2), 0, 3, True, -128, False),
    (7, 1, (6, 6), (3, 3), (1, 1), (1, 1), 0, 1, False, 12, False),
    (64, 1, (7, 5), (3, 3), (1, 1), (1, 1), 0, 1, True, -128, False),
    (24, 1, (8, 8), (3, 3), (1, 2), (2, 1), 1, 0, True, 60, False),
]
_PADDED_COPIES = ("--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops=false",)


def _use(index, start, end, writes_all=False):
    return _Use(index, start, end, writes_all, None)


def test_a_full_write_starts_a_new_buffer_in_the_same_bytes():
    uses = [_use(0, 0, 100, True), _use(1, 0, 100), _use(3, 0, 100, True), _use(4, 0, 100)]
    buffers = _buffers(uses)
    assert [(b.first, b.last) for b in buffers] == [(0, 1), (3, 4)]


def test_a_partial_write_extends_the_buffer_it_lands_in():
    uses = [_use(0, 0, 100, True), _use(2, 0, 100), _use(5, 0, 100)]  # read-write at 5: the data may be read
    assert [(b.first, b.last) for b in _buffers(uses)] == [(0, 5)]


def test_overlapping_bytes_alive_together_move_together():
    # A padded buffer filled at 0, its interior written at 1 and read at 2 (a view), and an unrelated buffer
    # in the same bytes later, and one beside it at the same time.
    uses = [_use(0, 0, 1000, True), _use(1, 100, 900), _use(2, 0, 1000), _use(4, 0, 500, True), _use(4, 600, 800, True)]
    groups = _groups(_buffers(uses))
    spans = sorted(sorted((b.start, b.end, b.first, b.last) for b in g) for g in groups)
    assert spans == [[(0, 500, 4, 4)], [(0, 1000, 0, 2), (100, 900, 1, 1)], [(600, 800, 4, 4)]]


def test_a_tensor_written_in_parts_moves_with_its_reader():
    """A streaming model's window: the state copied into [0, 80) at 0 and the new frames into [80, 200) at 1
    (its last frames read at 2: the next state), another state copied beside them at 3 and a layer reading
    the whole window at 4 while writing beside it. The parts keep their places relative to the layer's read
    and stay alive from the first copy to that read, so nothing placed at 3 lands on them."""
    uses = [_use(0, 0, 80, True), _use(1, 80, 200, True), _use(2, 120, 200), _use(3, 256, 376, True),
            _use(4, 0, 200), _use(4, 376, 406, True)]
    groups = _groups(_buffers(uses))
    spans = sorted(sorted((b.start, b.end, b.first, b.last) for b in g) for g in groups)
    assert spans == [[(0, 80, 0, 0), (0, 200, 4, 4), (80, 200, 1, 1), (120, 200, 2, 2)],
                     [(256, 376, 3, 3)], [(376, 406, 4, 4)]]


def test_kws_slab_shrinks_to_what_is_alive_in_order(shared_models, artifact_cache):
    """kws_int8.tflite with IREE's padded copies (as a compile gets them
    where a padded layer stays on IREE's code): IREE packs its padded activations into 32,896 bytes
    because each pad's fill is concurrent with the dispatch that still
    reads the previous one; in program order they share bytes (the largest
    live set: a padded 27x7x64 buffer and a 25x5x64 one, 20,096 bytes)."""
    result = artifact_cache(shared_models / "kws_int8.tflite", "cortex-m4", "static", iree_flags=_PADDED_COPIES)
    (slab,) = result.manifest["transient_slabs"]
    assert slab["bytes"] == 32896 and 20096 <= slab["packed"] <= 20800 and "reason" not in slab
    assert result.manifest["memory_plan"]["arena_size"] < 32896


def test_the_async_model_keeps_iree_packing(shared_models, artifact_cache):
    """IREE's runtime may run a concurrent region's commands at once: the
    host .vmfb keeps IREE's slab."""
    assert artifact_cache(shared_models / "kws_int8.tflite").manifest["transient_slabs"] == []


@pytest.fixture(scope="module")
def equal_size_model(tmp_path_factory):
    import numpy as np
    from kernels.layer_sweeps import _depthwise_branches
    from support.tflite_builder import build_model

    path = tmp_path_factory.mktemp("equal_size") / "nine_depthwise.tflite"
    build_model(_depthwise_branches(np.random.default_rng(8), _EQUAL_SIZE_CASES), path)
    return path


def test_a_slab_never_takes_the_size_of_another_allocation(equal_size_model, tmp_path):
    """IREE merges two inline buffer allocations of the same size into one
    buffer although both are live: the packed slab takes the next aligned
    size instead of the external buffer's 4,032 bytes, and the tuned
    pipeline keeps the compile (no fallback)."""
    import npukit

    result = npukit.compile(equal_size_model, target="cortex-m4", output="static", out_dir=tmp_path / "out",
                            iree_flags=list(_PADDED_COPIES))
    assert result.manifest["cpu_pipeline"] == "tuned", result.manifest.get("warnings")
    (slab,) = result.manifest["transient_slabs"]
    planned = [b["bytes"] for b in result.manifest["memory_plan"]["buffers"]]
    assert slab["packed"] < slab["bytes"] and sorted(planned) == [4032, slab["packed"]] and slab["packed"] != 4032


def test_merged_allocations_are_a_compile_error(equal_size_model, tmp_path, monkeypatch):
    """Were the slab packed to the external buffer's size, the compile
    would see one allocation where it planned two and refuse the program
    (the tuned pipeline then falls back to the stock one, which keeps
    IREE's slab)."""
    import npukit
    import npukit.compile_model as compile_model
    from npukit.driver.compile_job import run_job
    from npukit.passes import transient_packing

    monkeypatch.setattr(transient_packing, "_distinct_size", lambda size, taken: size)
    # In this process, where the patch applies.
    monkeypatch.setattr(compile_model, "_run_worker", lambda job, *args: run_job(job))
    result = npukit.compile(equal_size_model, target="cortex-m4", output="static", out_dir=tmp_path / "out",
                            iree_flags=list(_PADDED_COPIES))
    assert result.manifest["cpu_pipeline"] == "stock"
    assert any("merged into one buffer" in w for w in result.manifest["warnings"])


@pytest.mark.slow
def test_equal_size_buffers_stay_apart_on_a_board(equal_size_model):
    from npukit.deploy.deploy_model import deploy
    from support.tflite_builder import run_reference

    result = deploy(equal_size_model, "mps2-an386", samples=1, seed=3, iree_flags=list(_PADDED_COPIES))
    for sample in result.samples:
        assert sample.identical_to_host
        for got, want in zip(sample.outputs, run_reference(equal_size_model, sample.inputs)):
            assert (got == want).all()
