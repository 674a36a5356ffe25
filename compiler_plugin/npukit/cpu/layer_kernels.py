"""npukit's int8 layer kernels: the parameter block a dispatch hands them,
and the library they are compiled into for a CPU preset.

The kernels are C (``kernels/``): a convolution (also 1x1 and fully
connected) and a depthwise convolution, each followed by TFLite's
fixed-point output stage or, for an ONNX QDQ layer, the graph's float one
(layer_recognition.float_parameters), and an average pool of another
layer's requantized accumulators. The block's word layout is read from the C header
``kernels/s8_layer.h`` so the two cannot drift apart.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

import numpy as np

from npukit.cpu.archive_build import c_archive, gcc_for, run_tool
from npukit.cpu.kernel_choice import TAPS_MULTIPLIERS, KernelChoice
from npukit.cpu.lane_weights import DEPTHWISE_MULTIPLIERS, lane_segment, lane_weights
from npukit.layer_recognition.int8_pool import shared_requantization
from npukit.layer_recognition.layer_spec import UNWEIGHTED_KINDS, LayerSpec
from npukit.quantization.requantization import ADD_LEFT_SHIFT
from npukit.runtime.sources import runtime_source_root
from npukit.targets.cpu_presets import HOST, CpuPreset

KERNELS_DIR = Path(__file__).with_name("kernels")
HEADER = KERNELS_DIR / "s8_layer.h"
SOURCES = ("s8_layer.c", "s8_layer_words.c", "s8_unweighted.c", "s8_conv.c", "s8_depthwise.c", "s8_depthwise_column.c",
           "s8_depthwise_planes.c", "s8_residual.c", "s8_average.c", "s8_table.c", "s8_mul.c", "s8_pool.c",
           "s8_quantize.c",
           "s8_fully_connected.c", "s8_fully_connected_dsp.S", "s8_dot_dsp.S",
           "s8_conv_four_dsp.S", "s8_depthwise_dsp.S", "s8_depthwise_planes_dsp.S", "s8_requantize_dsp.S", "s8_conv_x86.c",
           "s8_depthwise_x86.c", "s8_depthwise_vbmi.c", "s8_accumulators_x86.c", "s8_lanes.c", "s8_conv_lanes_x86.c",
           "s8_depthwise_lanes_x86.c", "s8_padded_x86.c")
HEADERS = ("s8_layer.h", "s8_output.h", "s8_scale_once.h", "s8_strip.h", "s8_dsp_macros.h", "s8_x86.h", "s8_x86_vector.h",
           "s8_lanes.h", "s8_lanes_x86.h")
ENTRY_POINT = "npukit_s8_layer"
# The entry point of the layers without weights (s8_unweighted.c): an executable that calls it links their
# kernels alone.
UNWEIGHTED_ENTRY_POINT = "npukit_s8_unweighted"
# UNWEIGHTED_KINDS but average.
UNWEIGHTED_ENTRY_KINDS = ("table", "mul", "average_pool", "max_pool", "mean", "quantize")


def entry_point(spec: LayerSpec) -> str:
    """The kernel function a dispatch of ``spec`` calls."""
    return UNWEIGHTED_ENTRY_POINT if spec.kind in UNWEIGHTED_ENTRY_KINDS else ENTRY_POINT


def _header() -> tuple[dict[str, int], dict[str, int]]:
    text = HEADER.read_text()
    defines = {m[1]: int(m[2], 0) for m in re.finditer(r"#define (NPUKIT_S8_\w+) (0x[0-9a-f]+|\d+)", text)}
    body = re.search(r"enum npukit_s8_word \{(.*?)\};", text, re.S)[1]
    names = [line.strip().rstrip(",") for line in body.splitlines()]
    words = [n for n in names if n.startswith("NPUKIT_S8_W_")]
    return defines, {n.removeprefix("NPUKIT_S8_W_"): i for i, n in enumerate(words)}


DEFINES, WORDS = _header()
MAX_K = DEFINES["NPUKIT_S8_MAX_K"]  # the longest reduction the kernels take
K_CHUNK = DEFINES["NPUKIT_S8_K_CHUNK"]  # the convolution kernel's reduction per step


class KernelUnsupported(Exception):
    """The layer kernels do not take this layer (the message says why)."""


def reduction_length(spec: LayerSpec) -> int:
    """K of one output channel (conv, fully connected), rounded up to 4."""
    k = spec.kernel[0] * spec.kernel[1] * spec.ifm_chw[0]
    return (k + 3) // 4 * 4


def _packed_weights(spec: LayerSpec, choice: KernelChoice) -> np.ndarray:
    w = np.asarray(spec.weights, np.int8)
    if spec.kind in UNWEIGHTED_KINDS:  # no weights; a table's 256 values, a product's factors
        return w
    if choice.weights == "lanes":
        return lane_weights(spec)
    if spec.kind == "depthwise" and choice.weights == "taps":  # [KH][KW][C] -> [C / 4][KH * KW][4]
        taps = w.reshape(-1, w.shape[-1])
        taps = np.pad(taps, ((0, 0), (0, -taps.shape[1] % 4)))
        return np.ascontiguousarray(taps.reshape(taps.shape[0], -1, 4).transpose(1, 0, 2))
    if spec.kind == "depthwise":  # [KH][KW][C] -> [C][KH * KW]
        return np.ascontiguousarray(w.reshape(-1, w.shape[-1]).T)
    oc = w.shape[0]
    k = int(np.prod(w.shape[1:]))
    kp = reduction_length(spec)
    full = np.zeros(((oc + 1) // 2 * 2, kp), np.int8)
    full[:oc, :k] = w.reshape(oc, k)
    # One block per chunk of K_CHUNK values (s8_layer.h), one block when K fits in one.
    return np.concatenate([_paired(full[:, k0:k0 + K_CHUNK], choice).ravel() for k0 in range(0, kp, K_CHUNK)])


def _paired(chunk: np.ndarray, choice: KernelChoice) -> np.ndarray:
    """[OC][n] (OC even) -> [OC/2][n/4][2][4]: a channel pair's weights side
    by side per group of four (int16 weights in the order (0, 2, 1, 3))."""
    pairs = chunk.reshape(-1, 2, chunk.shape[1] // 4, 4).transpose(0, 2, 1, 3)
    if choice.weights == "int16":  # little-endian halves
        return np.ascontiguousarray(pairs[..., [0, 2, 1, 3]].astype("<i2"))
    return np.ascontiguousarray(pairs)


def _weight_sums(spec: LayerSpec) -> np.ndarray:
    """Per output channel, the sum of its weights."""
    w = np.asarray(spec.weights, np.int64)
    if spec.kind == "depthwise":  # [KH][KW][C]
        return w.reshape(-1, w.shape[-1]).sum(axis=0)
    return w.reshape(w.shape[0], -1).sum(axis=1)


def check_supported(spec: LayerSpec) -> None:
    if spec.padded and spec.kind not in ("conv", "depthwise"):
        raise KernelUnsupported(f"a padded {spec.operation} (the kernels read padding in convolutions and "
                                "depthwise convolutions)")
    if spec.padded and not -128 <= spec.pad_value <= 127:
        raise KernelUnsupported(f"an input padded with {spec.pad_value}, outside int8")
    # An average pools int32 accumulators, a quantization reads float32.
    input_dtype = {"average": "i32", "quantize": "f32"}.get(spec.kind, "i8")
    if spec.ifm.tensor.dtype != input_dtype:
        raise KernelUnsupported(f"an {spec.ifm.tensor.dtype} input")
    if spec.ofm.tensor.dtype not in ("i8", "i32"):
        raise KernelUnsupported(f"an {spec.ofm.tensor.dtype} output")
    if spec.kind in ("conv", "fully_connected") and reduction_length(spec) > MAX_K:
        raise KernelUnsupported(f"a reduction of {reduction_length(spec)} values (the kernels take up to {MAX_K})")
    # Depthwise: any channel multiplier M >= 1 with OUT_C = M * IN_C (output channel c reads input channel c / M).
    if spec.kind == "depthwise" and (spec.multiplier < 1 or spec.ofm_chw[0] != spec.multiplier * spec.ifm_chw[0]):
        raise KernelUnsupported(f"a depthwise layer of {spec.ifm_chw[0]} input and {spec.ofm_chw[0]} output "
                                f"channels with channel multiplier {spec.multiplier}")


def _f32_bits(value: float | None) -> int:
    """A binary32 value's bit pattern as an int32 word (None: +infinity)."""
    return int(np.array([np.inf if value is None else value], "<f4").view("<i4")[0])


