"""Mutated .tflite and .onnx files for fuzzing npukit's import and compile.

``mutants(seeds, count, seed)`` yields ``count`` mutated files made from the
seed models, each from its own ``random.Random``, so a sample is reproducible
from (seeds, seed, index) alone. Mutations:

- bytes, any format: bit flips, runs of one byte or of random bytes,
  interesting 32-bit words at aligned offsets (the flatbuffer's offsets and
  vector lengths), insertions and deletions, truncations, splices of two
  models of the same format;
- TFLite, through the flatbuffer object API: shapes (huge, negative, zero,
  rank 9 and more), tensor types, buffer indices, buffer data (truncated,
  grown, moved past the end by offset and size), operator inputs and outputs
  (out of range, cyclic, written twice), operator codes, options types,
  quantization (NaN, negative or zero scales, huge zero points, per-channel
  counts and dimensions that do not match), subgraph inputs and outputs;
- ONNX, through protobuf: dimensions (negative, huge, rank 20), data types,
  raw data sizes, node inputs (dangling, cyclic), outputs written twice,
  operator types and domains, attributes (huge, negative, removed), opset
  and IR versions, external data (outside the model's directory, absolute,
  missing, past the end of its file, inside and valid), and enormous fields
  (megabytes of names, documentation strings and attribute lists).

A mutant may need files beside it (external data): ``extra_files`` maps a
path relative to the model's directory (possibly ``../`` outside it) to bytes.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

INTERESTING_32 = (0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000,
                  0xFFFFFFFF, 0xFFFFFFFE, 0x40000000, 0x3FFFFFFF, 0x00100000)
HUGE_DIMS = ((1 << 31) - 1, 1 << 30, 1 << 24, 1 << 20, 65536, 100000, 0, -1, -2, -(1 << 31))


@dataclass
class Mutant:
    name: str
    data: bytes
    kind: str
    seed_model: str
    extra_files: dict[str, bytes] = field(default_factory=dict)

    def write(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / self.name
        path.write_bytes(self.data)
        for rel, content in self.extra_files.items():
            target = (directory / rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        return path


# Bytes ------------------------------------------------------------------------------

def bit_flips(r: random.Random, data: bytes, _other: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(r.choice((1, 2, 4, 8, 20, 64))):
        i = r.randrange(len(b))
        b[i] ^= 1 << r.randrange(8)
    return bytes(b)


def byte_runs(r: random.Random, data: bytes, _other: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(r.choice((1, 1, 2, 5))):
        n = min(r.choice((1, 2, 4, 8, 16, 64, 256)), len(b))
        i = r.randrange(len(b) - n + 1)
        fill = r.choice((0x00, 0xFF, 0x7F, 0x80, None))
        b[i:i + n] = bytes(r.randrange(256) for _ in range(n)) if fill is None else bytes([fill]) * n
    return bytes(b)


def interesting_words(r: random.Random, data: bytes, _other: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(r.choice((1, 1, 2, 4, 10))):
        i = r.randrange(max(len(b) // 4, 1)) * 4
        if i + 4 <= len(b):
            word = r.choice(INTERESTING_32)
            if r.random() < 0.3:  # near the original value: a slightly wrong offset or length
                word = (struct.unpack_from("<I", b, i)[0] + r.choice((-8, -4, -1, 1, 4, 8, 1024))) & 0xFFFFFFFF
            struct.pack_into("<I", b, i, word)
    return bytes(b)


def insert_delete(r: random.Random, data: bytes, _other: bytes) -> bytes:
    b = bytearray(data)
    i = r.randrange(len(b))
    if r.random() < 0.5:
        b[i:i] = bytes(r.randrange(256) for _ in range(r.choice((1, 3, 4, 16))))
    else:
        del b[i:i + r.choice((1, 3, 4, 16))]
    return bytes(b)


def truncate(r: random.Random, data: bytes, _other: bytes) -> bytes:
    return data[: r.choice((r.randrange(len(data)), r.randrange(64), len(data) - r.randrange(1, 64)))]


def splice(r: random.Random, data: bytes, other: bytes) -> bytes:
    return data[: r.randrange(len(data))] + other[r.randrange(len(other)):]


BYTE_MUTATIONS: dict[str, Callable[[random.Random, bytes, bytes], bytes]] = {
    "bit flips": bit_flips, "byte runs": byte_runs, "interesting words": interesting_words,
    "insert/delete": insert_delete, "truncation": truncate, "splice": splice,
}


# TFLite structure -----------------------------------------------------------------------

def _tflite_structure(r: random.Random, data: bytes) -> tuple[bytes, str]:
    import numpy as np
    from ai_edge_litert import schema_py_generated as schema

    from support.tflite_models import pack_model

    model = schema.ModelT.InitFromPackedBuf(data, 0)
    graph = model.subgraphs[0]
    tensors = graph.tensors or []
    ops = graph.operators or []
    n = len(tensors)
    t = r.choice(tensors) if tensors else None
    op = r.choice(ops) if ops else None
    choice = r.choice(("shape", "shape", "rank", "type", "buffer index", "buffer data", "buffer offset",
                       "operator input", "operator output", "cycle", "opcode", "builtin code", "options type",
                       "scale", "zero point", "per-channel", "graph io", "operator count", "variable"))
    if choice == "shape" and t is not None:
        shape = list(t.shape if t.shape is not None else [1])
        if shape:
            shape[r.randrange(len(shape))] = r.choice(HUGE_DIMS)
        t.shape = shape
        if r.random() < 0.5:
            t.shapeSignature = None
    elif choice == "rank" and t is not None:
        t.shape = [1] * r.choice((0, 5, 9, 16, 100))
    elif choice == "type" and t is not None:
        t.type = r.choice((0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 100, 127, -1))
    elif choice == "buffer index" and t is not None:
        t.buffer = r.choice((0, len(model.buffers), len(model.buffers) + 5, -1, 1 << 30,
                             r.randrange(max(len(model.buffers), 1))))
    elif choice == "buffer data":
        buffers = [b for b in model.buffers if b.data is not None and len(b.data)]
        if buffers:
            b = r.choice(buffers)
            size = len(b.data)
            b.data = np.resize(b.data, r.choice((0, 1, size - 1, size + 1, size * 2, size // 2)))
    elif choice == "buffer offset":
        b = r.choice(model.buffers)
        b.offset = r.choice((2, len(data) - 1, len(data) + 100, (1 << 63) - 1, 1 << 32))
        b.size = r.choice((1, 16, 1 << 31, (1 << 64) - 1, 1 << 40))
    elif choice == "operator input" and op is not None and op.inputs is not None and len(op.inputs):
        inputs = list(op.inputs)
        inputs[r.randrange(len(inputs))] = r.choice((n, n + 1, -1, -2, 1 << 30, r.randrange(max(n, 1))))
        op.inputs = inputs
    elif choice == "operator output" and op is not None and op.outputs is not None and len(op.outputs):
        outputs = list(op.outputs)
        outputs[r.randrange(len(outputs))] = r.choice((n, -1, r.randrange(max(n, 1)),
                                                       *(list(graph.inputs or [])[:1])))
        op.outputs = outputs
    elif choice == "cycle" and len(ops) >= 2:
        i = r.randrange(len(ops) - 1)
        later = ops[r.randrange(i + 1, len(ops))]
        if ops[i].inputs is not None and len(ops[i].inputs) and later.outputs is not None and len(later.outputs):
            inputs = list(ops[i].inputs)
            inputs[0] = later.outputs[0]
            ops[i].inputs = inputs
    elif choice == "opcode" and op is not None:
        op.opcodeIndex = r.choice((len(model.operatorCodes), -1, 1 << 20, r.randrange(len(model.operatorCodes))))
    elif choice == "builtin code" and model.operatorCodes:
        code = r.choice(model.operatorCodes)
        code.builtinCode = r.choice((r.randrange(210), 1000, -5, 32))
        code.deprecatedBuiltinCode = r.choice((min(max(code.builtinCode, 0), 127), 127, 0, -1))
    elif choice == "options type" and op is not None:
        op.builtinOptionsType = r.randrange(130)
    elif choice == "scale" and t is not None and t.quantization is not None and t.quantization.scale is not None:
        scales = list(t.quantization.scale)
        if scales:
            scales[r.randrange(len(scales))] = r.choice((float("nan"), float("inf"), -1.0, 0.0, 1e-38, 1e38))
            t.quantization.scale = scales
    elif choice == "zero point" and t is not None and t.quantization is not None:
        t.quantization.zeroPoint = [r.choice((1 << 40, -(1 << 40), 300, -300, 1 << 62))] * \
            max(len(t.quantization.scale) if t.quantization.scale is not None else 1, 1)
    elif choice == "per-channel" and t is not None and t.quantization is not None:
        q = t.quantization
        q.scale = [0.01] * r.choice((2, 3, 7, 1000))
        q.zeroPoint = [0] * r.choice((1, len(q.scale), len(q.scale) + 1))
        q.quantizedDimension = r.choice((0, 1, 3, 9, -1, 1 << 20))
    elif choice == "graph io":
        graph.inputs = r.choice(([], [n], [-1], [0, 0], list(graph.outputs or [])))
        if r.random() < 0.5:
            graph.outputs = r.choice(([], [n + 3], list(graph.inputs or [])))
    elif choice == "operator count" and ops:
        graph.operators = ops * r.choice((2, 5)) if r.random() < 0.5 else ops[: r.randrange(len(ops))]
    elif choice == "variable" and t is not None:
        t.isVariable = True
    return pack_model(model), choice


# ONNX structure -------------------------------------------------------------------------

def _onnx_structure(r: random.Random, data: bytes, name: str) -> tuple[bytes, str, dict[str, bytes]]:
    import onnx

    model = onnx.ModelProto.FromString(data)
    graph = model.graph
    nodes = list(graph.node)
    node = r.choice(nodes) if nodes else None
    inits = list(graph.initializer)
    init = r.choice(inits) if inits else None
    extra: dict[str, bytes] = {}
    choice = r.choice(("dims", "dims", "rank", "data type", "raw data", "dangling input", "cycle",
                       "output twice", "op type", "domain", "attribute", "remove attribute", "opset", "ir version",
                       "input shape", "external data", "external data", "enormous field", "value info",
                       "graph output", "node count"))
    if choice == "dims" and init is not None and len(init.dims):
        init.dims[r.randrange(len(init.dims))] = r.choice((*HUGE_DIMS, 1 << 40, -(1 << 40)))
    elif choice == "rank" and init is not None:
        del init.dims[:]
        init.dims.extend([1] * r.choice((9, 20, 64)))
    elif choice == "data type" and init is not None:
        init.data_type = r.choice((0, 8, 14, 15, 17, 21, 23, 25, 27, 28, 29, 100))
    elif choice == "raw data" and init is not None and init.raw_data:
        raw = init.raw_data
        init.raw_data = raw[: r.randrange(len(raw))] if r.random() < 0.5 else raw + bytes(r.choice((1, 4, 1000)))
    elif choice == "dangling input" and node is not None and len(node.input):
        node.input[r.randrange(len(node.input))] = r.choice(("no_such_value", "", node.output[0] if node.output
                                                              else "x"))
    elif choice == "cycle" and len(nodes) >= 2:
        i = r.randrange(len(nodes) - 1)
        later = graph.node[r.randrange(i + 1, len(nodes))]
        if len(graph.node[i].input) and len(later.output):
            graph.node[i].input[0] = later.output[0]
    elif choice == "output twice" and len(nodes) >= 2:
        a, b = r.sample(range(len(nodes)), 2)
        if len(graph.node[a].output) and len(graph.node[b].output):
            graph.node[a].output[0] = graph.node[b].output[0]
    elif choice == "op type" and node is not None:
        node.op_type = r.choice(("Conv", "QLinearConv", "Unique", "DFT", "NoSuchOp", "", "Loop", "If", "Scan",
                                 "Resize", "NonMaxSuppression", "TopK", "Einsum", "STFT", "StringNormalizer"))
    elif choice == "domain" and node is not None:
        node.domain = r.choice(("com.microsoft", "ai.onnx.ml", "custom", "ai.onnx.preview.training"))
    elif choice == "attribute" and node is not None and len(node.attribute):
        a = r.choice(list(node.attribute))
        if len(a.ints):
            a.ints[r.randrange(len(a.ints))] = r.choice((0, -1, -(1 << 62), 1 << 62, 1 << 31, 1000000))
        elif a.HasField("i"):
            a.i = r.choice((0, -1, 1 << 62, -(1 << 62)))
        elif a.HasField("f"):
            a.f = r.choice((float("nan"), float("inf"), -1e30))
        elif a.HasField("t"):
            del a.t.dims[:]
            a.t.dims.extend([r.choice((1 << 30, -3, 0))])
        else:
            a.type = r.choice((1, 2, 3, 4, 7, 99))
    elif choice == "remove attribute" and node is not None and len(node.attribute):
        del node.attribute[r.randrange(len(node.attribute))]
    elif choice == "opset":
        for opset in model.opset_import:
            opset.version = r.choice((0, 1, 6, 11, 16, 23, 28, 29, 1000, -1))
    elif choice == "ir version":
        model.ir_version = r.choice((0, 1, 3, 11, 12, 100, -1))
    elif choice == "input shape" and len(graph.input):
        v = r.choice(list(graph.input))
        dims = v.type.tensor_type.shape.dim
        if len(dims):
            dims[r.randrange(len(dims))].dim_value = r.choice((*HUGE_DIMS, 1 << 40))
        else:
            for _ in range(r.choice((9, 30))):
                dims.add().dim_value = 2
    elif choice == "external data" and init is not None:
        raw = init.raw_data or b""
        location = r.choice(("weights.bin", "../outside.bin", "/etc/hostname", "missing.bin", "sub/../../x.bin",
                             "weights.bin", "./weights.bin", "sub/weights.bin", "", "a\\..\\..\\b"))
        offset = r.choice((0, 0, 16, 1 << 40, -1))
        length = r.choice((len(raw), len(raw), len(raw) + 1, 1 << 40, 0))
        init.ClearField("raw_data")
        del init.float_data[:], init.int32_data[:], init.int64_data[:]
        init.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
            entry = init.external_data.add()
            entry.key, entry.value = key, value
        blob = bytes(16) + raw if offset == 16 else raw
        if location in ("weights.bin", "./weights.bin"):
            extra["weights.bin"] = blob
        elif location == "sub/weights.bin":
            extra["sub/weights.bin"] = blob
        elif location == "../outside.bin":
            extra["../outside.bin"] = blob
    elif choice == "enormous field":
        size = r.choice((1 << 16, 1 << 20, 4 << 20))
        target = r.choice(("doc", "name", "ints", "floats"))
        if target == "doc":
            model.doc_string = "d" * size
        elif target == "name" and node is not None:
            node.name = "n" * size
        elif node is not None:
            a = node.attribute.add()
            a.name = "huge"
            if target == "ints":
                a.type = onnx.AttributeProto.INTS
                a.ints.extend([7] * (size // 8))
            else:
                a.type = onnx.AttributeProto.FLOATS
                a.floats.extend([0.5] * (size // 4))
    elif choice == "value info":
        v = graph.value_info.add()
        v.name = r.choice([n.output[0] for n in nodes if len(n.output)] or ["v"])
        v.type.tensor_type.elem_type = r.choice((1, 3, 0, 99))
        for _ in range(r.choice((1, 4, 9))):
            v.type.tensor_type.shape.dim.add().dim_value = r.choice((1 << 20, -5, 3, 1 << 40))
    elif choice == "graph output" and len(graph.output):
        graph.output[0].name = r.choice(("never_computed", graph.input[0].name if len(graph.input) else "x"))
    elif choice == "node count" and nodes:
        del graph.node[r.randrange(len(nodes)):]
    return model.SerializeToString(), choice, extra


# Samples --------------------------------------------------------------------------------

#: Seed models larger than this are left out (mutating and importing them is slow).
MAX_SEED_BYTES = 1 << 20
REPO = Path(__file__).resolve().parents[2]


def seed_models(models: Path, fmt: str) -> list[Path]:
    """The .tflite or .onnx seeds: the shared models, the zoo's up to 1 MiB and the bundled samples'."""
    found = sorted(models.glob(f"*.{fmt}")) + sorted((models / "zoo").glob(f"*.{fmt}"))
    found += sorted((REPO / "samples").glob(f"*/*.{fmt}"))
    return [p for p in found if p.stat().st_size <= MAX_SEED_BYTES]


def mutate(r: random.Random, seed_path: Path, data: bytes, other: bytes) -> tuple[bytes, str, dict[str, bytes]]:
    """One mutation of ``data`` (a model of ``seed_path``'s format; ``other`` another of the same format)."""
    if r.random() < 0.45:
        kind = r.choice(list(BYTE_MUTATIONS))
        mutated = BYTE_MUTATIONS[kind](r, data, other)
        return (mutated if mutated else data[:1]), kind, {}
    if seed_path.suffix == ".tflite":
        mutated, kind = _tflite_structure(r, data)
        if r.random() < 0.2:
            mutated = bit_flips(r, mutated, other)
            kind += " + bit flips"
        return mutated, "tflite " + kind, {}
    mutated, kind, extra = _onnx_structure(r, data, seed_path.name)
    return mutated, "onnx " + kind, extra


def mutant(seeds: list[Path], seed: int, index: int) -> Mutant:
    """The ``index``-th mutant of ``seeds`` (all of one format) for ``seed``."""
    r = random.Random(seed * 1_000_003 + index)
    seed_path = r.choice(seeds)
    data = seed_path.read_bytes()
    other = r.choice(seeds).read_bytes()
    try:
        mutated, kind, extra = mutate(r, seed_path, data, other)
    except (ValueError, TypeError, OverflowError, struct.error, IndexError, AttributeError) as e:
        # A structure the object API cannot write back (a value out of its field's range): mutate bytes instead.
        mutated, kind, extra = bit_flips(r, data, other), f"bit flips (structure: {type(e).__name__})", {}
    return Mutant(f"m{index:05d}{seed_path.suffix}", mutated, kind, seed_path.name, extra)


def mutants(seeds: list[Path], count: int, seed: int, start: int = 0) -> Iterator[Mutant]:
    for index in range(start, start + count):
        yield mutant(seeds, seed, index)
