"""npukit's int8 layer kernels called one layer at a time: blocks written by
``layer_kernels.layer_block`` from synthetic layer specs, run through
``npukit_s8_layer`` in the host kernel archive built for several x86
instruction sets (AVX-512 VNNI, AVX2, none: the portable kernels), and
compared with TFLite's integer arithmetic computed here in Python integers.

The shapes are the edges of the vector kernels: odd channel counts, pixel
counts and reductions that are no multiple of the vector or of 4, windows
of padded tensors, strided and dilated reads, channel-last tensors, every
output mode (int8, int32 accumulators, TFLite's ADD, fully connected
rounding once, an ADD whose residual is another layer's int32 accumulators)
and requantization with left shifts; and the average pool of another layer's
requantized int32 accumulators (with an ADD of a third layer's), over
accumulators up to the int32 limits. Output bytes outside the layer's output
must stay as they were."""

from __future__ import annotations

import ctypes
import mmap
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from npukit.cpu.kernel_choice import TAPS_MULTIPLIERS, KernelChoice
from npukit.cpu.layer_kernels import DEFINES, WORDS, compact_words, kernel_library, layer_block, position_words
from npukit.deploy.toolchain_files import cross_presets
from npukit.layer_recognition.dispatch_ir import SystemTensor
from npukit.quantization.requantization import ADD_LEFT_SHIFT
from npukit.layer_recognition.float_parameters import float_add_output, float_output
from npukit.layer_recognition.layer_spec import AverageOutput, ElementwiseAdd, FloatAdd, FloatQuantize, FloatStage, \
    LayerSpec, NotSupported, ResidualAccumulators, TensorLayout
from npukit.targets.cpu_presets import HOST
from npukit.quantization.fixed_point_reference import scale_rounded_once_array
from support.tflite_arithmetic import requantize, rounding_divide

# Instruction sets the archive is built for, with the CPU flags (of
# /proc/cpuinfo) needed to run it.
BUILDS = {
    "avx512-vnni": (("-march=x86-64-v4", "-mavx512vnni"), {"avx512f", "avx512bw", "avx512vl", "avx512dq",
                                                           "avx512cd", "avx512_vnni"}),
    # The same with VBMI2: output vectors of several runs stored by compress and expand.
    "avx512-vbmi2": (("-march=x86-64-v4", "-mavx512vnni", "-mavx512vbmi", "-mavx512vbmi2"),
                     {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd", "avx512_vnni", "avx512vbmi",
                      "avx512_vbmi2"}),
    "avx2": (("-march=haswell",), {"avx2", "fma", "bmi2"}),
    "portable": (("-march=x86-64",), set()),
}


def _cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


_WRAPPER = """
#include <stddef.h>
#include <stdint.h>
void npukit_s8_layer(size_t params, size_t input, size_t output, size_t residual);
void npukit_s8_unweighted(size_t params, size_t input, size_t output, size_t operand);
int npukit_s8_layer_words(const uint8_t* block, int32_t* words);
__attribute__((visibility("default"))) void layer(size_t p, size_t i, size_t o, size_t r) {
  npukit_s8_layer(p, i, o, r);
}
__attribute__((visibility("default"))) void unweighted(size_t p, size_t i, size_t o, size_t r) {
  npukit_s8_unweighted(p, i, o, r);
}
__attribute__((visibility("default"))) int layer_words(size_t block, size_t words) {
  return npukit_s8_layer_words((const uint8_t*)block, (int32_t*)words);
}
// An address in the caller's stack.
__attribute__((visibility("default"), noinline)) size_t stack_address(void) {
  volatile char here = 0;
  return (size_t)&here + here;
}
"""


@pytest.fixture(scope="module", params=list(BUILDS))
def build(request, tmp_path_factory):
    """(name, archive, callable) of the kernels built for one instruction set."""
    flags, needs = BUILDS[request.param]
    missing = needs - _cpu_flags()
    if missing:
        pytest.skip(f"this CPU lacks {sorted(missing)}")
    archive = kernel_library(HOST, flags)
    work = tmp_path_factory.mktemp(request.param)
    (work / "wrapper.c").write_text(_WRAPPER)
    lib = work / "kernels.so"
    subprocess.run(["gcc", "-shared", "-nostdlib", "-o", str(lib), str(work / "wrapper.c"), "-Wl,--whole-archive",
                    str(archive), "-Wl,--no-whole-archive"], check=True, capture_output=True)
    loaded = ctypes.CDLL(str(lib))
    fn = loaded.layer
    fn.argtypes = [ctypes.c_size_t] * 4
    fn.restype = None
    fn.unweighted = loaded.unweighted  # the layers without weights' entry point
    fn.unweighted.argtypes = [ctypes.c_size_t] * 4
    fn.unweighted.restype = None
    fn.words = loaded.layer_words
    fn.words.argtypes = [ctypes.c_size_t] * 2
    fn.stack_address = loaded.stack_address
    fn.stack_address.restype = ctypes.c_size_t
    return request.param, archive, fn


# Layer cases -----------------------------------------------------------------


@dataclass
class Case:
    kind: str = "conv"  # conv, depthwise, fully_connected
    in_c: int = 8
    in_hw: tuple[int, int] = (6, 6)  # the layer's input (after padding)
    out_c: int = 8
    kernel: tuple[int, int] = (3, 3)
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    mode: str = "int8"  # int8, int32, add, add_accumulators (the residual: int32 accumulators of another layer)
    in_layout: str = "CHW"
    out_layout: str = "CHW"
    in_border: int = 0  # the input is a window of a tensor this much larger on each side
    out_border: int = 0  # the output is the interior of such a tensor
    shifts: tuple[int, int] = (-12, -4)  # per-channel right shifts are drawn around the accumulators' size
    left_shift_channels: bool = False  # some channels with multipliers above 1 (left shifts)
    in_zp: int = -5
    relu: bool = True
    # The ADD's multipliers of the layer's output, the residual and the sum (mode add*).
    add_multipliers: tuple = ((1518500250, -1), (1288490189, 0), (1431655765, -17))
    add_act: tuple[int, int] = (-128, 127)  # the ADD's activation range
    res_layout: str = "CHW"  # the int8 residual's layout (mode add)
    bias_bits: int = 16  # biases drawn in +-2^bias_bits
    multiplier: int = 1  # depthwise: output channel c reads input channel c // multiplier (out_c = in_c * it)
    # The float output stage of an ONNX QDQ layer instead of TFLite's: "random"
    # scales, or "ties" (powers of two: many values exactly half way between
    # two steps, where round half to even and half away from zero differ).
    float_stage: str = ""
    float_upper: float | None = None  # a Clip/ReLU6-like bound in float
    # Input padding the layer reads itself (top, bottom, left, right), holding pad_value.
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    pad_value: int = 0

    @property
    def out_hw(self) -> tuple[int, int]:
        padded = (self.in_hw[0] + self.padding[0] + self.padding[1], self.in_hw[1] + self.padding[2] + self.padding[3])
        return tuple((n - d * (k - 1) - 1) // s + 1
                     for n, k, s, d in zip(padded, self.kernel, self.stride, self.dilation))


def _layout(binding: int, offset: int, chw: tuple[int, int, int], layout: str, border: int) -> TensorLayout:
    c, h, w = chw
    if layout == "CHW":
        shape, offsets, roles = (c, h + 2 * border, w + 2 * border), (0, border, border), ("C", "H", "W")
        sizes = (c, h, w)
    else:
        shape, offsets, roles = (h + 2 * border, w + 2 * border, c), (border, border, 0), ("H", "W", "C")
        sizes = (h, w, c)
    return TensorLayout(SystemTensor(binding, offset, shape, "i8", offsets, sizes), roles)


def _chw(full: np.ndarray, layout: TensorLayout) -> np.ndarray:
    """The layer's view of a tensor, as [C][H][W]."""
    window = full[layout.tensor.window]
    order = [layout.roles.index(r) for r in ("C", "H", "W") if r in layout.roles]
    return window.transpose(order).reshape(-1, *window.transpose(order).shape[-2:]) if len(order) == 3 \
        else window.reshape(-1, 1, 1)