def _float_words(spec: LayerSpec) -> tuple[dict[str, int], np.ndarray]:
    """The FLOAT_* words (FLOAT_AT set by the caller) and the float[OUT_C][3] table."""
    stage = spec.float_stage
    q = stage.quantize
    words = {"FLOAT_OUT_SCALE": _f32_bits(q.scale), "FLOAT_RELU": int(q.relu), "FLOAT_UPPER": _f32_bits(q.upper),
             "FLOAT_LOW": q.low, "FLOAT_HIGH": q.high}
    if spec.add is not None:
        a = spec.float_add
        words.update(FLOAT_ADD_CONV_SCALE=_f32_bits(a.conv_scale), FLOAT_ADD_RES_SCALE=_f32_bits(a.residual_scale),
                     FLOAT_ADD_OUT_SCALE=_f32_bits(a.quantize.scale), FLOAT_ADD_RELU=int(a.quantize.relu),
                     FLOAT_ADD_UPPER=_f32_bits(a.quantize.upper), FLOAT_ADD_LOW=a.quantize.low,
                     FLOAT_ADD_HIGH=a.quantize.high)
    table = np.stack([stage.scales0, stage.scales1, stage.bias], axis=1).astype("<f4")
    return words, table.view("<i4").reshape(-1).astype(np.int64)


