"""Transient slabs packed in the order the inline execution model runs the
commands (npukit/passes/transient_packing.py). Exactness: every int8 zoo
model on npukit's runtime with the inline model equals TFLite's reference
kernels (tests/zoo, test_host_npukit_runtime), and the boards' deploys
equal the host."""

from __future__ import annotations

from npukit.passes.transient_packing import _buffers, _groups, _Use


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


def test_kws_slab_shrinks_to_what_is_alive_in_order(shared_models, artifact_cache):
    """kws_int8.tflite: IREE packs its padded activations into 32,896 bytes
    because each pad's fill is concurrent with the dispatch that still
    reads the previous one; in program order they share bytes (the largest
    live set: a padded 27x7x64 buffer and a 25x5x64 one, 20,096 bytes)."""
    result = artifact_cache(shared_models / "kws_int8.tflite", "cortex-m4", "static")
    (slab,) = result.manifest["transient_slabs"]
    assert slab["bytes"] == 32896 and 20096 <= slab["packed"] <= 20800 and "reason" not in slab
    assert result.manifest["memory_plan"]["arena_size"] < 32896


def test_the_async_model_keeps_iree_packing(shared_models, artifact_cache):
    """IREE's runtime may run a concurrent region's commands at once: the
    host .vmfb keeps IREE's slab."""
    assert artifact_cache(shared_models / "kws_int8.tflite").manifest["transient_slabs"] == []
