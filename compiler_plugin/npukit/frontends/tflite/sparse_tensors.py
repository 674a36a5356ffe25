"""Constant tensors stored sparse (TFLite's ``SparsityParameters``), made dense.

A sparse tensor's buffer holds only its stored values, in the order of a
walk over the "expanded" dimensions: the tensor's own dimensions, then one
per blocked dimension (``block_map[j]`` names the original dimension whose
blocks the expanded dimension ``n + j`` indexes inside). ``traversal_order``
gives the walk's order of the expanded dimensions and ``dim_metadata`` one
entry per level of the walk:

- DENSE, ``dense_size`` values: every coordinate 0..size-1 is stored; the
  position at the next level is ``position * size + coordinate``;
- SPARSE_CSR: the coordinates stored under ``position`` are
  ``array_indices[array_segments[position]:array_segments[position + 1]]``,
  and the position at the next level is the index into ``array_indices``.

The last level's position indexes the buffer's values. An original
dimension's coordinate is ``block coordinate * block size + coordinate in
the block``, the block size being the dense size of its block dimension.
Everything is checked against the tensor's shape and the buffer's length.
"""

from __future__ import annotations

import numpy as np

DENSE, SPARSE_CSR = 0, 1


class SparseTensorError(ValueError):
    """A sparse encoding that does not describe a tensor of its shape."""


def _index_vector(kind: int, table) -> np.ndarray:
    """An array_segments / array_indices union (Int32Vector, Uint16Vector or Uint8Vector) as int64."""
    import tflite
    from tflite.Int32Vector import Int32Vector
    from tflite.Uint8Vector import Uint8Vector
    from tflite.Uint16Vector import Uint16Vector

    classes = {tflite.SparseIndexVector.Int32Vector: Int32Vector, tflite.SparseIndexVector.Uint16Vector: Uint16Vector,
               tflite.SparseIndexVector.Uint8Vector: Uint8Vector}
    if kind not in classes or table is None:
        raise SparseTensorError(f"a sparse dimension without its index vector (type {kind})")
    vector = classes[kind]()
    vector.Init(table.Bytes, table.Pos)
    values = vector.ValuesAsNumpy()
    return np.zeros(0, np.int64) if isinstance(values, int) else np.asarray(values, np.int64)


def read_sparsity(sparsity) -> dict:
    """The flatbuffer's SparsityParameters as plain arrays."""
    traversal = sparsity.TraversalOrderAsNumpy()
    block_map = sparsity.BlockMapAsNumpy()
    levels = []
    for i in range(sparsity.DimMetadataLength()):
        meta = sparsity.DimMetadata(i)
        if meta.Format() == DENSE:
            levels.append({"format": DENSE, "size": int(meta.DenseSize())})
        elif meta.Format() == SPARSE_CSR:
            levels.append({"format": SPARSE_CSR,
                           "segments": _index_vector(meta.ArraySegmentsType(), meta.ArraySegments()),
                           "indices": _index_vector(meta.ArrayIndicesType(), meta.ArrayIndices())})
        else:
            raise SparseTensorError(f"dimension format {meta.Format()}")
    return {"traversal_order": [] if isinstance(traversal, int) else [int(v) for v in traversal],
            "block_map": [] if isinstance(block_map, int) else [int(v) for v in block_map],
            "levels": levels}


def densify(values: np.ndarray, shape: tuple[int, ...], traversal_order: list[int], block_map: list[int],
            levels: list[dict]) -> np.ndarray:
    """The dense tensor of ``shape`` whose stored values are ``values`` (zeros elsewhere)."""
    rank, expanded = len(shape), len(shape) + len(block_map)
    if sorted(traversal_order) != list(range(expanded)) or len(levels) != expanded:
        raise SparseTensorError(f"a traversal order {traversal_order} and {len(levels)} dimension entries for "
                                f"{rank} dimensions and {len(block_map)} blocked ones")
    if any(not 0 <= d < rank for d in block_map) or len(set(block_map)) != len(block_map):
        raise SparseTensorError(f"a block map {block_map} for {rank} dimensions")
    block_sizes = {}
    for j, dim in enumerate(block_map):
        level = levels[traversal_order.index(rank + j)]
        if level["format"] != DENSE or level["size"] <= 0 or shape[dim] % level["size"]:
            raise SparseTensorError(f"blocks along dimension {dim} that do not divide its {shape[dim]} values")
        block_sizes[dim] = level["size"]
    # The extent of each expanded dimension: blocks per dimension, then the block sizes.
    extents = [shape[d] // block_sizes.get(d, 1) for d in range(rank)] + [block_sizes[d] for d in block_map]
    # Coordinates of every stored value, level by level: (positions, coordinates of the expanded dims).
    positions = np.zeros(1, np.int64)
    coordinates = np.zeros((1, expanded), np.int64)
    for level, dim in zip(levels, traversal_order):
        if level["format"] == DENSE:
            size = level["size"]
            if size != extents[dim]:
                raise SparseTensorError(f"a dense level of {size} values along a dimension of {extents[dim]}")
            inner = np.arange(size, dtype=np.int64)
            positions = (positions[:, None] * size + inner[None, :]).reshape(-1)
            coordinates = np.repeat(coordinates, size, axis=0)
            coordinates[:, dim] = np.tile(inner, len(coordinates) // size)
        else:
            segments, indices = level["segments"], level["indices"]
            if len(segments) == 0 or positions.size and positions.max() + 1 >= len(segments) or \
                    np.any(np.diff(segments) < 0) or segments[0] != 0 or segments[-1] > len(indices):
                raise SparseTensorError("array segments that do not index their array of indices")
            counts = segments[positions + 1] - segments[positions]
            starts = np.repeat(segments[positions], counts)
            offsets = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
            positions = starts + offsets
            coordinates = np.repeat(coordinates, counts, axis=0)
            coordinates[:, dim] = indices[positions]
            if np.any(coordinates[:, dim] < 0) or np.any(coordinates[:, dim] >= extents[dim]):
                raise SparseTensorError(f"an index outside the {extents[dim]} values of its dimension")
    if positions.size and (positions.max() >= values.size):
        raise SparseTensorError(f"the encoding reads value {int(positions.max())} of {values.size} stored")
    if values.size != positions.size:
        raise SparseTensorError(f"{values.size} stored values for {positions.size} positions the encoding lists")
    original = coordinates[:, :rank].copy()
    for j, dim in enumerate(block_map):
        original[:, dim] = original[:, dim] * block_sizes[dim] + coordinates[:, rank + j]
    dense = np.zeros(shape, values.dtype)
    dense[tuple(original.T)] = values[positions]
    return dense