def float_output_supported(spec: LayerSpec) -> None:
    """KernelUnsupported unless the kernels' float output stage reproduces
    this layer's float epilogue: a requantization (with ReLU or a bound) of
    the layer's own accumulators, and an ADD of an int8 residual, read and
    verified (layer_recognition.float_parameters)."""
    if spec.kind == "average":
        raise KernelUnsupported("an average pool of requantized accumulators in float (IREE's code computes "
                                "the graph's float arithmetic)")
    if spec.add is not None and spec.add.accumulators is not None:
        raise KernelUnsupported("a float addition of another layer's int32 accumulators (IREE's code computes "
                                "the graph's float arithmetic)")
    if spec.multipliers is None:
        return  # int32 accumulators out: no output stage
    if spec.float_stage is None or (spec.add is not None and spec.float_add is None):
        raise KernelUnsupported(spec.float_unsupported or "a float epilogue whose parameters were not read")


def layer_block(spec: LayerSpec, choice: KernelChoice = KernelChoice(), float_output: bool = False,
                compact: bool = False) -> bytes:
    """The parameter block, tables and packed weights of one layer, run the
    way ``choice`` says (the caller has checked that its preset offers it).
    ``float_output``: a layer whose dispatch requantizes in float (an ONNX
    QDQ layer) keeps that float arithmetic (the kernels' float output
    stage); otherwise it takes TFLite's fixed-point one. ``compact``: the
    words in the compact encoding (s8_layer.h; 32-bit targets only,
    ``compact_blocks``), else the full one."""
    check_supported(spec)
    floating = float_output and spec.float_epilogue and spec.multipliers is not None
    if float_output and spec.float_epilogue:
        float_output_supported(spec)
    if choice.weights == "int16" and spec.kind == "depthwise":
        raise KernelUnsupported("int16 weights for a depthwise layer")
    if choice.weights == "taps" and spec.kind != "depthwise":
        raise KernelUnsupported("tap-ordered weights for a layer that is not depthwise")
    if choice.weights == "taps" and spec.kind == "depthwise" and spec.multiplier not in TAPS_MULTIPLIERS:
        raise KernelUnsupported(f"tap-ordered weights for a depthwise layer with channel multiplier "
                                f"{spec.multiplier} (the DSP kernel takes {TAPS_MULTIPLIERS})")
    if choice.weights == "lanes" and spec.kind == "depthwise" and spec.multiplier not in DEPTHWISE_MULTIPLIERS:
        raise KernelUnsupported(f"lane-ordered weights for a depthwise layer with channel multiplier "
                                f"{spec.multiplier} (the lane kernels take {DEPTHWISE_MULTIPLIERS})")
    if choice.weights == "lanes" and not choice.weight_sums:
        raise KernelUnsupported("lane-ordered weights (x86 host kernels) without the weight sums they read")
    channels = spec.ofm_chw[0]
    words = np.zeros(WORDS["COUNT"], np.int64)

    def put(**values: int) -> None:
        for name, value in values.items():
            words[WORDS[name]] = int(value)

    kind = {"conv": "CONV", "depthwise": "DEPTHWISE", "fully_connected": "FULLY_CONNECTED",
            "average": "AVERAGE", "table": "TABLE", "mul": "MUL", "average_pool": "AVERAGE_POOL",
            "max_pool": "MAX_POOL", "mean": "MEAN", "quantize": "QUANTIZE"}[spec.kind]
    if spec.kind == "fully_connected" and spec.multipliers is not None and spec.scales is None and not floating:
        # A fully connected layer that requantizes with fixed-point multipliers (a convolution whose window
        # covers its input: one output pixel) is that convolution; NPUKIT_S8_FULLY_CONNECTED is the form that
        # scales by a double and rounds once (TFLite's FULLY_CONNECTED).
        kind = "CONV"
    output = "OUT_INT32" if spec.multipliers is None else "OUT_ADD" if spec.add is not None else "OUT_INT8"
    put(MAGIC=DEFINES["NPUKIT_S8_MAGIC"], KIND=DEFINES[f"NPUKIT_S8_{kind}"], OUTPUT=DEFINES[f"NPUKIT_S8_{output}"])
    put(IN_C=spec.ifm_chw[0], IN_H=spec.ifm_chw[1], IN_W=spec.ifm_chw[2])
    put(OUT_C=channels, OUT_H=spec.ofm_chw[1], OUT_W=spec.ofm_chw[2])
    put(KERNEL_H=spec.kernel[0], KERNEL_W=spec.kernel[1], STRIDE_H=spec.stride[0], STRIDE_W=spec.stride[1],
        DILATION_H=spec.dilation[0], DILATION_W=spec.dilation[1],
        MULTIPLIER=spec.multiplier if spec.kind == "depthwise" else 1)
    second = spec.add.residual if spec.add else spec.operand  # the RES_* words: a residual, a product's operand
    for prefix, layout in (("IN", spec.ifm), ("OUT", spec.ofm)) + ((("RES", second),) if second else ()):
        a = layout.addressing()
        put(**{f"{prefix}_OFFSET": a.offset, f"{prefix}_SC": a.sc, f"{prefix}_SH": a.sh, f"{prefix}_SW": a.sw})
    put(IN_ZP=spec.ifm_zp, OUT_ZP=spec.ofm_zp, ACT_MIN=spec.act_min, ACT_MAX=spec.act_max,
        K_PADDED=0 if spec.kind in UNWEIGHTED_KINDS else reduction_length(spec))
    top, bottom, left, right = spec.padding
    put(PAD_TOP=top, PAD_BOTTOM=bottom, PAD_LEFT=left, PAD_RIGHT=right, PAD_VALUE=spec.pad_value)
    if spec.float_scale is not None:
        put(FLOAT_OUT_SCALE=_f32_bits(spec.float_scale))
    if spec.average is not None:
        put(AVERAGE_COUNT=spec.average.count, AVERAGE_ACT_MIN=spec.average.act_min,
            AVERAGE_ACT_MAX=spec.average.act_max)
    if choice.weights == "lanes" and spec.kind != "depthwise":
        put(LANE_SEGMENT=lane_segment(spec))
    put(WEIGHT_FORM=DEFINES[f"NPUKIT_S8_WEIGHTS_{choice.weights.upper()}"],
        CONV_FORM=DEFINES[f"NPUKIT_S8_CONV_{choice.conv_form.upper()}"])
    if spec.add is not None:
        a = spec.add
        put(ADD_CONV_ZP=a.conv_zp, ADD_RES_ZP=a.residual_zp, ADD_LEFT_SHIFT=ADD_LEFT_SHIFT,
            ADD_CONV_MULT=a.input_multiplier[0], ADD_CONV_SHIFT=a.input_multiplier[1],
            ADD_RES_MULT=a.residual_multiplier[0], ADD_RES_SHIFT=a.residual_multiplier[1],
            ADD_OUT_MULT=a.output_multiplier[0], ADD_OUT_SHIFT=a.output_multiplier[1],
            ADD_OUT_ZP=a.output_zp, ADD_ACT_MIN=a.act_min, ADD_ACT_MAX=a.act_max)
    # Per channel the bias, multiplier and shift; the x86 host kernels' weight sums where the preset has them
    # (s8_layer.h; the portable and DSP kernels derive what else they need per call). A float output stage
    # starts its accumulators at 0 (it adds its own float bias after scaling) and reads no multiplier or
    # shift: its three tables are one table of zeros. A fully connected block scales by its binary64 scales
    # (SCALE_AT, or not at all for int32 out), so no kernel reads a multiplier or shift of it: those two words
    # locate the bias too, 8 bytes less per output channel.
    if floating:
        tables = {"BIAS_AT": np.zeros(channels, np.int64)}
        shared = {"MULTIPLIER_AT": "BIAS_AT", "SHIFT_AT": "BIAS_AT"}
    elif kind == "FULLY_CONNECTED":
        tables = {"BIAS_AT": np.asarray(spec.bias, np.int64)}
        shared = {"MULTIPLIER_AT": "BIAS_AT", "SHIFT_AT": "BIAS_AT"}
    elif spec.kind in ("average_pool", "max_pool", "quantize"):  # no bias, no multipliers
        tables, shared = {}, {}
    elif spec.kind == "mean":  # one requantization for every channel (s8_pool.c)
        requantization = shared_requantization(spec)
        if requantization is None:
            raise KernelUnsupported("a mean whose channels requantize differently (the kernel takes one "
                                    "requantization, as TFLite's per-tensor MEAN has)")
        bias, multiplier, shift = requantization
        tables, shared = {"BIAS_AT": [bias], "MULTIPLIER_AT": [multiplier], "SHIFT_AT": [shift]}, {}
    else:
        multipliers = spec.multipliers or [(0, 0)] * channels
        tables = {"BIAS_AT": np.asarray(spec.bias, np.int64), "MULTIPLIER_AT": [m for m, _ in multipliers],
                  "SHIFT_AT": [s for _, s in multipliers]}
        shared = {}
    if spec.kind not in UNWEIGHTED_KINDS and choice.weight_sums:
        tables["WEIGHT_SUM_AT"] = _weight_sums(spec)
    fused = spec.add.accumulators if spec.add is not None else None
    if fused is not None:  # the residual layer's output stage
        put(RES_ACT_MIN=fused.act_min, RES_ACT_MAX=fused.act_max)
        tables.update(RES_BIAS_AT=np.asarray(fused.bias, np.int64),
                      RES_MULTIPLIER_AT=[m for m, _ in fused.multipliers],
                      RES_SHIFT_AT=[s for _, s in fused.multipliers])
    if floating:
        float_words, float_table = _float_words(spec)
        put(**float_words)
        tables["FLOAT_AT"] = float_table
    scales = b""
    if kind == "FULLY_CONNECTED" and spec.multipliers is not None and not floating:
        scales = np.asarray(spec.scales, "<f8").tobytes()  # set: the other fully connected layers are CONV
    tables = {name: np.asarray(table, np.int64).reshape(-1) for name, table in tables.items()}
    for table in [words, *tables.values()]:
        if (table < -2**31).any() or (table >= 2**31).any():
            raise KernelUnsupported("a parameter outside int32")
    weights = _packed_weights(spec, choice).tobytes()
    if not compact:
        return _assemble(words, tables, shared, scales, weights, lambda w: w.astype("<i4").tobytes())
    # Positions lengthen the compact header, which moves the tables: lay out again until it stays put.
    head = len(compact_words(words))
    while (block := _assemble(words, tables, shared, scales, weights, compact_words, head)) is None:
        head = len(compact_words(words))
    return block