def _accumulators(case: Case, x: np.ndarray, weights: np.ndarray, bias: np.ndarray) -> np.ndarray:
    oh, ow = case.out_hw
    (kh, kw), (sy, sx), (dy, dx) = case.kernel, case.stride, case.dilation
    top, bottom, left, right = case.padding
    x = np.pad(x, ((0, 0), (top, bottom), (left, right)), constant_values=case.pad_value)
    xs = x.astype(np.int64) - case.in_zp
    if case.kind == "depthwise":
        xs = xs[np.arange(case.out_c) // case.multiplier]
        acc = np.zeros((case.out_c, oh, ow), np.int64)
        for i in range(kh):
            for j in range(kw):
                window = xs[:, i * dy: i * dy + sy * (oh - 1) + 1: sy, j * dx: j * dx + sx * (ow - 1) + 1: sx]
                acc += window * weights[i, j].astype(np.int64)[:, None, None]
    elif case.kind == "fully_connected":
        acc = (weights.astype(np.int64) @ xs.reshape(-1)).reshape(-1, 1, 1)
    else:
        acc = np.zeros((case.out_c, oh, ow), np.int64)
        for i in range(kh):
            for j in range(kw):
                window = xs[:, i * dy: i * dy + sy * (oh - 1) + 1: sy, j * dx: j * dx + sx * (ow - 1) + 1: sx]
                acc += np.einsum("oc,chw->ohw", weights[:, i, j, :].astype(np.int64), window)
    acc += bias.astype(np.int64)[:, None, None]
    assert (np.abs(acc) < 2**31).all()
    return acc


def _requantized(case: Case, acc: np.ndarray, multipliers, out_zp: int, act: tuple[int, int],
                 scales: np.ndarray | None = None) -> np.ndarray:
    if scales is not None:  # a fully connected layer: TFLite's double scale, rounded once
        return np.clip(scale_rounded_once_array(acc, scales[:, None, None]) + out_zp, *act)
    out = np.empty(acc.shape, np.int64)
    for c, (m, s) in enumerate(multipliers):
        out[c] = np.vectorize(lambda a: requantize(int(a), m, s), otypes=[np.int64])(acc[c])
    return np.clip(out + out_zp, *act)


def _fully_connected_scales(rng, multipliers) -> np.ndarray:
    """Double scales near the drawn multipliers' values, differing from them in
    the bits a Q31 multiplier cannot hold."""
    real = np.array([m * 2.0 ** (s - 31) for m, s in multipliers])
    return real * (1 + rng.uniform(-2e-9, 2e-9, real.size))


def _add(v: np.ndarray, residual: np.ndarray, add: ElementwiseAdd) -> np.ndarray:
    def one(a: int, r: int) -> int:
        x = requantize((a - add.conv_zp) * (1 << ADD_LEFT_SHIFT), *add.input_multiplier)
        y = requantize((r - add.residual_zp) * (1 << ADD_LEFT_SHIFT), *add.residual_multiplier)
        s = max(-(2**31), min(2**31 - 1, x + y))
        return min(max(requantize(s, *add.output_multiplier) + add.output_zp, add.act_min), add.act_max)

    return np.vectorize(one, otypes=[np.int64])(v, residual.astype(np.int64))


def _float_stage(rng, case: Case, acc: np.ndarray, out_zp: int,
                 add: ElementwiseAdd | None) -> tuple[FloatStage, FloatAdd | None]:
    """An ONNX QDQ layer's float stage for accumulators ``acc`` (without the
    integer bias): input and weight scales that bring each channel to about
    the int8 range, a float bias, and a float ADD when ``add`` is given."""
    f32 = np.float32
    size = np.maximum(1, np.abs(acc).reshape(acc.shape[0], -1).max(axis=1)).astype(np.float64)
    if case.float_stage == "ties":  # every operation exact: outputs land on halves
        out_scale = 2.0 ** -4
        scales0 = np.full(acc.shape[0], out_scale, f32)
        scales1 = (2.0 ** -np.ceil(np.log2(size / 100))).astype(f32)
        bias = (rng.integers(-64, 64, acc.shape[0]) * out_scale / 2).astype(f32)
    else:
        out_scale = float(f32(rng.uniform(0.02, 0.2)))
        s_in = f32(rng.uniform(0.005, 0.1))
        scales0 = np.full(acc.shape[0], s_in, f32)
        scales1 = (100 * out_scale / (float(s_in) * size) * rng.uniform(0.5, 2, acc.shape[0])).astype(f32)
        bias = (rng.uniform(-20, 20, acc.shape[0]) * out_scale).astype(f32)
    quantize = FloatQuantize(out_scale, out_zp, case.relu, case.float_upper, -128, 127)
    stage = FloatStage(scales0, scales1, bias, quantize)
    if add is None:
        return stage, None
    add_quantize = FloatQuantize(float(f32(out_scale * rng.uniform(0.8, 1.6))), add.output_zp,
                                 add.act_min > -128, None, -128, 127)
    return stage, FloatAdd(out_zp, out_scale, add.residual_zp, float(f32(out_scale * rng.uniform(0.5, 2))),
                           add_quantize)


def _multipliers(rng, acc: np.ndarray, case: Case) -> list[tuple[int, int]]:
    """Per channel a multiplier in [2^30, 2^31) and a shift that brings the
    channel's accumulators to about the int8 range (a left one if asked)."""
    result = []
    for c in range(acc.shape[0]):
        size = max(1, int(np.abs(acc[c]).max()))
        shift = int(np.clip(7 - size.bit_length() + rng.integers(-1, 2), *case.shifts))
        if case.left_shift_channels and c % 3 == 1:
            shift = int(rng.integers(1, 4))
        result.append((int(rng.integers(2**30, 2**31)), shift))
    return result


_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_PROT_NONE = 0  # mmap has no name for it


@contextmanager
def aligned(block: bytes):
    """The address of a 64-byte aligned copy of a parameter block."""
    params = np.zeros(len(block) + 64, np.uint8)
    start = -params.ctypes.data % 64
    params[start: start + len(block)] = np.frombuffer(block, np.uint8)
    yield params.ctypes.data + start


_MAP_FIXED_NOREPLACE = 0x100000
_LIBC.mmap.restype = ctypes.c_void_p
_LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


@contextmanager
def near_the_stack(layer, block: bytes):
    """The address of a copy of a compact block less than 2^31 bytes from
    the kernels' stack, as on a 32-bit board (where any distance fits):
    the entry expands the block's words on its stack and addresses the
    tables from there (s8_layer.h)."""
    page = mmap.PAGESIZE
    size = -(-len(block) // page) * page
    stack = layer.stack_address() // page * page
    for distance in (2**24 * k for k in range(1, 96)):
        for hint in (stack - distance - size, stack + distance):
            base = _LIBC.mmap(hint, size, mmap.PROT_READ | mmap.PROT_WRITE,
                              mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_FIXED_NOREPLACE, -1, 0)
            if base not in (None, ctypes.c_void_p(-1).value) and base == hint:
                break
            if base not in (None, ctypes.c_void_p(-1).value):
                _LIBC.munmap(base, size)
        else:
            continue
        break
    else:
        pytest.fail("no free memory within 1.5 GiB of the stack")
    ctypes.memmove(base, block, len(block))
    try:
        yield base
    finally:
        _LIBC.munmap(base, size)


@contextmanager
def guarded(data: bytes):
    """The address of a copy of `data` whose last byte is followed by an
    unreadable page: a kernel that reads past the end of an input binding
    crashes instead of reading whatever follows it."""
    page = mmap.PAGESIZE
    size = -(-len(data) // page) * page + page
    memory = mmap.mmap(-1, size)
    start = size - page - len(data)
    memory[start: start + len(data)] = data
    pointer = ctypes.c_char.from_buffer(memory)
    base = ctypes.addressof(pointer)
    if _LIBC.mprotect(base + size - page, page, _PROT_NONE) != 0:
        raise OSError(ctypes.get_errno(), "mprotect of the guard page failed")
    try:
        yield base + start
    finally:
        _LIBC.mprotect(base + size - page, page, mmap.PROT_READ | mmap.PROT_WRITE)
        del pointer
        memory.close()


def run_case(build, case: Case, rng, adjust=None, choice: KernelChoice = KernelChoice(), compact: bool = False) -> None:
    """Runs one layer (the way `choice` says) and checks every byte of its
    output binding; `adjust` may replace the drawn multipliers."""
    _, _, layer = build
    if case.kind == "fully_connected":
        case = replace(case, kernel=(1, 1))
    chw_in = (case.in_c, *case.in_hw)
    oh, ow = case.out_hw
    chw_out = (case.out_c, oh, ow)
    if case.kind == "fully_connected":
        chw_in, chw_out = (case.in_c, 1, 1), (case.out_c, 1, 1)
    ifm = _layout(0, 3, chw_in, case.in_layout, case.in_border)
    ofm = _layout(1, 5, chw_out, case.out_layout, case.out_border)
    if case.mode == "int32":
        ofm = TensorLayout(replace(ofm.tensor, dtype="i32", offset=8), ofm.roles)
    in_full = rng.integers(-128, 128, ifm.tensor.shape, dtype=np.int8)
    x = _chw(in_full, ifm)

    kh, kw = case.kernel
    if case.kind == "depthwise":
        weights = rng.integers(-128, 128, (kh, kw, case.out_c), dtype=np.int8)
    elif case.kind == "fully_connected":
        weights = rng.integers(-128, 128, (case.out_c, case.in_c), dtype=np.int8)
    else:
        weights = rng.integers(-128, 128, (case.out_c, kh, kw, case.in_c), dtype=np.int8)
    bias = rng.integers(-(2**case.bias_bits), 2**case.bias_bits, case.out_c).astype(np.int32)
    acc = _accumulators(case, x, weights, bias)

    out_zp, act = (3, (3, 127)) if case.relu else (-7, (-128, 127))
    multipliers = None if case.mode == "int32" else _multipliers(rng, acc - bias[:, None, None], case)
    if adjust is not None:
        multipliers = adjust(multipliers)
    scales = None
    if case.kind == "fully_connected" and multipliers is not None:
        scales = _fully_connected_scales(rng, multipliers)
    add = None
    residual_full = np.zeros(1, np.int8)
    if case.mode == "add":
        residual = _layout(2, 7, chw_out, case.res_layout, 1)
        residual_full = rng.integers(-128, 128, residual.tensor.shape, dtype=np.int8)
    elif case.mode == "add_accumulators":  # in the output's layout, as IREE stores them
        residual = _layout(2, 8, chw_out, case.out_layout, 0)
        residual = TensorLayout(replace(residual.tensor, dtype="i32"), residual.roles)
        residual_full = rng.integers(-(2**20), 2**20, residual.tensor.shape, dtype=np.int32)
        res_bias = rng.integers(-(2**16), 2**16, case.out_c).astype(np.int32)
        res_acc = _chw(residual_full, residual).astype(np.int64) + res_bias[:, None, None]
        fused = ResidualAccumulators(res_bias, _multipliers(rng, res_acc, case), -3, 100)
    if case.mode.startswith("add"):
        add = ElementwiseAdd(residual=residual, residual_zp=-3, conv_zp=out_zp,
                             input_multiplier=case.add_multipliers[0], residual_multiplier=case.add_multipliers[1],
                             output_multiplier=case.add_multipliers[2], output_zp=-2, act_min=case.add_act[0],
                             act_max=case.add_act[1], accumulators=fused if case.mode == "add_accumulators" else None)
    spec = LayerSpec(kind=case.kind, ifm=ifm, ofm=ofm, ifm_chw=chw_in, ofm_chw=chw_out, kernel=case.kernel,
                     stride=case.stride, dilation=case.dilation, weights=weights, bias=bias,
                     multipliers=multipliers, ifm_zp=case.in_zp, ofm_zp=out_zp, act_min=act[0], act_max=act[1],
                     relu=case.relu, add=add, scales=scales, multiplier=case.multiplier, padding=case.padding,
                     pad_value=case.pad_value)

    if case.float_stage:
        spec.float_epilogue = True
        spec.float_stage, spec.float_add = _float_stage(rng, case, acc - bias.astype(np.int64)[:, None, None],
                                                        out_zp, add)
        want = float_output(spec.float_stage, (acc - bias.astype(np.int64)[:, None, None]).reshape(case.out_c, -1))
        want = want.reshape(acc.shape)
        if add is not None:
            want = float_add_output(spec.float_add, want, _chw(residual_full, add.residual))
    elif case.mode == "int32":
        want = acc
    else:
        want = _requantized(case, acc, multipliers, out_zp, act, scales)
        if add is not None and add.accumulators is not None:
            fused = add.accumulators
            residual_int8 = _requantized(replace(case, kind="conv"), res_acc, fused.multipliers, add.residual_zp,
                                         (fused.act_min, fused.act_max))
            want = _add(want, residual_int8, add)
        elif add is not None:
            want = _add(want, _chw(residual_full, add.residual), add)

    out_dtype = np.int32 if case.mode == "int32" else np.int8
    out_bytes = bytearray(rng.integers(0, 256, ofm.tensor.offset + int(np.prod(ofm.tensor.shape)) *
                                       np.dtype(out_dtype).itemsize + 64, dtype=np.uint8).tobytes())
    before = bytes(out_bytes)
    expected = np.frombuffer(before, out_dtype, int(np.prod(ofm.tensor.shape)), ofm.tensor.offset) \
        .reshape(ofm.tensor.shape).copy()
    view = expected[ofm.tensor.window]
    order = [ofm.roles.index(r) for r in ("C", "H", "W")]
    if case.kind == "fully_connected":
        view.reshape(-1)[:] = want.reshape(-1)
    else:
        view.transpose(order)[:] = want

    block = layer_block(spec, choice, float_output=bool(case.float_stage), compact=compact)
    if not choice.weight_sums and not compact:
        _check_board_tables(block, case.out_c, bool(case.float_stage))
    res_offset = add.residual.tensor.offset if add is not None else 0
    out_array = np.frombuffer(out_bytes, np.uint8)
    if compact:
        full = layer_block(spec, choice, float_output=bool(case.float_stage))
        _check_board_tables(full, case.out_c, bool(case.float_stage))
        _check_compact_words(layer, block, full, case)
    with (near_the_stack(layer, block) if compact else aligned(block)) as params_at, \
            guarded(bytes(3) + in_full.tobytes()) as in_at, \
            guarded(bytes(res_offset) + residual_full.tobytes()) as res_at:
        layer(params_at, in_at, out_array.ctypes.data, res_at)

    got = np.frombuffer(out_bytes, out_dtype, int(np.prod(ofm.tensor.shape)), ofm.tensor.offset)
    np.testing.assert_array_equal(got.reshape(ofm.tensor.shape), expected)
    tail = ofm.tensor.offset + expected.nbytes
    assert bytes(out_bytes[:ofm.tensor.offset]) == before[:ofm.tensor.offset]
    assert bytes(out_bytes[tail:]) == before[tail:]


CASES = {
    # The models' layers, smaller.
    "3x3 16->16 on a padded plane": Case(in_c=16, in_hw=(18, 18), out_c=16),
    "3x3 3->16 (K = 27)": Case(in_c=3, in_hw=(12, 12), out_c=16),
    "3x3 16->32 stride 2": Case(in_c=16, in_hw=(17, 17), out_c=32, stride=(2, 2)),
    "3x3 64->64 int32 at 8x8": Case(in_c=64, in_hw=(10, 10), out_c=64, mode="int32", in_zp=0),
    "3x3 16->16 + add": Case(in_c=16, in_hw=(10, 34), out_c=16, mode="add", relu=False),
    "10x4 1->64 stride 2 into a padded plane": Case(in_c=1, in_hw=(58, 12), out_c=64, kernel=(10, 4),
                                                   stride=(2, 2), out_border=1),
    # One input channel and kernel rows of four taps: a K group is four adjacent input bytes.
    "4x4 1->8, rows of four taps": Case(in_c=1, in_hw=(11, 40), out_c=8, kernel=(4, 4)),
    "1x4 1->6 stride (1, 4), rows of four taps": Case(in_c=1, in_hw=(3, 70), out_c=6, kernel=(1, 4), stride=(1, 4)),
    "1x1 64->64 at 25x5 into a padded plane": Case(in_c=64, in_hw=(25, 5), out_c=64, kernel=(1, 1), out_border=1),
    "1x1 16->32 stride 2 + add of int32 accumulators (resnet's shortcut)": Case(
        in_c=16, in_hw=(32, 32), out_c=32, kernel=(1, 1), stride=(2, 2), mode="add_accumulators", relu=False),
    "1x1 64->64 int32": Case(in_c=64, in_hw=(1, 125), out_c=64, kernel=(1, 1), mode="int32", in_zp=0),
    "1x1 32->64 stride 2 int32": Case(in_c=32, in_hw=(16, 16), out_c=64, kernel=(1, 1), stride=(2, 2),
                                      mode="int32"),
    "fully connected 64->12": Case(kind="fully_connected", in_c=64, out_c=12),
    # Input interleaved once (few output channels, whole vectors per row or contiguous rows).
    "interleaved input, stride 2": Case(in_c=8, in_hw=(9, 33), out_c=8, stride=(2, 2)),
    "interleaved input, stride 2, dilation (1, 2)": Case(in_c=4, in_hw=(9, 35), out_c=8, stride=(2, 2),
                                                         dilation=(1, 2)),
    "interleaved input, dilation 2, odd channels": Case(in_c=4, in_hw=(12, 36), out_c=5, dilation=(2, 2)),
    "interleaved input, 1x1 over contiguous rows": Case(in_c=8, in_hw=(5, 7), out_c=8, kernel=(1, 1)),
    # Edges.
    "odd channels, 7x5 pixels, K = 45": Case(in_c=5, in_hw=(9, 7), out_c=7, in_border=2),
    "one output channel": Case(in_c=4, in_hw=(5, 9), out_c=1),
    "three output channels, 1x1, K = 3": Case(in_c=3, in_hw=(3, 37), out_c=3, kernel=(1, 1)),
    "stride 3": Case(in_c=6, in_hw=(20, 23), out_c=10, stride=(3, 3)),
    "stride 4, 5x5": Case(in_c=4, in_hw=(29, 41), out_c=6, kernel=(5, 5), stride=(4, 4)),
    "stride (1, 2)": Case(in_c=8, in_hw=(7, 40), out_c=9, stride=(1, 2)),
    "dilation 2": Case(in_c=8, in_hw=(13, 21), out_c=6, dilation=(2, 2)),
    "dilation (3, 1), stride 2": Case(in_c=4, in_hw=(15, 19), out_c=5, dilation=(3, 1), stride=(2, 2)),
    "channel-last in and out": Case(in_c=12, in_hw=(7, 9), out_c=10, in_layout="HWC", out_layout="HWC"),
    "channel-last, add of int32 accumulators": Case(in_c=8, in_hw=(6, 11), out_c=6, in_layout="HWC",
                                                    out_layout="HWC", mode="add_accumulators", out_border=1),
    "add of int32 accumulators, left shifts": Case(in_c=4, in_hw=(5, 9), out_c=7, kernel=(1, 1),
                                                   mode="add_accumulators", left_shift_channels=True,
                                                   shifts=(-31, 3)),
    "channel-last in, channel-first out with add": Case(in_c=8, in_hw=(6, 11), out_c=6, in_layout="HWC",
                                                        mode="add"),
    "left shifts, no relu": Case(in_c=2, in_hw=(4, 19), out_c=9, kernel=(1, 1), left_shift_channels=True,
                                 relu=False, shifts=(-31, 3)),
    "long reduction (K = 2048)": Case(in_c=512, in_hw=(3, 5), out_c=5, kernel=(2, 2)),
    # Longer than one chunk of the reduction: partial sums, chunks that start inside a tap's channels.
    "reduction in chunks (K = 4 * 1025)": Case(in_c=1025, in_hw=(3, 4), out_c=67, kernel=(2, 2)),
    "fully connected in chunks (K = 4000)": Case(kind="fully_connected", in_c=4000, out_c=5),
    "fully connected in chunks (K = 9001), int32": Case(kind="fully_connected", in_c=9001, out_c=3, mode="int32"),
    # Too long for a gathered panel beside the interleaved input: the grid.
    "long reduction on the grid": Case(in_c=512, in_hw=(4, 5), out_c=5, kernel=(2, 2)),
    "K = 1000, 3 panel vectors": Case(in_c=250, in_hw=(3, 40), out_c=4, kernel=(2, 2)),
    "many pixels": Case(in_c=4, in_hw=(34, 66), out_c=6),
    "fully connected, K = 10, int32": Case(kind="fully_connected", in_c=10, out_c=5, mode="int32"),
    "fully connected 1000->3": Case(kind="fully_connected", in_c=1000, out_c=3),
    "fully connected, left shifts": Case(kind="fully_connected", in_c=7, out_c=9, left_shift_channels=True,
                                         shifts=(-31, 3)),
    # Depthwise.
    "depthwise 3x3 64 channels, 25x5 from a padded plane": Case(kind="depthwise", in_c=64, in_hw=(27, 7),
                                                              out_c=64, in_border=0, in_zp=-128),
    "depthwise 3x3 into a padded plane": Case(kind="depthwise", in_c=5, in_hw=(27, 7), out_c=5, out_border=1),
    "depthwise 70 channels (two blocks), int32": Case(kind="depthwise", in_c=70, in_hw=(6, 9), out_c=70,
                                                      mode="int32"),
    "depthwise wide rows": Case(kind="depthwise", in_c=3, in_hw=(5, 70), out_c=3, in_border=9),
    "depthwise 5x5": Case(kind="depthwise", in_c=4, in_hw=(11, 13), out_c=4, kernel=(5, 5)),
    # With VBMI: all 25 taps of a vector's 16 pixels in one 64-byte window (7 groups of four taps).
    "depthwise 5x5 in one window": Case(kind="depthwise", in_c=5, in_hw=(8, 8), out_c=5, kernel=(5, 5)),
    "depthwise 7x7 row by row": Case(kind="depthwise", in_c=3, in_hw=(12, 30), out_c=3, kernel=(7, 7), in_border=1),
    "depthwise 1x9, dilation (1, 3)": Case(kind="depthwise", in_c=3, in_hw=(4, 40), out_c=3, kernel=(1, 9),
                                           dilation=(1, 3)),
    "depthwise 3x3, dilation 6": Case(kind="depthwise", in_c=3, in_hw=(20, 30), out_c=3, dilation=(6, 6)),
    "depthwise 2x2, dilation 13": Case(kind="depthwise", in_c=2, in_hw=(20, 30), out_c=2, kernel=(2, 2),
                                       dilation=(13, 13)),
    "depthwise stride (2, 1)": Case(kind="depthwise", in_c=6, in_hw=(13, 9), out_c=6, stride=(2, 1)),
    "depthwise stride 2": Case(kind="depthwise", in_c=6, in_hw=(13, 9), out_c=6, stride=(2, 2)),
    "depthwise one row": Case(kind="depthwise", in_c=3, in_hw=(3, 21), out_c=3),
    "add whose sum is scaled with a shift of 0": Case(in_c=8, in_hw=(6, 21), out_c=8, mode="add", relu=False,
                                                      add_multipliers=((1518500250, -25), (1288490189, -25),
                                                                       (1431655765, 0))),
    # Operand scales near 1 and a sum scaled by about 0.75: an error of one in a
    # scaled operand's low bits changes outputs (the real models' scales hide it).
    "add whose operands keep their multipliers' low bits": Case(
        in_c=8, in_hw=(6, 21), out_c=8, mode="add", relu=False,
        add_multipliers=((3499, -2), (2381, -3), (1600000000, 0))),
    # TFLite's multiplier for the ADD's input of the larger scale: 2^30, no shift.
    "add whose first input has the larger scale": Case(in_c=8, in_hw=(6, 21), out_c=8, mode="add", relu=False,
                                                       add_multipliers=((1 << 30, 0), (3499, -2), (1600000000, 0))),
    "add whose residual has the larger scale": Case(in_c=8, in_hw=(6, 21), out_c=8, mode="add", relu=False,
                                                    add_multipliers=((3499, -2), (1 << 30, 0), (1600000000, 0))),
    "add with a ReLU": Case(in_c=8, in_hw=(6, 21), out_c=8, mode="add", relu=False, add_act=(-2, 127)),
    "add clamped to a range": Case(in_c=8, in_hw=(6, 21), out_c=8, mode="add", relu=False, add_act=(-40, 30),
                                   add_multipliers=((3499, -2), (2381, -3), (1600000000, 0))),
    "3x3 add of int32 accumulators, 7 columns of 9": Case(in_c=8, in_hw=(8, 9), out_c=8, mode="add_accumulators"),
    "depthwise + add": Case(kind="depthwise", in_c=7, in_hw=(8, 8), out_c=7, mode="add", relu=False),
    "depthwise + add of int32 accumulators": Case(kind="depthwise", in_c=7, in_hw=(8, 8), out_c=7,
                                                  mode="add_accumulators"),
    "depthwise channel-last": Case(kind="depthwise", in_c=8, in_hw=(6, 6), out_c=8, in_layout="HWC",
                                   out_layout="HWC"),
    "depthwise left shifts": Case(kind="depthwise", in_c=6, in_hw=(5, 9), out_c=6, left_shift_channels=True,
                                  shifts=(-31, 3), relu=False),
    # Channel multipliers: output channel c reads input channel c // M (the vector kernels' planes too).
    "depthwise multiplier 2, 3x3 from a padded plane": Case(kind="depthwise", in_c=5, in_hw=(27, 7), out_c=10,
                                                            multiplier=2, in_border=1),
    "depthwise multiplier 3, stride 2, dilation 2": Case(kind="depthwise", in_c=3, in_hw=(13, 11), out_c=9,
                                                         multiplier=3, stride=(2, 2), dilation=(2, 2)),
    "depthwise multiplier 4, 72 channels (two blocks), int32": Case(kind="depthwise", in_c=18, in_hw=(6, 9), out_c=72,
                                                       multiplier=4, mode="int32"),
    "depthwise multiplier 8, 5x5 channel-last": Case(kind="depthwise", in_c=2, in_hw=(11, 13), out_c=16,
                                                     multiplier=8, kernel=(5, 5), in_layout="HWC", out_layout="HWC"),
    "depthwise multiplier 2 + add": Case(kind="depthwise", in_c=4, in_hw=(8, 8), out_c=8, multiplier=2, mode="add",
                                         relu=False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_layer_equals_tflite_arithmetic(build, name, rng):
    run_case(build, CASES[name], rng)


@pytest.mark.parametrize("conv_form", ["packed", "direct"])
@pytest.mark.parametrize("name", ["3x3 16->16 + add", "3x3 16->32 stride 2", "3x3 64->64 int32 at 8x8",
                                  "interleaved input, stride 2, dilation (1, 2)", "3x3 3->16 (K = 27)",
                                  "odd channels, 7x5 pixels, K = 45", "10x4 1->64 stride 2 into a padded plane",
                                  "left shifts, no relu"])
def test_conv_forms_equal_tflite_arithmetic(build, name, conv_form, rng):
    """The x86 convolution's packed and direct forms, as tuning forces them
    (the kernel keeps packed where direct cannot run); input channels that
    are not a multiple of 4 run direct with each tap's channels padded."""
    run_case(build, CASES[name], rng, choice=KernelChoice(conv_form=conv_form))


# Layers that read their input padding (TFLite's SAME, an explicit PAD's
# sides, an ONNX Conv's pads): every side alone and together, strides,
# dilations, kernel sizes, channel-first and channel-last, windows of larger
# tensors, padding wider than the input, chunked reductions and every output
# mode; the padding holds the zero point (pad_value = in_zp) or, as where a
# TFLite model's zero point is folded into the bias (in_zp 0), a value of its own.
PADDED_CASES = {
    "3x3 SAME": Case(in_c=8, in_hw=(6, 7), out_c=8, padding=(1, 1, 1, 1), pad_value=-5),
    "3x3 SAME, zero point in the bias": Case(in_c=5, in_hw=(6, 7), out_c=7, padding=(1, 1, 1, 1), in_zp=0,
                                             pad_value=-128),
    "top only": Case(in_c=4, in_hw=(5, 6), out_c=6, padding=(2, 0, 0, 0), pad_value=-5),
    "bottom only": Case(in_c=4, in_hw=(5, 6), out_c=6, padding=(0, 2, 0, 0), pad_value=-5),
    "left only": Case(in_c=4, in_hw=(5, 6), out_c=6, padding=(0, 0, 2, 0), pad_value=-5),
    "right only": Case(in_c=4, in_hw=(5, 6), out_c=6, padding=(0, 0, 0, 3), in_zp=0, pad_value=77),
    "stride 2, bottom and right (SAME on even sizes)": Case(in_c=8, in_hw=(8, 10), out_c=16, stride=(2, 2),
                                                            padding=(0, 1, 0, 1), pad_value=-5),
    "stride 2, every side different": Case(in_c=3, in_hw=(9, 11), out_c=8, stride=(2, 2), padding=(1, 2, 3, 0),
                                           pad_value=-5),
    "dilation 2": Case(in_c=4, in_hw=(7, 9), out_c=5, dilation=(2, 2), padding=(2, 2, 2, 2), pad_value=-5),
    "5x5, stride (1, 2), channel-last": Case(in_c=6, in_hw=(7, 12), out_c=9, kernel=(5, 5), stride=(1, 2),
                                             padding=(2, 2, 2, 2), in_layout="HWC", out_layout="HWC", in_zp=0,
                                             pad_value=-128),
    "10x4 stride 2 (kws's first layer)": Case(in_c=1, in_hw=(49, 10), out_c=16, kernel=(10, 4), stride=(2, 2),
                                              padding=(4, 5, 1, 1), in_layout="HWC", out_layout="HWC", in_zp=0,
                                              pad_value=83),
    "channel-last, 4 channels, neighbouring pixels": Case(in_c=4, in_hw=(6, 9), out_c=4, padding=(1, 1, 1, 1),
                                                          in_layout="HWC", out_layout="HWC", pad_value=-5),
    "padding wider than the input": Case(in_c=2, in_hw=(2, 3), out_c=3, padding=(3, 3, 4, 4), pad_value=-5),
    "window of a larger tensor": Case(in_c=4, in_hw=(6, 6), out_c=4, in_border=2, out_border=1,
                                      padding=(1, 1, 1, 1), pad_value=-5),
    "int32 out": Case(in_c=8, in_hw=(5, 5), out_c=8, mode="int32", padding=(1, 1, 1, 1), in_zp=0, pad_value=9),
    "+ add": Case(in_c=8, in_hw=(6, 7), out_c=8, mode="add", relu=False, padding=(1, 1, 1, 1), pad_value=-5),
    "reduction in chunks": Case(in_c=600, in_hw=(3, 4), out_c=5, kernel=(2, 2), padding=(1, 0, 0, 1),
                                pad_value=-5),
    "depthwise 3x3 SAME": Case(kind="depthwise", in_c=8, in_hw=(6, 7), out_c=8, padding=(1, 1, 1, 1), pad_value=-5),
    "depthwise 3x3 SAME channel-last, zero point in the bias": Case(
        kind="depthwise", in_c=9, in_hw=(25, 5), out_c=9, padding=(1, 1, 1, 1), in_layout="HWC", out_layout="HWC",
        in_zp=0, pad_value=-128),
    "depthwise stride 2, bottom and right": Case(kind="depthwise", in_c=8, in_hw=(8, 8), out_c=8, stride=(2, 2),
                                                 padding=(0, 1, 0, 1), in_layout="HWC", out_layout="HWC",
                                                 pad_value=-5),
    "depthwise channel-last wider than a strip (interior and borders)": Case(
        kind="depthwise", in_c=64, in_hw=(6, 40), out_c=64, padding=(1, 1, 1, 1), in_layout="HWC", out_layout="HWC",
        in_zp=0, pad_value=-128),
    "depthwise every side different": Case(kind="depthwise", in_c=5, in_hw=(7, 9), out_c=5, padding=(2, 0, 1, 3),
                                           pad_value=-5),
    "depthwise channel-last multiplier 2 wider than a strip": Case(
        kind="depthwise", in_c=22, in_hw=(5, 40), out_c=44, multiplier=2, padding=(1, 2, 0, 1), in_layout="HWC",
        out_layout="HWC", pad_value=-5),
    "depthwise 5x5 dilation 2": Case(kind="depthwise", in_c=3, in_hw=(9, 11), out_c=3, kernel=(5, 5),
                                     dilation=(2, 2), padding=(4, 4, 4, 4), pad_value=-5),
    "depthwise multiplier 2": Case(kind="depthwise", in_c=3, in_hw=(6, 6), out_c=6, multiplier=2,
                                   padding=(1, 1, 1, 1), pad_value=-5),
    "depthwise wider than the input (no interior)": Case(kind="depthwise", in_c=4, in_hw=(2, 2), out_c=4,
                                                        padding=(2, 2, 2, 2), pad_value=-5),
    "depthwise + add, int32 out": Case(kind="depthwise", in_c=6, in_hw=(5, 6), out_c=6, mode="add", relu=False,
                                       padding=(1, 1, 1, 1), pad_value=-5),
    "depthwise int32 out": Case(kind="depthwise", in_c=6, in_hw=(5, 6), out_c=6, mode="int32", in_zp=0,
                                padding=(1, 1, 1, 1), pad_value=3),
    # Larger than one strip of the x86 kernels (s8_padded_x86.c, 48 KiB): bands of output rows, and where
    # one output row's input rows do not fit, single rows in runs of columns.
    "depthwise 96 channels in bands of rows, stride 2": Case(
        kind="depthwise", in_c=96, in_hw=(41, 40), out_c=96, stride=(2, 2), padding=(0, 1, 0, 1), in_layout="HWC",
        out_layout="HWC", in_zp=0, pad_value=-128),
    "depthwise 600 channels in runs of columns": Case(kind="depthwise", in_c=600, in_hw=(4, 30), out_c=600,
                                                      padding=(1, 1, 2, 1), pad_value=-5),
    "3x3 32->24 in bands of rows + add": Case(in_c=32, in_hw=(45, 37), out_c=24, mode="add", relu=False,
                                              padding=(1, 1, 1, 1), pad_value=-5),
}


@pytest.mark.parametrize("name", list(PADDED_CASES))
def test_padded_layer_equals_tflite_arithmetic(build, name, rng):
    """Padded layers with the blocks the host makes (the x86 vector kernels
    run them from strips of padded input, s8_padded_x86.c; the portable
    build reads the padding itself) and the board presets make (the portable
    kernels), and for channel-last depthwise layers the tap-ordered weights
    of the DSP cores."""
    case = PADDED_CASES[name]
    run_case(build, case, rng)
    run_case(build, case, rng, choice=BOARD_BLOCK)
    if case.kind == "depthwise" and case.in_layout == "HWC" and case.multiplier in TAPS_MULTIPLIERS:
        run_case(build, case, rng, choice=KernelChoice(weights="taps", weight_sums=False))


@pytest.mark.parametrize("conv_form", ["packed", "direct"])
@pytest.mark.parametrize("name", ["3x3 SAME", "stride 2, every side different", "dilation 2", "+ add",
                                  "10x4 stride 2 (kws's first layer)", "3x3 32->24 in bands of rows + add"])
def test_padded_conv_forms_equal_tflite_arithmetic(build, name, conv_form, rng):
    """The x86 convolution's packed and direct forms on padded layers' strips."""
    run_case(build, PADDED_CASES[name], rng, choice=KernelChoice(conv_form=conv_form))


def _check_board_tables(block: bytes, channels: int, floating: bool) -> None:
    """A block without weight sums holds per channel the bias, multiplier
    and shift, one table after the other (a float output stage: one table
    of zeros for the three; a fully connected block: the bias alone, its
    scales instead of the other two), and then only what the layer has
    besides (a fused residual's stage, a float stage, FC scales)."""
    words = np.frombuffer(block[:4 * WORDS["COUNT"]], "<i4")
    count = WORDS["COUNT"]
    assert words[WORDS["WEIGHT_SUM_AT"]] == 0
    one_table = floating or words[WORDS["KIND"]] == DEFINES["NPUKIT_S8_FULLY_CONNECTED"]
    tables = 1 if one_table else 3
    assert [words[WORDS[t]] for t in ("BIAS_AT", "MULTIPLIER_AT", "SHIFT_AT")] == \
        ([count] * 3 if one_table else [count, count + channels, count + 2 * channels])
    if floating:
        assert not np.frombuffer(block, "<i4", channels, 4 * count).any()
    following = [int(words[WORDS[t]]) for t in ("RES_BIAS_AT", "FLOAT_AT", "SCALE_AT") if words[WORDS[t]]]
    following.append(int(words[WORDS["WEIGHTS_AT"]]) // 4)
    assert min(following) - count in (tables * channels, tables * channels + 1)  # + 1: an 8-byte boundary


def _decoded_words(layer, block: bytes) -> np.ndarray:
    """The words npukit_s8_layer_words expands from a compact block."""
    copy = ctypes.create_string_buffer(bytes(block), len(block))
    words = np.zeros(WORDS["COUNT"], np.int32)
    assert layer.words(ctypes.addressof(copy), words.ctypes.data) == 1
    return words


def _check_compact_words(layer, compact: bytes, full: bytes, case: Case) -> None:
    """The compact block's words, as the kernels' entry expands them, are
    the full block's: every word equal but the positions, which locate the
    same tables and weights in the compact block."""
    words = _decoded_words(layer, compact)
    full_words = np.frombuffer(full[:4 * WORDS["COUNT"]], "<i4")
    positions = set(position_words())
    assert [n for n in WORDS if n.endswith("_AT")] == [n for n in WORDS if n in positions]
    for name, index in WORDS.items():
        if name != "COUNT" and name not in positions:
            assert words[index] == full_words[index], name
    sizes = {"FLOAT_AT": 12, "SCALE_AT": 8}
    for name in positions - {"WEIGHTS_AT"}:
        at, full_at = int(words[WORDS[name]]), int(full_words[WORDS[name]])
        assert (at == 0) == (full_at == 0), name
        if not at:
            continue
        n = sizes.get(name, 4) * case.out_c
        assert compact[4 * at: 4 * at + n] == full[4 * full_at: 4 * full_at + n], name
    assert words[WORDS["WEIGHTS_AT"]] % 8 == 0 and words[WORDS["SCALE_AT"]] % 2 == 0
    assert compact[words[WORDS["WEIGHTS_AT"]]:] == full[full_words[WORDS["WEIGHTS_AT"]]:]
    assert len(compact) < len(full)


def test_compact_encoding_round_trips_every_word(build):
    """Any int32 in any word, the extremes included, comes back from the
    compact encoding as it went in (s8_layer.h); a zero word takes no byte."""
    rng = np.random.default_rng(30)
    count = WORDS["COUNT"]
    _, _, layer = build
    edges = np.array([-2**31, 2**31 - 1, -1, 1, 63, 64, -64, -65, 2**27, -2**27 - 1, 2**13, -2**20], np.int64)
    for _ in range(300):
        words = rng.integers(-2**31, 2**31, count, dtype=np.int64) >> rng.integers(0, 32, count)
        words[rng.random(count) < 0.3] = 0
        words[rng.integers(0, count, 6)] = rng.choice(edges, 6)
        encoded = compact_words(words)
        present = int(np.count_nonzero(words[1:]))
        assert len(encoded) >= 4 + (count + 7) // 8 + present
        expected = words.copy()
        expected[WORDS["MAGIC"]] = DEFINES["NPUKIT_S8_MAGIC"]
        np.testing.assert_array_equal(_decoded_words(layer, encoded), expected)
    zeros = np.zeros(count, np.int64)
    assert len(compact_words(zeros)) == 4 + (count + 7) // 8
    full = np.zeros(4 * count, np.uint8)  # a block in the full encoding is not compact
    assert layer.words(full.ctypes.data, np.zeros(count, np.int32).ctypes.data) == 0


# Blocks as the board presets make them (npukit.cpu.kernel_choice.block_weight_sums).
BOARD_BLOCK = KernelChoice(weight_sums=False)


@pytest.mark.parametrize("name", list(CASES))
def test_blocks_without_weight_sums_equal_tflite_arithmetic(build, name, rng):
    """A block without the weight sums, as the board presets get it: the
    x86 kernels leave the layer to the portable ones, which derive what they
    need per call; the results are TFLite's all the same. (The x86 kernels
    decline alike on every build: the AVX2 and portable ones suffice.)"""
    if build[0] not in ("avx2", "portable"):
        pytest.skip("the x86 kernels decline the block alike on every build")
    run_case(build, CASES[name], rng, choice=BOARD_BLOCK)


@pytest.mark.parametrize("name", list(CASES))
def test_compact_blocks_equal_tflite_arithmetic(build, name, rng):
    """Blocks in the compact encoding the 32-bit boards get (s8_layer.h),
    read in place at a distance from the stack that fits the int32
    positions: the entry's expanded words address the block's tables, and
    the results are TFLite's. (The portable kernels, as on the boards.)"""
    if build[0] != "portable":
        pytest.skip("the boards' kernels are the portable ones")
    run_case(build, CASES[name], rng, choice=BOARD_BLOCK, compact=True)


# Channel-last layers with lane-ordered weights: output channels are vector lanes.
_HWC = dict(in_layout="HWC", out_layout="HWC", res_layout="HWC")
LANE_CASES = {
    # The models' layers (kws_int8, resnet8_int8 and MobileNet-style, as .tflite gives them), smaller.
    "3x3 16->16 on a padded plane": Case(in_c=16, in_hw=(18, 18), out_c=16, out_border=1, **_HWC),
    "3x3 3->16 (rows of 9 values, 3 words)": Case(in_c=3, in_hw=(12, 12), out_c=16, **_HWC),
    "3x3 16->32 stride 2": Case(in_c=16, in_hw=(17, 17), out_c=32, stride=(2, 2), **_HWC),
    "3x3 64->64 int32 at 8x8": Case(in_c=64, in_hw=(10, 10), out_c=64, mode="int32", in_zp=0, **_HWC),
    "3x3 16->16 + add": Case(in_c=16, in_hw=(10, 34), out_c=16, mode="add", relu=False, **_HWC),
    "10x4 1->64 stride 2 into a padded plane": Case(in_c=1, in_hw=(58, 12), out_c=64, kernel=(10, 4),
                                                   stride=(2, 2), out_border=1, **_HWC),
    "1x1 64->64 at 25x5": Case(in_c=64, in_hw=(25, 5), out_c=64, kernel=(1, 1), **_HWC),
    "1x1 16->32 stride 2 + add of int32 accumulators": Case(in_c=16, in_hw=(16, 16), out_c=32, kernel=(1, 1),
                                                            stride=(2, 2), mode="add_accumulators", relu=False,
                                                            **_HWC),
    "1x1 32->96, ReLU6-like range": Case(in_c=32, in_hw=(7, 9), out_c=96, kernel=(1, 1), **_HWC),
    "1x1 24->144 stride 1, zero point 127": Case(in_c=24, in_hw=(5, 6), out_c=144, kernel=(1, 1), in_zp=127,
                                                 **_HWC),
    "fully connected 64->12": Case(kind="fully_connected", in_c=64, out_c=12, **_HWC),
    "fully connected 1000->3": Case(kind="fully_connected", in_c=1000, out_c=3, **_HWC),
    "fully connected 70->33, int32": Case(kind="fully_connected", in_c=70, out_c=33, mode="int32", **_HWC),
    "fully connected, left shifts": Case(kind="fully_connected", in_c=7, out_c=9, left_shift_channels=True,
                                         shifts=(-31, 3), **_HWC),
    # Edges: channel tails, segments no multiple of 4 (reads near the input's end), strides, dilation.
    "odd channels 5->7, K = 45, window of a padded input": Case(in_c=5, in_hw=(9, 7), out_c=7, in_border=2,
                                                               **_HWC),
    "one output channel": Case(in_c=4, in_hw=(5, 9), out_c=1, **_HWC),
    "three channels 1x1, K = 3": Case(in_c=3, in_hw=(3, 37), out_c=3, kernel=(1, 1), **_HWC),
    "17 output channels (a vector and one)": Case(in_c=6, in_hw=(7, 8), out_c=17, **_HWC),
    "40 output channels (three vectors)": Case(in_c=8, in_hw=(6, 7), out_c=40, **_HWC),
    "100 output channels (seven vectors)": Case(in_c=12, in_hw=(5, 6), out_c=100, kernel=(1, 1), **_HWC),
    "stride 3": Case(in_c=6, in_hw=(20, 23), out_c=10, stride=(3, 3), **_HWC),
    "stride 4, 5x5": Case(in_c=4, in_hw=(29, 41), out_c=6, kernel=(5, 5), stride=(4, 4), **_HWC),
    "stride (1, 2)": Case(in_c=8, in_hw=(7, 40), out_c=9, stride=(1, 2), **_HWC),
    "dilation 2 (a tap's channels per segment)": Case(in_c=8, in_hw=(13, 21), out_c=6, dilation=(2, 2), **_HWC),
    "dilation (3, 1), stride 2": Case(in_c=4, in_hw=(15, 19), out_c=5, dilation=(3, 1), stride=(2, 2), **_HWC),
    "two channels, dilation 2 (segments of 2)": Case(in_c=2, in_hw=(9, 11), out_c=20, dilation=(2, 2), **_HWC),
    "one channel, dilation (1, 2)": Case(in_c=1, in_hw=(9, 14), out_c=18, kernel=(3, 4), dilation=(1, 2), **_HWC),
    "left shifts, no relu": Case(in_c=2, in_hw=(4, 19), out_c=9, kernel=(1, 1), left_shift_channels=True,
                                 relu=False, shifts=(-31, 3), **_HWC),
    "large biases (general arithmetic)": Case(in_c=8, in_hw=(6, 9), out_c=24, bias_bits=29, shifts=(-28, -20),
                                              **_HWC),
    "large biases + add": Case(in_c=8, in_hw=(6, 9), out_c=24, bias_bits=29, shifts=(-28, -20), mode="add",
                               relu=False, **_HWC),
    "zero point -128, no relu": Case(in_c=16, in_hw=(6, 9), out_c=16, in_zp=-128, relu=False, **_HWC),
    "long reduction (K = 2048)": Case(in_c=512, in_hw=(3, 5), out_c=5, kernel=(2, 2), **_HWC),
    "reduction past 2048 values (K = 4 * 1025)": Case(in_c=1025, in_hw=(3, 4), out_c=17, kernel=(2, 2), **_HWC),
    "reduction past the vector kernel's (K = 9000)": Case(in_c=3000, in_hw=(2, 3), out_c=17, kernel=(1, 3), **_HWC),
    "many pixels": Case(in_c=4, in_hw=(34, 66), out_c=6, **_HWC),
    "add whose operands keep their multipliers' low bits": Case(
        in_c=8, in_hw=(6, 21), out_c=8, mode="add", relu=False,
        add_multipliers=((3499, -2), (2381, -3), (1600000000, 0)), **_HWC),
    "add whose sum is scaled with a shift of 0": Case(in_c=8, in_hw=(6, 21), out_c=8, mode="add", relu=False,
                                                      add_multipliers=((1518500250, -25), (1288490189, -25),
                                                                       (1431655765, 0)), **_HWC),
    "add clamped to a range": Case(in_c=8, in_hw=(6, 21), out_c=20, mode="add", add_act=(-40, 30),
                                   add_multipliers=((3499, -2), (2381, -3), (1600000000, 0)), **_HWC),
    "add with a ReLU": Case(in_c=8, in_hw=(6, 21), out_c=8, mode="add", relu=False, add_act=(-2, 127), **_HWC),
    "3x3 add of int32 accumulators, 7 columns of 9": Case(in_c=8, in_hw=(8, 9), out_c=8, mode="add_accumulators",
                                                         **_HWC),
    # 8 output channels: two pixels per vector (AVX-512) where the output's (and residual's) pixels follow.
    "8 channels, rows of 9 (pairs across rows)": Case(in_c=8, in_hw=(9, 11), out_c=8, **_HWC),
    "8 channels into a padded plane, even rows": Case(in_c=8, in_hw=(10, 12), out_c=8, out_border=1, **_HWC),
    "8 channels into a padded plane, odd rows": Case(in_c=4, in_hw=(10, 11), out_c=8, out_border=1, **_HWC),
    "1->8 channels (rows of 3 values), near the end": Case(in_c=1, in_hw=(12, 13), out_c=8, in_zp=-128, **_HWC),
    "3->8 channels stride 2": Case(in_c=3, in_hw=(17, 19), out_c=8, stride=(2, 2), **_HWC),
    "1x1 48->8 + add": Case(in_c=48, in_hw=(5, 7), out_c=8, kernel=(1, 1), mode="add", relu=False, **_HWC),
    "8 channels + add, rows of 7": Case(in_c=8, in_hw=(9, 9), out_c=8, mode="add", **_HWC),
    "8 channels + add of int32 accumulators": Case(in_c=8, in_hw=(8, 10), out_c=8, mode="add_accumulators", **_HWC),
    "8 channels, int32": Case(in_c=16, in_hw=(5, 8), out_c=8, mode="int32", **_HWC),
    "8 channels, int32, a lone last pixel": Case(in_c=8, in_hw=(5, 5), out_c=8, mode="int32", in_zp=0, **_HWC),
    "40 channels + add of int32 accumulators, left shifts": Case(in_c=4, in_hw=(6, 7), out_c=40, kernel=(1, 1),
                                                                 mode="add_accumulators", left_shift_channels=True,
                                                                 shifts=(-31, 3), relu=False, **_HWC),
    "8 channels, large biases": Case(in_c=8, in_hw=(6, 9), out_c=8, bias_bits=29, shifts=(-28, -20), **_HWC),
    "8 channels, left shifts": Case(in_c=2, in_hw=(4, 19), out_c=8, kernel=(1, 1), left_shift_channels=True,
                                    relu=False, shifts=(-31, 3), **_HWC),
    "8 channels, one pixel": Case(in_c=8, in_hw=(3, 3), out_c=8, **_HWC),
    # Depthwise.
    "depthwise 3x3 64 channels, 25x5 from a padded plane": Case(kind="depthwise", in_c=64, in_hw=(27, 7),
                                                              out_c=64, in_zp=-128, **_HWC),
    "depthwise 3x3 into a padded plane": Case(kind="depthwise", in_c=5, in_hw=(27, 7), out_c=5, out_border=1,
                                              **_HWC),
    "depthwise 70 channels (two blocks), int32": Case(kind="depthwise", in_c=70, in_hw=(6, 9), out_c=70,
                                                      mode="int32", **_HWC),
    "depthwise 3x3 stride 2, 96 channels": Case(kind="depthwise", in_c=96, in_hw=(11, 13), out_c=96, stride=(2, 2),
                                                **_HWC),
    "depthwise 3x3, 144 channels from a window": Case(kind="depthwise", in_c=144, in_hw=(7, 6), out_c=144,
                                                      in_border=1, in_zp=127, **_HWC),
    "depthwise 40 channels, no relu": Case(kind="depthwise", in_c=40, in_hw=(6, 7), out_c=40, relu=False, **_HWC),
    # Fewer than 32 channels: blocks of 64 / C neighbouring pixels (AVX-512), rows no multiple of them.
    "depthwise 8 channels, 8 pixels a block": Case(kind="depthwise", in_c=8, in_hw=(7, 21), out_c=8, **_HWC),
    "depthwise 16 channels into a padded plane": Case(kind="depthwise", in_c=16, in_hw=(6, 11), out_c=16,
                                                      out_border=1, in_border=2, **_HWC),
    "depthwise 24 channels, int32": Case(kind="depthwise", in_c=24, in_hw=(5, 8), out_c=24, mode="int32", **_HWC),
    "depthwise 32 channels + add": Case(kind="depthwise", in_c=32, in_hw=(5, 9), out_c=32, mode="add", **_HWC),
    "depthwise 2 channels, rows of 45": Case(kind="depthwise", in_c=2, in_hw=(4, 47), out_c=2, relu=False, **_HWC),
    # Stride 2 in pixel blocks (AVX-512 VBMI: every other pixel's channels picked from two loads).
    "depthwise 16 channels stride 2": Case(kind="depthwise", in_c=16, in_hw=(13, 17), out_c=16, stride=(2, 2),
                                           **_HWC),
    "depthwise 8 channels stride 2, padded planes": Case(kind="depthwise", in_c=8, in_hw=(11, 23), out_c=8,
                                                         stride=(2, 2), in_border=1, out_border=1, **_HWC),
    "depthwise 24 channels stride 2 + add": Case(kind="depthwise", in_c=24, in_hw=(9, 14), out_c=24,
                                                 stride=(2, 2), mode="add", **_HWC),
    "depthwise one channel stride 2, rows of 70": Case(kind="depthwise", in_c=1, in_hw=(5, 141), out_c=1,
                                                       stride=(2, 2), **_HWC),
    "depthwise 3 channels stride (1, 2), int32": Case(kind="depthwise", in_c=3, in_hw=(6, 50), out_c=3,
                                                      stride=(1, 2), mode="int32", **_HWC),
    "depthwise 5 channels stride 2, 5x5": Case(kind="depthwise", in_c=5, in_hw=(12, 31), out_c=5, kernel=(5, 5),
                                               stride=(2, 2), in_zp=127, **_HWC),
    "depthwise 3 channels + add of int32 accumulators": Case(kind="depthwise", in_c=3, in_hw=(6, 30), out_c=3,
                                                             mode="add_accumulators", **_HWC),
    "depthwise one channel": Case(kind="depthwise", in_c=1, in_hw=(6, 7), out_c=1, **_HWC),
    "depthwise 5x5": Case(kind="depthwise", in_c=4, in_hw=(11, 13), out_c=4, kernel=(5, 5), **_HWC),
    "depthwise 7x7": Case(kind="depthwise", in_c=19, in_hw=(12, 30), out_c=19, kernel=(7, 7), in_border=1, **_HWC),
    "depthwise 1x9, dilation (1, 3)": Case(kind="depthwise", in_c=3, in_hw=(4, 40), out_c=3, kernel=(1, 9),
                                           dilation=(1, 3), **_HWC),
    "depthwise 3x3, dilation 6": Case(kind="depthwise", in_c=33, in_hw=(20, 30), out_c=33, dilation=(6, 6), **_HWC),
    "depthwise stride (2, 1)": Case(kind="depthwise", in_c=6, in_hw=(13, 9), out_c=6, stride=(2, 1), **_HWC),
    "depthwise stride 3": Case(kind="depthwise", in_c=17, in_hw=(13, 14), out_c=17, stride=(3, 3), **_HWC),
    "depthwise large biases": Case(kind="depthwise", in_c=24, in_hw=(6, 9), out_c=24, bias_bits=29,
                                   shifts=(-28, -20), **_HWC),
    "depthwise + add": Case(kind="depthwise", in_c=7, in_hw=(8, 8), out_c=7, mode="add", relu=False, **_HWC),
    "depthwise 48 channels + add": Case(kind="depthwise", in_c=48, in_hw=(5, 6), out_c=48, mode="add", **_HWC),
    "depthwise + add of int32 accumulators": Case(kind="depthwise", in_c=7, in_hw=(8, 8), out_c=7,
                                                  mode="add_accumulators", **_HWC),
    "depthwise left shifts": Case(kind="depthwise", in_c=6, in_hw=(5, 9), out_c=6, left_shift_channels=True,
                                  shifts=(-31, 3), relu=False, **_HWC),
    # Channel multipliers 2 and 4: output channel c reads input channel c // M (input bytes widened to M copies).
    "depthwise multiplier 2, 8 -> 16 channels (pixel blocks)": Case(kind="depthwise", in_c=8, in_hw=(9, 23),
                                                                   out_c=16, multiplier=2, **_HWC),
    "depthwise multiplier 2, 16 -> 32, stride 2, padded plane": Case(kind="depthwise", in_c=16, in_hw=(13, 17),
                                                                    out_c=32, multiplier=2, stride=(2, 2),
                                                                    in_border=1, out_border=1, **_HWC),
    "depthwise multiplier 2, 40 -> 80 (two blocks) + add": Case(kind="depthwise", in_c=40, in_hw=(6, 9), out_c=80,
                                                               multiplier=2, mode="add", relu=False, **_HWC),
    "depthwise multiplier 4, 3 -> 12, int32": Case(kind="depthwise", in_c=3, in_hw=(7, 30), out_c=12, multiplier=4,
                                                  mode="int32", **_HWC),
    "depthwise multiplier 4, 36 -> 144, dilation 2": Case(kind="depthwise", in_c=36, in_hw=(9, 10), out_c=144,
                                                         multiplier=4, dilation=(2, 2), in_zp=127, **_HWC),
    "depthwise multiplier 4, one channel, 5x5": Case(kind="depthwise", in_c=1, in_hw=(9, 21), out_c=4, multiplier=4,
                                                    kernel=(5, 5), **_HWC),
    "depthwise multiplier 2, 5 -> 10 + add of int32 accumulators": Case(kind="depthwise", in_c=5, in_hw=(7, 19),
                                                                       out_c=10, multiplier=2,
                                                                       mode="add_accumulators", **_HWC),
}

LANES = KernelChoice(weights="lanes")

# Channel-last layers that read their input padding, with lane-ordered
# weights: the x86 lane kernels run them from channel-last strips of padded
# input (s8_padded_x86.c; a convolution's strip holds every value XOR 0x80,
# pad values included), the portable build's lane kernels read the
# padding tap by tap. Every side alone, asymmetric pads, strides, dilations,
# pad values other than the zero point (TFLite's zero point folded into the
# bias) and at both ends of int8, every output mode, the 8-channel pixel
# pairs and the depthwise pixel blocks of fewer than 32 channels, channel
# multipliers, one-row (1-D) layers, every count of channel vectors, the
# pixels near a strip's end read from a copy, and layers larger than a strip
# (bands of rows, runs of columns).
PADDED_LANE_CASES = {
    "3x3 SAME": Case(in_c=8, in_hw=(6, 7), out_c=16, padding=(1, 1, 1, 1), pad_value=-5, **_HWC),
    "top only": Case(in_c=4, in_hw=(5, 6), out_c=6, padding=(2, 0, 0, 0), pad_value=-5, **_HWC),
    "bottom only": Case(in_c=4, in_hw=(5, 6), out_c=6, padding=(0, 2, 0, 0), pad_value=-5, **_HWC),
    "left only": Case(in_c=4, in_hw=(5, 6), out_c=6, padding=(0, 0, 2, 0), pad_value=-5, **_HWC),
    "right only, zero point in the bias": Case(in_c=4, in_hw=(5, 6), out_c=6, padding=(0, 0, 0, 3), in_zp=0,
                                               pad_value=77, **_HWC),
    "stride 2, bottom and right (SAME on even sizes)": Case(in_c=3, in_hw=(16, 16), out_c=16, stride=(2, 2),
                                                            padding=(0, 1, 0, 1), in_zp=-128, pad_value=-128,
                                                            **_HWC),
    "stride 2, every side different": Case(in_c=5, in_hw=(9, 11), out_c=20, stride=(2, 2), padding=(1, 2, 3, 0),
                                           pad_value=-5, **_HWC),
    "dilation 2 (a tap's channels per segment)": Case(in_c=8, in_hw=(7, 9), out_c=5, dilation=(2, 2),
                                                      padding=(2, 2, 2, 2), pad_value=-5, **_HWC),
    "10x4 stride 2 (kws's first layer)": Case(in_c=1, in_hw=(49, 10), out_c=64, kernel=(10, 4), stride=(2, 2),
                                              padding=(4, 5, 1, 1), in_zp=0, pad_value=83, **_HWC),
    "padding wider than the input": Case(in_c=2, in_hw=(2, 3), out_c=3, padding=(3, 3, 4, 4), pad_value=-5,
                                         **_HWC),
    "window of a larger tensor into a padded plane": Case(in_c=4, in_hw=(6, 6), out_c=4, in_border=2, out_border=1,
                                                          padding=(1, 1, 1, 1), pad_value=-5, **_HWC),
    "int32 out": Case(in_c=8, in_hw=(5, 5), out_c=8, mode="int32", padding=(1, 1, 1, 1), in_zp=0, pad_value=9,
                      **_HWC),
    "8 channels (pixel pairs) + add": Case(in_c=8, in_hw=(6, 7), out_c=8, mode="add", relu=False,
                                           padding=(1, 1, 1, 1), pad_value=-5, **_HWC),
    "16 channels + add of int32 accumulators": Case(in_c=16, in_hw=(8, 8), out_c=16, mode="add_accumulators",
                                                    padding=(1, 1, 1, 1), pad_value=-5, **_HWC),
    "3x3 32->24 in bands of rows": Case(in_c=32, in_hw=(45, 37), out_c=24, padding=(1, 1, 1, 1), in_zp=0,
                                        pad_value=-128, **_HWC),
    "3x3 512->16, single rows in runs of columns": Case(in_c=512, in_hw=(4, 40), out_c=16, padding=(1, 1, 1, 1),
                                                        pad_value=-5, **_HWC),
    "1-D 3 taps 64->64 (conv1d_kws), pad value 127": Case(in_c=64, in_hw=(1, 98), out_c=64, kernel=(1, 3),
                                                          padding=(0, 0, 1, 1), in_zp=127, pad_value=127, **_HWC),
    "1-D 3 taps 40->64, pad value -128, zero point 127": Case(in_c=40, in_hw=(1, 37), out_c=64, kernel=(1, 3),
                                                              padding=(0, 0, 1, 1), in_zp=127, pad_value=-128,
                                                              **_HWC),
    "1-D 5 taps 16->48 + add, stride 2": Case(in_c=16, in_hw=(1, 41), out_c=48, kernel=(1, 5), stride=(1, 2),
                                              padding=(0, 0, 2, 2), mode="add", relu=False, pad_value=-5, **_HWC),
    "3x3 16->16 + add (resnet8's)": Case(in_c=16, in_hw=(12, 13), out_c=16, mode="add", padding=(1, 1, 1, 1),
                                         in_zp=-128, pad_value=-128, **_HWC),
    "3x3 3->64, segments of 9 (near the end from a copy)": Case(in_c=3, in_hw=(9, 11), out_c=64,
                                                               padding=(1, 1, 1, 1), in_zp=127, pad_value=127,
                                                               **_HWC),
    "3x3 8->72 (five channel vectors), int32": Case(in_c=8, in_hw=(7, 8), out_c=72, mode="int32",
                                                    padding=(1, 1, 1, 1), in_zp=0, pad_value=127, **_HWC),
    "8 channels (pixel pairs), pad value 127": Case(in_c=6, in_hw=(7, 9), out_c=8, padding=(1, 1, 1, 1), in_zp=127,
                                                    pad_value=127, **_HWC),
    "window of a larger tensor, pad value 127": Case(in_c=12, in_hw=(6, 7), out_c=24, in_border=1,
                                                    padding=(1, 1, 1, 1), in_zp=-128, pad_value=127,
                                                    **_HWC),
    "depthwise 3x3 SAME, 64 channels": Case(kind="depthwise", in_c=64, in_hw=(25, 5), out_c=64,
                                            padding=(1, 1, 1, 1), in_zp=0, pad_value=-128, **_HWC),
    "depthwise 8 channels (pixel blocks), every side different": Case(
        kind="depthwise", in_c=8, in_hw=(7, 21), out_c=8, padding=(2, 0, 1, 3), pad_value=-5, **_HWC),
    "depthwise 16 channels stride 2 (pixel blocks), bottom and right": Case(
        kind="depthwise", in_c=16, in_hw=(14, 18), out_c=16, stride=(2, 2), padding=(0, 1, 0, 1), pad_value=-5,
        **_HWC),
    "depthwise 96 channels stride 2 + add": Case(kind="depthwise", in_c=96, in_hw=(11, 13), out_c=96,
                                                 stride=(2, 2), padding=(1, 1, 1, 1), mode="add", pad_value=-5,
                                                 **_HWC),
    "depthwise 5x5 dilation 2, int32": Case(kind="depthwise", in_c=5, in_hw=(9, 11), out_c=5, kernel=(5, 5),
                                            dilation=(2, 2), padding=(4, 4, 4, 4), mode="int32", in_zp=0,
                                            pad_value=3, **_HWC),
    "depthwise multiplier 2": Case(kind="depthwise", in_c=8, in_hw=(6, 9), out_c=16, multiplier=2,
                                   padding=(1, 1, 1, 1), pad_value=-5, **_HWC),
    "depthwise multiplier 4 + add of int32 accumulators": Case(
        kind="depthwise", in_c=9, in_hw=(6, 7), out_c=36, multiplier=4, padding=(1, 1, 1, 1),
        mode="add_accumulators", pad_value=-5, **_HWC),
    "depthwise 144 channels in bands of rows": Case(kind="depthwise", in_c=144, in_hw=(56, 20), out_c=144,
                                                    padding=(1, 1, 1, 1), in_zp=0, pad_value=-128, **_HWC),
    "depthwise 960 channels in runs of columns": Case(kind="depthwise", in_c=960, in_hw=(3, 24), out_c=960,
                                                      padding=(1, 1, 1, 1), in_zp=0, pad_value=-128, **_HWC),
}


@pytest.mark.parametrize("name", list(PADDED_LANE_CASES))
def test_padded_channel_last_lanes_equal_tflite_arithmetic(build, name, rng):
    run_case(build, PADDED_LANE_CASES[name], rng, choice=LANES)


@pytest.mark.parametrize("name", list(LANE_CASES))
def test_channel_last_lanes_equal_tflite_arithmetic(build, name, rng):
    run_case(build, LANE_CASES[name], rng, choice=LANES)


def test_channel_last_lanes_extreme_multipliers(build, rng):
    """Multipliers of INT32_MIN and negative ones, lane by lane, still give
    TFLite's arithmetic."""
    case = Case(in_c=4, in_hw=(4, 20), out_c=20, kernel=(1, 1), relu=False, **_HWC)
    run_case(build, case, rng, lambda m: [(-(2**31), m[0][1]), (-m[1][0], m[1][1])] + m[2:], choice=LANES)
    depthwise = Case(kind="depthwise", in_c=18, in_hw=(5, 9), out_c=18, relu=False, **_HWC)
    run_case(build, depthwise, rng, lambda m: [(-m[0][0], m[0][1])] + m[1:], choice=LANES)


# The lane convolution's row-taps form (NPUKIT_S8_CONV_ROWS; kernel_choice.rows_fit):
# 1 to 16 output channels, kernel rows of 2 to 5 taps at stride and dilation 1
# along the row, input channels a multiple of four in dense columns; any
# stride, dilation and padding in height; rows of 16, 8, 4, 2 and 1 pixel
# blocks (31 columns take each once); every output mode, windows of larger
# tensors, flipped strips (padded) and inputs read in place (unpadded).
ROWS = KernelChoice(weights="lanes", conv_form="rows")
ROWS_CASES = {
    "3x3 16->16 SAME (resnet8's), 33 columns": Case(in_c=16, in_hw=(6, 33), out_c=16, padding=(1, 1, 1, 1),
                                                   in_zp=-128, pad_value=-128, **_HWC),
    "3x3 8->12 stride 2 in height, 31 columns": Case(in_c=8, in_hw=(9, 31), out_c=12, stride=(2, 1),
                                                    padding=(1, 1, 1, 1), pad_value=-5, **_HWC),
    "3x3 4->16 dilation 2 in height, unpadded": Case(in_c=4, in_hw=(9, 23), out_c=16, dilation=(2, 1), **_HWC),
    "5x5 12->5 SAME, int32": Case(in_c=12, in_hw=(6, 10), out_c=5, kernel=(5, 5), padding=(2, 2, 2, 2),
                                  mode="int32", in_zp=0, pad_value=3, **_HWC),
    "2x2 16->1 unpadded, in zp 127": Case(in_c=16, in_hw=(5, 19), out_c=1, kernel=(2, 2), in_zp=127, **_HWC),
    "3x4 20->16 SAME, left shifts": Case(in_c=20, in_hw=(6, 14), out_c=16, kernel=(3, 4), padding=(1, 1, 1, 2),
                                         left_shift_channels=True, pad_value=127, **_HWC),
    "3x3 8->8": Case(in_c=8, in_hw=(8, 17), out_c=8, padding=(1, 1, 1, 1), in_zp=-128, pad_value=-128, **_HWC),
    "1x3 32->9 unpadded": Case(in_c=32, in_hw=(4, 9), out_c=9, kernel=(1, 3), relu=False, **_HWC),
    "3x3 16->16 + add (resnet8's)": Case(in_c=16, in_hw=(7, 18), out_c=16, mode="add", relu=False,
                                         padding=(1, 1, 1, 1), in_zp=-128, pad_value=-128, **_HWC),
    "3x3 8->13 + add of int32 accumulators": Case(in_c=8, in_hw=(5, 21), out_c=13, mode="add_accumulators",
                                                  padding=(1, 1, 1, 1), pad_value=-5, **_HWC),
    "window of a larger tensor into a padded plane": Case(in_c=12, in_hw=(6, 7), out_c=10, in_border=1,
                                                         out_border=1, padding=(1, 1, 1, 1), pad_value=127,
                                                         **_HWC),
    "unpadded window of a larger tensor + add": Case(in_c=8, in_hw=(5, 20), out_c=16, in_border=2, mode="add",
                                                     relu=False, **_HWC),
}


@pytest.mark.parametrize("name", list(ROWS_CASES))
def test_row_taps_form_equals_tflite_arithmetic(build, name, rng):
    run_case(build, ROWS_CASES[name], rng, choice=ROWS)


@pytest.mark.parametrize("scales", ["random", "ties"])
def test_row_taps_form_float_output_stage(build, scales, rng):
    case = Case(in_c=16, in_hw=(5, 18), out_c=16, padding=(1, 1, 1, 1), float_stage=scales, **_HWC)
    run_case(build, case, rng, choice=ROWS)
    run_case(build, replace(case, mode="add", relu=False), rng, choice=ROWS)


# The float output stage of ONNX QDQ layers (layer_recognition.float_parameters):
# every kernel form with its outputs in binary32, bit for bit as the graph's
# DequantizeLinear -> layer -> QuantizeLinear rounds them.
FLOAT_CASES = {
    "3x3 16->16 on a padded plane": Case(in_c=16, in_hw=(18, 18), out_c=16),
    "3x3 3->16 (K = 27), no relu": Case(in_c=3, in_hw=(12, 12), out_c=16, relu=False),
    "3x3 16->32 stride 2": Case(in_c=16, in_hw=(17, 17), out_c=32, stride=(2, 2)),
    "3x3 16->16 + add": Case(in_c=16, in_hw=(10, 34), out_c=16, mode="add", relu=False),
    "3x3 + add with a ReLU": Case(in_c=8, in_hw=(6, 21), out_c=8, mode="add", relu=False, add_act=(-2, 127)),
    "1x1 64->64 at 25x5 into a padded plane": Case(in_c=64, in_hw=(25, 5), out_c=64, kernel=(1, 1), out_border=1),
    "odd channels, 7x5 pixels, K = 45": Case(in_c=5, in_hw=(9, 7), out_c=7, in_border=2),
    "bounded like ReLU6": Case(in_c=8, in_hw=(7, 9), out_c=8, float_upper=2.5),
    "channel-last in and out": Case(in_c=12, in_hw=(7, 9), out_c=10, in_layout="HWC", out_layout="HWC"),
    "fully connected 64->12": Case(kind="fully_connected", in_c=64, out_c=12, relu=False),
    "fully connected 1000->3": Case(kind="fully_connected", in_c=1000, out_c=3),
    "depthwise 3x3 64 channels, 25x5": Case(kind="depthwise", in_c=64, in_hw=(27, 7), out_c=64, in_zp=-128),
    "depthwise stride 2, no relu": Case(kind="depthwise", in_c=6, in_hw=(13, 9), out_c=6, stride=(2, 2),
                                        relu=False),
    "depthwise channel-last": Case(kind="depthwise", in_c=8, in_hw=(6, 6), out_c=8, in_layout="HWC",
                                   out_layout="HWC"),
    "depthwise + add": Case(kind="depthwise", in_c=7, in_hw=(8, 8), out_c=7, mode="add", relu=False),
}


@pytest.mark.parametrize("scales", ["random", "ties"])
@pytest.mark.parametrize("name", list(FLOAT_CASES))
def test_float_output_stage_equals_the_graphs_float_arithmetic(build, name, scales, rng):
    run_case(build, replace(FLOAT_CASES[name], float_stage=scales), rng)


@pytest.mark.parametrize("name", list(FLOAT_CASES))
def test_compact_blocks_with_a_float_output_stage(build, name, rng):
    if build[0] != "portable":
        pytest.skip("the boards' kernels are the portable ones")
    run_case(build, replace(FLOAT_CASES[name], float_stage="ties"), rng, choice=BOARD_BLOCK, compact=True)


@pytest.mark.parametrize("name", ["channel-last in and out", "depthwise channel-last"])
def test_float_output_stage_on_channel_last_lanes(build, name, rng):
    for scales in ("random", "ties"):
        run_case(build, replace(FLOAT_CASES[name], float_stage=scales), rng, choice=LANES)


def test_float_output_stage_refuses_what_it_does_not_reproduce():
    """An average pool or an ADD of another layer's accumulators in float is
    left to IREE's code, with the reason; so is a float epilogue whose
    parameters were not read."""
    from npukit.cpu.layer_kernels import KernelUnsupported, float_output_supported

    ifm = _layout(0, 0, (4, 5, 5), "CHW", 0)
    ofm = _layout(1, 0, (4, 3, 3), "CHW", 0)
    spec = LayerSpec("conv", ifm, ofm, (4, 5, 5), (4, 3, 3), (3, 3), (1, 1), (1, 1), np.zeros((4, 3, 3, 4), np.int8),
                     np.zeros(4, np.int32), [(1 << 30, -5)] * 4, 0, 0, -128, 127, False, float_epilogue=True,
                     float_unsupported="a float activation 'unknown'")
    with pytest.raises(KernelUnsupported, match="a float activation 'unknown'"):
        float_output_supported(spec)
    with pytest.raises(KernelUnsupported, match="average pool of requantized accumulators in float"):
        float_output_supported(replace(spec, kind="average"))
    residual = TensorLayout(replace(ofm.tensor, dtype="i32"), ofm.roles)
    add = ElementwiseAdd(residual, 0, 0, (1 << 30, 0), (1 << 30, 0), (1 << 30, 0), 0, -128, 127,
                         ResidualAccumulators(np.zeros(4, np.int32), [(1 << 30, -5)] * 4, -128, 127))
    with pytest.raises(KernelUnsupported, match="float addition of another layer's int32 accumulators"):
        float_output_supported(replace(spec, add=add))


def test_extreme_multipliers_fall_back_exactly(build, rng):
    """A multiplier of INT32_MIN (where the doubling product saturates) and
    negative ones still give TFLite's arithmetic."""
    case = Case(in_c=4, in_hw=(4, 20), out_c=4, kernel=(1, 1), relu=False)
    run_case(build, case, rng, lambda m: [(-(2**31), m[0][1]), (-m[1][0], m[1][1])] + m[2:])
    depthwise = Case(kind="depthwise", in_c=3, in_hw=(5, 9), out_c=3, relu=False)
    run_case(build, depthwise, rng, lambda m: [(-m[0][0], m[0][1])] + m[1:])


def test_archive_calls_nothing_outside_itself(build):
    """Linked into executables without a C library: every symbol the
    archive uses, it defines (no memcpy, memset, ...)."""
    _, archive, _ = build
    nm = subprocess.run(["nm", str(archive)], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in nm.splitlines() if line and not line.endswith(":")]
    undefined = {r[-1] for r in rows if r[0] == "U"}
    defined = {r[-1] for r in rows if len(r) == 3 and r[1] != "U"}
    assert undefined <= defined, undefined - defined


def _nm_symbols(nm: str, archive: Path) -> tuple[set[str], set[str]]:
    """(undefined, defined) symbols of an archive."""
    out = subprocess.run([nm, str(archive)], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in out.splitlines() if line and not line.endswith(":")]
    return {r[-1] for r in rows if r[0] == "U"}, {r[-1] for r in rows if len(r) == 3 and r[1] != "U"}


@pytest.mark.parametrize("preset", [p.name for p in cross_presets()])
def test_board_archive_calls_only_the_compiler_runtime(preset):
    """The boards' kernel archives, linked into embedded ELFs with npukit's
    builtins and libgcc only (no C library): every symbol they use is
    defined by one of the three (a struct copy that became a memcpy call
    made an embedded link fail)."""
    from npukit.cpu.archive_build import gcc_for
    from npukit.cpu.builtins_archive import builtins_archive, libgcc_path
    from npukit.targets.cpu_presets import get_preset

    target = get_preset(preset)
    gcc = str(gcc_for(target))
    nm = gcc[: gcc.rfind("gcc")] + "nm" + gcc[gcc.rfind("gcc") + 3:]  # the same toolchain's nm
    undefined, defined = _nm_symbols(nm, kernel_library(target))
    for library in (builtins_archive(target), libgcc_path(target)):
        defined |= _nm_symbols(nm, library)[1]
    assert undefined <= defined, undefined - defined


def test_each_build_has_its_instructions(build):
    """The vector kernels are what the build's instruction set selects."""
    name, archive, _ = build
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(archive)], capture_output=True, text=True,
                          check=True).stdout
    if name.startswith("avx512"):
        assert "vpdpbusd" in text and "zmm" in text
        assert ("vpexpandb" in text) == (name == "avx512-vbmi2")
        assert ("npukit_s8_depthwise_vbmi" in text and "vpermb" in text) == (name == "avx512-vbmi2")
    elif name == "avx2":
        assert "vpmaddwd" in text and "ymm" in text and "zmm" not in text and "vpdpbusd" not in text
    else:
        assert "ymm" not in text and "npukit_s8_conv_x86" not in text


def test_stack_use_stays_under_64_kib(build, tmp_path):
    """Per call at most 64 KiB of stack: the entry point's frame plus, per
    kernel source, the frames of all its functions (a bound on any call
    chain, none of them recursing), from GCC's -fstack-usage with the
    archive's flags."""
    from npukit.cpu.layer_kernels import K_CHUNK, KERNELS_DIR, SOURCES, _FREESTANDING
    from npukit.runtime.sources import runtime_source_root

    name, _, _ = build
    flags = BUILDS[name][0]
    mynpu = runtime_source_root() / "hal_driver" / "src" / "mynpu"
    frames: dict[str, int] = {}
    for source in (s for s in SOURCES if s.endswith(".c")):  # the .S is Arm DSP code, empty here
        obj = tmp_path / (source + ".o")
        subprocess.run(["gcc", "-O3", *flags, "-fcf-protection=none", *_FREESTANDING, f"-I{KERNELS_DIR}", f"-I{mynpu}",
                        "-fstack-usage", "-c", str(KERNELS_DIR / source), "-o", str(obj)], check=True)
        rows = [row.split("\t") for row in obj.with_suffix(".su").read_text().splitlines()]
        # An unbounded dynamic frame (the convolution's im2col columns, sized to the layer up to a chunk of
        # the reduction) adds at most 2 * 2 * K_CHUNK + K_CHUNK bytes; "dynamic,bounded" sizes are bounds already.
        frames[source] = sum(int(size) + (5 * K_CHUNK if kind == "dynamic" else 0) for _, size, kind in rows)
    entry = frames.pop("s8_layer.c")
    assert entry + max(frames.values()) <= 64 * 1024, frames


# Averages of requantized accumulators ----------------------------------------------


@dataclass
class AverageCase:
    channels: int = 64
    pixels: int = 125
    layout: str = "CHW"  # the accumulators as [C][N] (IREE's channel-first pool) or [N][C]
    add: bool = False  # an ADD of a second layer's accumulators before the average
    zp: int = -128  # the requantized values' zero point and activation range
    act: tuple[int, int] = (-128, 127)
    shifts: tuple[int, int] = (-12, -8)
    magnitude: int = 2**20  # accumulators drawn in +-magnitude
    add_multipliers: tuple = ((1518500250, -1), (1288490189, 0), (1431655765, -17))
    average_act: tuple[int, int] = (-128, 127)


def _accumulator_layout(binding: int, offset: int, case: AverageCase) -> TensorLayout:
    c, n = case.channels, case.pixels
    shape, roles = ((c, n), ("C", "W")) if case.layout == "CHW" else ((n, c), ("W", "C"))
    return TensorLayout(SystemTensor(binding, offset, shape, "i32", (0, 0), shape), roles)


def _stage(rng, case: AverageCase, acc: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]], np.ndarray]:
    """(bias, multipliers, int8 values [C][N]) of a drawn output stage."""
    bias = rng.integers(-(2**16), 2**16, case.channels).astype(np.int32)
    multipliers = [(int(rng.integers(2**30, 2**31)), int(rng.integers(case.shifts[0], case.shifts[1] + 1)))
                   for _ in range(case.channels)]
    values = _requantized(Case(), acc + bias.astype(np.int64)[:, None], multipliers, case.zp, case.act)
    return bias, multipliers, values


def run_average_case(build, case: AverageCase, rng) -> None:
    _, _, layer = build
    c, n = case.channels, case.pixels
    ifm = _accumulator_layout(0, 4, case)
    ofm = TensorLayout(SystemTensor(1, 3, (1, c), "i8", (0, 0), (1, c)), (None, "C"))
    limit = 2**31 - 2**17  # the bias stays inside int32 added to any of them
    acc = np.clip(rng.integers(-case.magnitude, case.magnitude + 1, (c, n)), -limit, limit)
    bias, multipliers, want = _stage(rng, case, acc)
    add, res_full = None, np.zeros(1, np.int32)
    if case.add:
        residual = _accumulator_layout(2, 8, case)
        res_acc = np.clip(rng.integers(-case.magnitude, case.magnitude + 1, (c, n)), -limit, limit)
        res_bias, res_multipliers, res_values = _stage(rng, replace(case, zp=-3), res_acc)
        add = ElementwiseAdd(residual=residual, residual_zp=-3, conv_zp=case.zp,
                             input_multiplier=case.add_multipliers[0], residual_multiplier=case.add_multipliers[1],
                             output_multiplier=case.add_multipliers[2], output_zp=-128, act_min=-128, act_max=127,
                             accumulators=ResidualAccumulators(res_bias, res_multipliers, *case.act))
        want = _add(want, res_values, add)
        res_full = res_acc.astype(np.int32) if case.layout == "CHW" else res_acc.T.astype(np.int32)
    average = AverageOutput(n, *case.average_act)
    expected = np.array([min(max(rounding_divide(int(s), n), average.act_min), average.act_max)
                         for s in want.sum(axis=1)], np.int8)
    spec = LayerSpec(kind="average", ifm=ifm, ofm=ofm, ifm_chw=(c, 1, n), ofm_chw=(c, 1, 1), kernel=(1, n),
                     stride=(1, 1), dilation=(1, 1), weights=np.zeros(0, np.int8), bias=bias,
                     multipliers=multipliers, ifm_zp=0, ofm_zp=case.zp, act_min=case.act[0], act_max=case.act[1],
                     relu=case.act[0] > -128, add=add, average=average)
    block = layer_block(spec)
    params = np.zeros(len(block) + 64, np.uint8)
    start = -params.ctypes.data % 64
    params[start: start + len(block)] = np.frombuffer(block, np.uint8)
    full = acc.astype(np.int32) if case.layout == "CHW" else acc.T.astype(np.int32)
    out = rng.integers(0, 256, 3 + c + 64, dtype=np.uint8)
    before = out.copy()
    with guarded(bytes(4) + full.tobytes()) as in_at, guarded(bytes(8) + res_full.tobytes()) as res_at:
        layer(params.ctypes.data + start, in_at, out.ctypes.data, res_at)
    np.testing.assert_array_equal(out[3: 3 + c].view(np.int8), expected)
    np.testing.assert_array_equal(out[:3], before[:3])
    np.testing.assert_array_equal(out[3 + c:], before[3 + c:])


AVERAGE_CASES = {
    "kws: 64 channels of 125, ReLU at zero point -128": AverageCase(),
    "resnet8: 64 channels of 64 + add": AverageCase(pixels=64, add=True, zp=38),
    "channel-last, ReLU at zero point 3, odd count": AverageCase(channels=5, pixels=7, layout="HWC", zp=3,
                                                                act=(3, 127)),
    "accumulators near the int32 limits (saturated doubling)": AverageCase(channels=6, pixels=40,
                                                                          magnitude=2**31, shifts=(-20, -1)),
    "right shifts beyond 20 and left shifts (general arithmetic)": AverageCase(channels=6, pixels=9,
                                                                              magnitude=2**31, shifts=(-31, 2)),
    "add over more pixels than a pass, clamped average": AverageCase(channels=3, pixels=150, add=True, zp=-5,
                                                                     act=(-5, 100), average_act=(-50, 60)),
    "add whose operands keep their multipliers' low bits": AverageCase(
        channels=8, pixels=64, add=True, zp=-5, add_multipliers=((3499, -2), (2381, -3), (1600000000, 0))),
    "add on the general arithmetic (output shift 0), huge accumulators": AverageCase(
        channels=4, pixels=33, add=True, magnitude=2**31, shifts=(-24, 1),
        add_multipliers=((1518500250, -25), (1288490189, -25), (1431655765, 0))),
}


@pytest.mark.parametrize("name", list(AVERAGE_CASES))
def test_average_of_accumulators_equals_tflite_arithmetic(build, name, rng):
    run_average_case(build, AVERAGE_CASES[name], rng)


# Elementwise products (kind "mul", s8_mul.c) ----------------------------------


@dataclass
class ProductCase:
    rows: int = 64
    channels: int = 16
    form: str = "rows"  # the second tensor: "none" (every element's), "rows" (a vector of the channels), "all"
    factors: str = "tflite"  # "tflite": x - zx and y - zy; "gate": y through a table (a fused LOGISTIC); "tables":
    # x's and y's each any 256 consecutive values (int8 tables plus constants); "x table": x's so, y - zy;
    # "x steps": x's rising by steps of at most 15 (stored as 4-bit steps), y - zy; "both steps": x's so, y's a
    # gate (x's then stored whole: one factor's steps at most)
    multiplier: int = 1090288896
    shift: int = -6
    zp: int = -33
    act: tuple[int, int] = (-128, 127)


def _product_layout(binding: int, offset: int, rows: int, channels: int, form: str) -> TensorLayout:
    if form == "none":
        return TensorLayout(SystemTensor(binding, offset, (rows, channels), "i8", (0, 0), (rows, channels)), ("W", "C"))
    if form == "rows":
        return TensorLayout(SystemTensor(binding, offset, (channels,), "i8", (0,), (channels,)), ("C",))
    return TensorLayout(SystemTensor(binding, offset, (1,), "i8", (0,), (1,)), (None,))


def run_product_case(build, case: ProductCase, rng) -> None:
    from npukit.layer_recognition.elementwise_product import factor_bytes
    from npukit.quantization.fixed_point_reference import multiply_by_quantized_multiplier_array

    _, _, layer = build
    values = np.arange(-128, 128)
    fx = values - int(rng.integers(-128, 128))
    fy = values - int(rng.integers(-128, 128))
    if case.factors in ("gate", "tables", "both steps"):
        fy = np.sort(rng.integers(-128, 128, 256)) + 128  # a LOGISTIC's outputs less its zero point
    if case.factors in ("tables", "x table"):
        fx = rng.integers(-128, 128, 256) + int(rng.integers(-3000, 3000))  # any function of x within 256 values
    if case.factors in ("x steps", "both steps"):
        fx = np.cumsum(rng.integers(0, 2, 256)) - 77  # never falling, up to 255 above its first value
        fx[-1] = fx[-2] + 15 if fx[-2] + 15 - fx[0] <= 255 else fx[-2]  # a step of 15 if it fits
    r, c = case.rows, case.channels
    x = rng.integers(-128, 128, (r, c)).astype(np.int8)
    y_shape = {"none": (r, c), "rows": (c,), "all": (1,)}[case.form]
    y = rng.integers(-128, 128, y_shape).astype(np.int8)
    product = fx[x.astype(np.int64) + 128] * fy[np.broadcast_to(y, (r, c)).astype(np.int64) + 128]
    scaled = multiply_by_quantized_multiplier_array(product, case.multiplier, case.shift)
    want = np.clip(scaled + case.zp, *case.act).astype(np.int8)
    spec = LayerSpec(kind="mul", ifm=_product_layout(0, 3, r, c, "none"), ofm=_product_layout(1, 5, r, c, "none"),
                     ifm_chw=(c, 1, r), ofm_chw=(c, 1, r), kernel=(1, 1), stride=(1, 1), dilation=(1, 1),
                     weights=factor_bytes(fx, fy), bias=np.zeros(1, np.int32),
                     multipliers=[(case.multiplier, case.shift)], ifm_zp=0, ofm_zp=case.zp, act_min=case.act[0],
                     act_max=case.act[1], relu=False)
    spec.operand = _product_layout(2, 7, r, c, case.form)
    out = rng.integers(0, 256, 5 + r * c + 64, dtype=np.uint8)
    before = out.copy()
    with aligned(layer_block(spec)) as params, guarded(bytes(3) + x.tobytes()) as x_at, \
            guarded(bytes(7) + y.tobytes()) as y_at:
        layer.unweighted(params, x_at, out.ctypes.data, y_at)
    np.testing.assert_array_equal(out[5: 5 + r * c].view(np.int8).reshape(r, c), want)
    np.testing.assert_array_equal(out[:5], before[:5])
    np.testing.assert_array_equal(out[5 + r * c:], before[5 + r * c:])


PRODUCT_CASES = {
    "squeeze-and-excitation: 256 rows of 16 channels, a gate per channel": ProductCase(rows=256, factors="gate"),
    "a vector of 37 channels (tails of 8 and 16 lanes), ReLU": ProductCase(rows=9, channels=37, act=(-33, 127)),
    "one shape, 35 channels, ReLU6-like bounds": ProductCase(rows=5, channels=35, form="none", zp=4, act=(4, 90)),
    "one value broadcast over 48 channels": ProductCase(rows=7, channels=48, form="all", zp=0),
    "fewer channels than a vector": ProductCase(rows=11, channels=5, form="none"),
    "left shift (the general arithmetic)": ProductCase(rows=6, channels=24, multiplier=1342177280, shift=3, zp=2),
    "right shift of 31, multiplier near 2^31": ProductCase(rows=4, channels=33, multiplier=2**31 - 1, shift=-31),
    "any factor tables (gathered), right shift 20": ProductCase(rows=3, channels=40, form="none", factors="tables",
                                                         multiplier=1717986918, shift=-20),
    "x through a table, y broadcast over the rows (the table in the channel loop)": ProductCase(
        rows=20, channels=19, factors="x table", multiplier=1717986918, shift=-12),
    "x through a table, left shift": ProductCase(rows=4, channels=21, form="none", factors="x table",
                                                 multiplier=1342177280, shift=1),
    "x through a table of steps": ProductCase(rows=12, channels=23, form="none", factors="x steps"),
    "x and y through tables of steps": ProductCase(rows=10, channels=17, factors="both steps"),
}


# int8 pools and means (kinds "average_pool", "max_pool", "mean", s8_pool.c) ----


@dataclass
class PoolCase:
    kind: str = "average_pool"
    channels: int = 8
    size: tuple[int, int] = (6, 6)
    kernel: tuple[int, int] = (2, 2)
    stride: tuple[int, int] = (2, 2)
    act: tuple[int, int] = (-128, 127)
    layout: str = "HWC"  # "CHW": channels apart (the kernels' any-stride path)
    fill: int | None = None  # every input value, else random
    mean: tuple[int, int, int, int] = (0, 0, 0, 0)  # a mean's bias, multiplier, shift and output zero point


def run_pool_case(build, case: PoolCase, rng) -> None:
    from npukit.layer_recognition.int8_pool import mean_output, rounded_average

    _, _, layer = build
    c, (h, w), (kh, kw), (sy, sx) = case.channels, case.size, case.kernel, case.stride
    x = np.full((h, w, c), case.fill, np.int8) if case.fill is not None else \
        rng.integers(-128, 128, (h, w, c)).astype(np.int8)
    oh, ow = (h - kh) // sy + 1, (w - kw) // sx + 1
    windows = np.stack([x[y * sy: y * sy + kh, z * sx: z * sx + kw].reshape(kh * kw, c).astype(np.int64)
                        for y in range(oh) for z in range(ow)])
    bias, multiplier, shift, zero_point = case.mean
    pooled = {"average_pool": lambda: rounded_average(windows.sum(1), kh * kw), "max_pool": lambda: windows.max(1),
              "mean": lambda: mean_output(windows.sum(1), bias, multiplier, shift, zero_point, *case.act)}[case.kind]()
    want = np.clip(pooled, *case.act).astype(np.int8).reshape(oh, ow, c)
    order, roles = ((2, 0, 1), ("C", "H", "W")) if case.layout == "CHW" else ((0, 1, 2), ("H", "W", "C"))
    x_stored, want_stored = x.transpose(order), want.transpose(order)

    def layout(binding: int, offset: int, shape) -> TensorLayout:
        return TensorLayout(SystemTensor(binding, offset, tuple(shape), "i8", (0,) * 3, tuple(shape)), roles)

    spec = LayerSpec(kind=case.kind, ifm=layout(0, 3, x_stored.shape), ofm=layout(1, 5, want_stored.shape),
                     ifm_chw=(c, h, w), ofm_chw=(c, oh, ow), kernel=case.kernel, stride=case.stride,
                     dilation=(1, 1), weights=np.zeros(0, np.int8),
                     bias=np.full(c, bias, np.int32) if case.kind == "mean" else np.zeros(0, np.int32),
                     multipliers=[(multiplier, shift)] * c if case.kind == "mean" else None,
                     ifm_zp=0, ofm_zp=zero_point, act_min=case.act[0], act_max=case.act[1], relu=False)
    n = want.size
    out = rng.integers(0, 256, 5 + n + 64, dtype=np.uint8)
    before = out.copy()
    with aligned(layer_block(spec)) as params, guarded(bytes(3) + x_stored.tobytes()) as x_at:
        layer.unweighted(params, x_at, out.ctypes.data, 0)
    np.testing.assert_array_equal(out[5: 5 + n].view(np.int8).reshape(want_stored.shape), want_stored)
    np.testing.assert_array_equal(out[:5], before[:5])
    np.testing.assert_array_equal(out[5 + n:], before[5 + n:])


POOL_CASES = {
    "average 2x2 stride 2, 24 channels (the unrolled form)": PoolCase(channels=24, size=(8, 10)),
    "average 3x3 stride 1, 5 channels (a count of 9)": PoolCase(channels=5, size=(7, 9), kernel=(3, 3),
                                                                stride=(1, 1)),
    "average 16x16 of -128 (a sum of -32768, the lanes' least)": PoolCase(size=(16, 16), kernel=(16, 16),
                                                                         fill=-128),
    "average 16x16 of 127": PoolCase(channels=12, size=(16, 17), kernel=(16, 16), stride=(1, 1), fill=127),
    "average 2x2 of -1 (negative halves round away from zero)": PoolCase(fill=-1, size=(4, 4)),
    "average 2x3, ReLU6-like bounds, 70 channels (two blocks)": PoolCase(channels=70, size=(6, 9), kernel=(2, 3),
                                                                         stride=(2, 3), act=(-20, 90)),
    "average 2x2, channels apart": PoolCase(channels=6, size=(6, 8), layout="CHW"),
    "max 2x2 stride 2": PoolCase(kind="max_pool", channels=16, size=(8, 8)),
    "max 3x3 stride 2, 7 channels, ReLU": PoolCase(kind="max_pool", channels=7, size=(9, 9), kernel=(3, 3),
                                                   act=(-10, 127)),
    "max 2x2 of -128": PoolCase(kind="max_pool", fill=-128),
    "max 3x2, channels apart, both bounds": PoolCase(kind="max_pool", channels=5, size=(9, 8), kernel=(3, 2),
                                                     stride=(3, 2), layout="CHW", act=(-50, 50)),
    "mean 16x16 of -128, a right shift": PoolCase(kind="mean", channels=16, size=(16, 16), kernel=(16, 16),
                                                  fill=-128, mean=(128 * 256, 1288490189, -9, -5)),
    "mean 16x16 of 127": PoolCase(kind="mean", channels=12, size=(16, 16), kernel=(16, 16), fill=127,
                                  mean=(-3 * 256, 1717986918, -8, 0)),
    "mean 4x4, 37 channels, a left shift of 6": PoolCase(kind="mean", channels=37, size=(4, 4), kernel=(4, 4),
                                                         mean=(20 * 16, 1717986918, 6, 20)),
    "mean 7x3, channels apart, bounds": PoolCase(kind="mean", channels=9, size=(7, 3), kernel=(7, 3), layout="CHW",
                                                 act=(-100, 127), mean=(-3 * 21, 1518500250, -3, 127)),
    "mean 2x2 stride 2, 13 channels": PoolCase(kind="mean", channels=13, size=(6, 8), mean=(0, 1 << 30, -2, -7)),
    "mean 3x3, no shift": PoolCase(kind="mean", channels=8, size=(3, 3), kernel=(3, 3), mean=(9, 1 << 30, 0, 3)),
    "mean 2x2, a left shift of 20": PoolCase(kind="mean", channels=5, size=(2, 2), mean=(0, 1518500250, 20, 0)),
    "mean 4x4, a bias of 2^29 and a left shift of 3 (saturating)": PoolCase(
        kind="mean", channels=5, size=(4, 4), kernel=(4, 4), mean=(1 << 29, 1 << 30, 3, -128)),
}


@pytest.mark.parametrize("name", list(POOL_CASES))
def test_pool_equals_tflite_arithmetic(build, name, rng):
    run_pool_case(build, POOL_CASES[name], rng)


# float32 to int8 quantization (kind "quantize", s8_quantize.c) ----------------


@pytest.mark.parametrize("scale,zero_point,low,high", [(0.02, -9, -128, 127), (1 / 128, 0, -128, 127),
                                                       (0.5, 3, -128, 127), (3e-3, -128, -128, 127),
                                                       (0.0157, 127, -128, 127), (0.1, 5, 5, 90)])
def test_quantize_equals_the_dispatch_formula_at_every_boundary(build, scale, zero_point, low, high):
    """The kernel against the recogniser's formula (float_quantize.quantized: the TFLite frontend's
    arithmetic) on the recogniser's probes: a few units in the last place either side of every half-integer
    multiple of the scale in the range, whole multiples, zeros, infinities, NaN and the edges of int32."""
    from npukit.layer_recognition.float_quantize import _probes, quantized
    from npukit.layer_recognition.table_lookup import flat

    _, _, layer = build
    x = _probes(scale, zero_point, low, high)
    n = len(x)
    want = quantized(x, scale, zero_point, low, high).astype(np.int8)
    assert (want == high).any() and (want == low).any() and len(np.unique(want)) > 3
    tensor = lambda binding, offset, dtype: SystemTensor(binding, offset, (n,), dtype, (0,), (n,))  # noqa: E731
    spec = LayerSpec(kind="quantize", ifm=flat(tensor(0, 4, "f32")), ofm=flat(tensor(1, 5, "i8")), ifm_chw=(1, 1, n),
                     ofm_chw=(1, 1, n), kernel=(1, 1), stride=(1, 1), dilation=(1, 1), weights=np.zeros(0, np.int8),
                     bias=np.zeros(0, np.int32), multipliers=None, ifm_zp=0, ofm_zp=zero_point, act_min=low,
                     act_max=high, relu=False)
    spec.float_scale = float(np.float32(scale))
    out = np.full(5 + n + 64, 0x5A, np.uint8)
    with aligned(layer_block(spec)) as params, guarded(bytes(4) + x.astype("<f4").tobytes()) as x_at:
        layer.unweighted(params, x_at, out.ctypes.data, 0)
    np.testing.assert_array_equal(out[5: 5 + n].view(np.int8), want)
    assert (out[:5] == 0x5A).all() and (out[5 + n:] == 0x5A).all()


def test_product_factors_kept_compact():
    """A factor that is the value plus a constant is kept as the constant alone, one that never falls by steps
    of at most 15 as 4-bit steps, any other within 256 consecutive values as an int8 table plus a constant, a
    wider one refused."""
    from npukit.layer_recognition.elementwise_product import factor_bytes

    values = np.arange(-128, 128)
    assert factor_bytes(values + 7, values - 3).tobytes() == np.array([7, -3, 0], "<i4").tobytes()
    gate = np.minimum(np.maximum(values * 3, -90), 140)  # steps of 0 and 3
    packed = factor_bytes(values + 7, gate)
    assert len(packed) == 12 + 128
    cx, cy, forms = packed[:12].view("<i4")
    steps = np.stack([packed[12:].view(np.uint8) & 15, packed[12:].view(np.uint8) >> 4], 1).ravel()[:255]
    assert (cx, forms) == (7, 1 << 2) and np.array_equal(cy - 128 + np.cumsum(np.append(0, steps)), gate)
    both = factor_bytes(gate, gate)  # one table of steps at most: y's
    assert len(both) == 12 + 256 + 128 and both[8] == 2 | 1 << 2
    falling = gate[::-1].copy()
    packed = factor_bytes(falling, values)
    assert len(packed) == 12 + 256 and packed[8] == 2
    assert np.array_equal(packed[12:].astype(np.int64) + packed[:4].view("<i4")[0], falling)
    with pytest.raises(NotSupported, match="spanning"):
        factor_bytes(values * 2, values)


@pytest.mark.parametrize("name", list(PRODUCT_CASES))
def test_product_equals_tflite_arithmetic(build, name, rng):
    run_product_case(build, PRODUCT_CASES[name], rng)