def _assemble(words: np.ndarray, tables: dict[str, np.ndarray], shared: dict[str, str], scales: bytes,
              weights: bytes, encode, head: int | None = None) -> bytes | None:
    """The block: the words as ``encode`` writes them (in ``head`` bytes,
    the full words' size when None), the int32 tables one after another,
    the binary64 scales 8-byte aligned, then the weights 8-byte aligned;
    the position words set to where each is; None when the words take more
    than ``head`` bytes."""
    at = WORDS["COUNT"] if head is None else (head + 3) // 4  # in int32 words
    for name, table in tables.items():
        words[WORDS[name]] = at
        at += len(table)
    for name, same in shared.items():
        words[WORDS[name]] = words[WORDS[same]]
    if scales:
        at += at % 2  # binary64 values on an 8-byte boundary (the block is 16-byte aligned)
        words[WORDS["SCALE_AT"]] = at
        at += len(scales) // 4
    words[WORDS["WEIGHTS_AT"]] = (4 * at + 7) // 8 * 8
    out = bytearray(encode(words))
    room = 4 * (WORDS["COUNT"] if head is None else (head + 3) // 4)
    if len(out) > room:
        return None  # the caller lays a compact block out again with more room for its words
    out += bytes(room - len(out))
    for table in tables.values():
        out += table.astype("<i4").tobytes()
    if scales:
        out += bytes(4 * int(words[WORDS["SCALE_AT"]]) - len(out)) + scales
    return bytes(out) + bytes(int(words[WORDS["WEIGHTS_AT"]]) - len(out)) + weights


def compact_words(words: np.ndarray) -> bytes:
    """The compact encoding's magic, presence bitmask and varints (s8_layer.h);
    MAGIC itself is implied."""
    count = WORDS["COUNT"]
    present = bytearray((count + 7) // 8)
    values = bytearray()
    for i, value in enumerate(int(v) for v in words):
        if i == WORDS["MAGIC"] or value == 0:
            continue
        present[i // 8] |= 1 << (i % 8)
        z = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF  # zigzag
        while z >= 0x80:
            values.append(z & 0x7F | 0x80)
            z >>= 7
        values.append(z)
    return DEFINES["NPUKIT_S8_COMPACT_MAGIC"].to_bytes(4, "little") + bytes(present) + bytes(values)


def compact_blocks(preset: CpuPreset) -> bool:
    """Whether blocks for ``preset`` take the compact encoding (s8_layer.h):
    on 32-bit targets, where the kernels can address a block's tables from
    the words they expand on the stack."""
    return preset.elf_class == 32


def position_words() -> tuple[str, ...]:
    """NPUKIT_S8_POSITION_WORDS of s8_layer.h: the words the kernels' entry
    rebases when it expands a compact block."""
    body = re.search(r"#define NPUKIT_S8_POSITION_WORDS((?:.*\\\n)*.*)", HEADER.read_text())[1]
    return tuple(re.findall(r"NPUKIT_S8_W_(\w+)", body))


# The flags that make code linkable into an embedded ELF (no libc, no TLS, no
# stack protector's canary, position independent).
# -fno-tree-loop-distribute-patterns: GCC would turn copy and fill loops into
# memcpy/memset calls, which nothing provides. -ffp-contract=off: the float
# output stage rounds after every operation, as the graph it reproduces does
# (GCC would fuse a multiply and an add on FMA hosts and FPv4/FPv5 cores).
_FREESTANDING = ("-fPIC", "-ffreestanding", "-fno-stack-protector", "-fno-exceptions", "-fno-unwind-tables",
                 "-fno-asynchronous-unwind-tables", "-fno-tree-loop-distribute-patterns", "-fvisibility=hidden",
                 "-ffp-contract=off", "-Wall", "-Werror")


@functools.lru_cache(maxsize=None)
def kernel_code_key() -> str:
    """What identifies the code that runs a layer for a kernel choice: the
    kernels' C sources and headers and the Python that lays out their
    parameter blocks and weights (this module, lane_weights, kernel_choice).
    A tuning result names a choice of that code; another version of it
    (another checkout, an older npukit) may run the same choice differently,
    so its results are not taken (npukit.cpu.tuning_database)."""
    mynpu = runtime_source_root() / "hal_driver" / "src" / "mynpu"
    here = Path(__file__).parent
    files = [*(KERNELS_DIR / s for s in SOURCES), *(KERNELS_DIR / h for h in HEADERS), mynpu / "requantize.h",
             here / "layer_kernels.py", here / "lane_weights.py", here / "kernel_choice.py"]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def kernel_library(preset: CpuPreset, host_arch: tuple[str, ...] = ("-march=native",)) -> Path:
    """The layer kernels compiled for ``preset`` as a static archive (cached).
    On the host, ``host_arch`` are the instruction-set flags: the host CPU's
    by default; the x86 vector kernels follow from what they enable."""
    optimize = ("-O3", *host_arch, "-fcf-protection=none") if preset.is_host else ("-O2",)
    mynpu = runtime_source_root() / "hal_driver" / "src" / "mynpu"  # requantize.h, the shared arithmetic
    return c_archive(preset, "npukit-kernels", [KERNELS_DIR / s for s in SOURCES], [KERNELS_DIR, mynpu],
                     (*optimize, *_FREESTANDING), [*(KERNELS_DIR / h for h in HEADERS), mynpu / "requantize.h"])


X86_KERNELS = {512: "AVX-512 VNNI", 256: "AVX2", 0: "portable C only"}


def host_vector_kernels(host_arch: tuple[str, ...] = ("-march=native",)) -> str:
    """Which x86 vector kernels the host archive built with ``host_arch``
    has: s8_x86.h's NPUKIT_S8_X86 as the host compiler sees it."""
    defines = run_tool([gcc_for(HOST), *host_arch, "-dM", "-E", "-x", "c", str(KERNELS_DIR / "s8_x86.h")])
    found = re.search(r"^#define NPUKIT_S8_X86 (\d+)$", defines, re.M)
    return X86_KERNELS[int(found.group(1))] if found else X86_KERNELS[0]

