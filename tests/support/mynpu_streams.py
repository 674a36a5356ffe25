"""Hand-written mynpu streams and executables for the tests: a real
quantized convolution with its TFLite parameters (tiled along output channels
to fit the SRAM), a stream using every instruction, and a small ReLU."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from npukit.layer_recognition.dispatch_ir import SystemTensor
from npukit.layer_recognition.layer_spec import TensorLayout
from npukit.mynpu.executable import Executable, Export
from npukit.mynpu.isa import CONSTANTS_BINDING, DMA_OVERHEAD_CYCLES, OP_OVERHEAD_CYCLES, CommandStream, \
    HardwareConfig, Op
from npukit.quantization.requantization import convolution_multipliers, quant_table

ALIGN = 16


@dataclass
class ConvLayer:
    """An int8 convolution as TFLite defines it (weights [OC][KH][KW][IC])."""

    input_shape: tuple[int, int, int]
    output_shape: tuple[int, int, int]
    weights: np.ndarray
    bias: np.ndarray
    multipliers: list[tuple[int, int]]
    input_zp: int
    output_zp: int
    stride: tuple[int, int]
    pad: tuple[int, int]  # top, left
    relu: bool

    @property
    def taps(self) -> int:
        return int(np.prod(self.weights.shape[1:]))


def _tflite_conv_ops(model: Path):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interpreter = Interpreter(str(model), experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                              experimental_preserve_all_tensors=True)
    interpreter.allocate_tensors()
    return interpreter, [op for op in interpreter._get_ops_details() if op["op_name"] == "CONV_2D"]


def tflite_first_conv(model: Path) -> tuple[ConvLayer, "callable"]:
    """The model's first CONV_2D (stride 2, SAME padding, fused ReLU in
    kws_int8) and a function giving TFLite's reference-kernel output of that
    layer for a model input."""
    interpreter, convs = _tflite_conv_ops(model)
    op = convs[0]
    details = {t["index"]: t for t in interpreter.get_tensor_details()}
    x_t, w_t, b_t = (details[i] for i in op["inputs"])
    y_t = details[op["outputs"][0]]
    _, ih, iw, ic = x_t["shape"]
    _, oh, ow, oc = y_t["shape"]
    weights = interpreter.get_tensor(w_t["index"])
    kh, kw = weights.shape[1:3]
    stride = (math.ceil(ih / oh), math.ceil(iw / ow))
    assert (math.ceil(ih / stride[0]), math.ceil(iw / stride[1])) == (oh, ow), "not a SAME-padded convolution"
    pad = tuple(int(max((o - 1) * s + k - i, 0) // 2) for o, s, k, i in zip((oh, ow), stride, (kh, kw), (ih, iw)))
    in_scale, in_zp = x_t["quantization_parameters"]["scales"][0], x_t["quantization_parameters"]["zero_points"][0]
    out_scale, out_zp = y_t["quantization_parameters"]["scales"][0], y_t["quantization_parameters"]["zero_points"][0]
    layer = ConvLayer(
        (int(ih), int(iw), int(ic)), (int(oh), int(ow), int(oc)), weights, interpreter.get_tensor(b_t["index"]),
        convolution_multipliers(in_scale, w_t["quantization_parameters"]["scales"], out_scale),
        int(in_zp), int(out_zp), stride, pad, relu="Relu" in y_t["name"],
    )
    input_index = interpreter.get_input_details()[0]["index"]

    def reference(x: np.ndarray) -> np.ndarray:
        interpreter.set_tensor(input_index, x.reshape(1, ih, iw, ic))
        interpreter.invoke()
        return interpreter.get_tensor(y_t["index"])[0]

    return layer, reference


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def tile_channels(layer: ConvLayer, sram_bytes: int) -> int:
    """The most output channels per tile (a power of two dividing OC) whose
    weights, biases, table and OFM fit in the SRAM beside the whole IFM."""
    oh, ow, oc = layer.output_shape
    ifm = _aligned(int(np.prod(layer.input_shape)))
    t = oc
    while t >= 1:
        if oc % t == 0 and ifm + _aligned(t * layer.taps) + _aligned(4 * t) + _aligned(8 * t) + oh * ow * t \
                <= sram_bytes:
            return t
        t //= 2
    raise ValueError(f"the layer does not fit in {sram_bytes} bytes of SRAM")


def conv_stream(layer: ConvLayer, config: HardwareConfig, double_buffered: bool = False) -> tuple[bytes, bytes, int]:
    """(stream, constants, channels per tile): binding 0 is the IFM, binding 1
    the OFM; each output-channel tile is one layer."""
    (ih, iw, ic), (oh, ow, oc) = layer.input_shape, layer.output_shape
    taps = layer.taps
    t = tile_channels(layer, config.sram_bytes)
    weights = np.ascontiguousarray(layer.weights, np.int8).tobytes()
    bias = np.ascontiguousarray(layer.bias, np.int32).tobytes()
    quant = quant_table(layer.multipliers)
    w_at, b_at, q_at = 0, _aligned(len(weights)), _aligned(len(weights)) + _aligned(len(bias))
    constants = weights.ljust(b_at, b"\0") + bias.ljust(q_at - b_at, b"\0") + quant
    ifm = 0
    wgt = _aligned(ih * iw * ic)
    bia = wgt + _aligned(t * taps)
    qnt = bia + _aligned(4 * t)
    ofm = qnt + _aligned(8 * t)
    s = CommandStream()
    s.layer()
    s.set(DMA_BINDING=0, DMA_OFFSET=0, DMA_SRAM_ADDR=ifm, DMA_LENGTH=ih * iw * ic, DMA_ROWS=1).op(Op.DMA_READ)
    s.set(IFM_ADDR=ifm, IFM_H=ih, IFM_W=iw, IFM_C=ic, OFM_ADDR=ofm, OFM_H=oh, OFM_W=ow, OFM_C=t,
          WEIGHT_ADDR=wgt, BIAS_ADDR=bia, QUANT_ADDR=qnt, KERNEL_H=layer.weights.shape[1],
          KERNEL_W=layer.weights.shape[2], STRIDE_H=layer.stride[0], STRIDE_W=layer.stride[1],
          PAD_TOP=layer.pad[0], PAD_LEFT=layer.pad[1], DILATION_H=1, DILATION_W=1, IFM_ZP=layer.input_zp,
          OFM_ZP=layer.output_zp, ACT_MIN=-128, ACT_MAX=127)
    for k in range(oc // t):
        s.layer(double_buffered)
        s.set(DMA_BINDING=CONSTANTS_BINDING, DMA_ROWS=1, DMA_SYS_STRIDE=0, DMA_SRAM_STRIDE=0)
        s.set(DMA_OFFSET=w_at + k * t * taps, DMA_SRAM_ADDR=wgt, DMA_LENGTH=t * taps).op(Op.DMA_READ)
        s.set(DMA_OFFSET=b_at + 4 * k * t, DMA_SRAM_ADDR=bia, DMA_LENGTH=4 * t).op(Op.DMA_READ)
        s.set(DMA_OFFSET=q_at + 8 * k * t, DMA_SRAM_ADDR=qnt, DMA_LENGTH=8 * t).op(Op.DMA_READ)
        s.op(Op.CONV_RELU if layer.relu else Op.CONV)
        s.set(DMA_BINDING=1, DMA_OFFSET=k * t, DMA_SRAM_ADDR=ofm, DMA_LENGTH=t, DMA_ROWS=oh * ow,
              DMA_SYS_STRIDE=oc, DMA_SRAM_STRIDE=t).op(Op.DMA_WRITE)
    return s.end().encode(), constants, t


def conv_executable(layer: ConvLayer, config: HardwareConfig, name: str = "conv",
                    double_buffered: bool = False) -> bytes:
    stream, constants, _ = conv_stream(layer, config, double_buffered)
    sizes = (int(np.prod(layer.input_shape)), int(np.prod(layer.output_shape)))
    return Executable(config, [Export(name, stream, sizes)], constants).to_bytes()


def expected_conv_cycles(layer: ConvLayer, config: HardwareConfig, tile: int, double_buffered: bool) -> int:
    """The cycle model of docs/mynpu-isa.md applied to conv_stream's layers."""
    (ih, iw, ic), (oh, ow, oc) = layer.input_shape, layer.output_shape
    kh, kw = layer.weights.shape[1:3]
    dma = lambda n: -(-n // config.dma_bytes_per_cycle) + DMA_OVERHEAD_CYCLES  # noqa: E731
    if config.parallelism == "input":
        compute = oh * ow * tile * kh * kw * -(-ic // config.pes)
    else:
        compute = oh * ow * kh * kw * ic * -(-tile // config.pes)
    compute += OP_OVERHEAD_CYCLES
    transfers = dma(tile * layer.taps) + dma(4 * tile) + dma(8 * tile) + dma(oh * ow * tile)
    per_tile = max(compute, transfers) if double_buffered else compute + transfers
    return dma(ih * iw * ic) + (oc // tile) * per_tile


def conv_macs(layer: ConvLayer) -> int:
    oh, ow, oc = layer.output_shape
    return oh * ow * oc * layer.taps


def pack_header_size(data: bytes) -> bytes:
    """|data| with the container header's total-size field set to its length."""
    return data[:8] + struct.pack("<I", len(data)) + data[12:]


def relu_stream(n: int = 64, zp: int = 5, short: bool = False) -> bytes:
    """max(x, zp) over n int8 values: binding 0 in, binding 1 out; 8-byte
    commands only (a version 1.0 stream) unless ``short``."""
    s = CommandStream(short=short).set(DMA_BINDING=0, DMA_LENGTH=n, DMA_SRAM_ADDR=0).op(Op.DMA_READ)
    s.set(IFM_ADDR=0, IFM_H=1, IFM_W=1, IFM_C=n, OFM_ADDR=n, OFM_H=1, OFM_W=1, OFM_C=n, IFM_ZP=zp, ACT_MIN=-128,
          ACT_MAX=127).op(Op.ACT_RELU)
    return s.set(DMA_BINDING=1, DMA_SRAM_ADDR=n).op(Op.DMA_WRITE).end().encode()


def every_instruction_executable(config: HardwareConfig = HardwareConfig()) -> bytes:
    """One export that runs every instruction once on a 4x4x4 input (binding
    0, 64 bytes) and writes results to binding 1 (1024 bytes): a seed for
    mutation testing, not a computation anyone needs."""
    rng = np.random.default_rng(7)
    weights = rng.integers(-128, 128, 64, dtype=np.int8).tobytes()
    bias = rng.integers(-500, 500, 4, dtype=np.int32).tobytes()
    quant = quant_table([(1 << 30, -3)] * 4)
    table = rng.integers(-128, 128, 256, dtype=np.int8).tobytes()
    constants = weights + bias + quant + table  # 64 + 16 + 32 + 256 bytes
    ifm, wgt, bia, qnt, i32a, i32b, lut = 0, 256, 512, 768, 1024, 1280, 1536
    out = [2048 + 256 * i for i in range(13)]
    s = CommandStream().layer()
    s.set(DMA_BINDING=0, DMA_OFFSET=0, DMA_SRAM_ADDR=ifm, DMA_LENGTH=64).op(Op.DMA_READ)
    s.set(DMA_BINDING=CONSTANTS_BINDING, DMA_OFFSET=0, DMA_SRAM_ADDR=wgt, DMA_LENGTH=64).op(Op.DMA_READ)
    s.set(DMA_OFFSET=64, DMA_SRAM_ADDR=bia, DMA_LENGTH=16).op(Op.DMA_READ)
    s.set(DMA_OFFSET=80, DMA_SRAM_ADDR=qnt, DMA_LENGTH=32).op(Op.DMA_READ)
    s.set(DMA_OFFSET=112, DMA_SRAM_ADDR=lut, DMA_LENGTH=256).op(Op.DMA_READ)
    s.layer(double_buffered=True)
    s.set(IFM_ADDR=ifm, IFM_H=4, IFM_W=4, IFM_C=4, OFM_H=4, OFM_W=4, OFM_C=4, WEIGHT_ADDR=wgt, BIAS_ADDR=bia,
          QUANT_ADDR=qnt, KERNEL_H=3, KERNEL_W=3, STRIDE_H=1, STRIDE_W=1, PAD_TOP=1, PAD_LEFT=1, DILATION_H=1,
          DILATION_W=1, IFM_ZP=-3, OFM_ZP=5, ACT_MIN=-128, ACT_MAX=127)
    s.set(OFM_ADDR=out[0]).op(Op.DEPTH_CONV)
    s.set(OFM_ADDR=out[1], OFM_C=4, KERNEL_H=1, KERNEL_W=1, PAD_TOP=0, PAD_LEFT=0).op(Op.CONV_RELU)
    s.set(OFM_ADDR=out[2], OFM_H=2, OFM_W=2, KERNEL_H=2, KERNEL_W=2, STRIDE_H=2, STRIDE_W=2).op(Op.POOL, 0)
    s.set(OFM_ADDR=out[3]).op(Op.POOL, 1)
    s.set(OFM_ADDR=out[4], OFM_H=4, OFM_W=4).op(Op.MAT_MUL)
    s.set(OFM_ADDR=i32a, OUT_INT32=1).op(Op.MAT_MUL)
    s.set(OUT_INT32=0, OFM_ADDR=i32b).op(Op.MAT_MUL)  # overwritten below: int8 results as int32 input bytes
    s.layer()
    s.set(OFM_ADDR=out[5]).op(Op.ACT_RELU)
    s.set(OFM_ADDR=out[6], IFM_MULT=1 << 29, IFM_SHIFT=-1).op(Op.ACT_LRELU)
    s.set(OFM_ADDR=out[7]).op(Op.E_ABS)
    s.set(OFM_ADDR=out[8], IFM2_ADDR=out[0]).op(Op.C_MIN)
    s.set(OFM_ADDR=out[9]).op(Op.C_MAX)
    s.set(OFM_ADDR=out[10], IFM2_ZP=2, IFM2_MULT=1 << 30, IFM2_SHIFT=0, OUT_MULT=1 << 30, OUT_SHIFT=-2,
          LEFT_SHIFT=10).op(Op.E_ADD)
    s.set(IFM_ADDR=i32a, IFM2_ADDR=i32b, IFM_C=4, OFM_ADDR=out[11]).op(Op.E32_ADD)
    s.set(IFM_ADDR=ifm, OFM_ADDR=out[12], TABLE_ADDR=lut).op(Op.TABLE)
    s.set(DMA_BINDING=1, DMA_OFFSET=0, DMA_SRAM_ADDR=out[0], DMA_LENGTH=64, DMA_ROWS=13, DMA_SYS_STRIDE=64,
          DMA_SRAM_STRIDE=256).op(Op.DMA_WRITE)
    return Executable(config, [Export("every_instruction", s.end().encode(), (64, 1024))], constants).to_bytes()


def layer_tensor(binding: int, chw: tuple[int, int, int], layout: str) -> TensorLayout:
    """A whole int8 tensor of binding ``binding``, (C, H, W) as ``layout`` ("HWC" or "CHW") lays it out."""
    c, h, w = chw
    shape, roles = ((h, w, c), ("H", "W", "C")) if layout == "HWC" else ((c, h, w), ("C", "H", "W"))
    return TensorLayout(SystemTensor(binding, 0, shape, "i8", (0, 0, 0), shape), roles)


def requantized_int8(spec, acc: np.ndarray) -> np.ndarray:
    """TFLite's per-channel requantization of (C, H, W) accumulators to the layer's int8 output."""
    from npukit.quantization.fixed_point_reference import multiply_by_quantized_multiplier_array

    m = np.array([q for q, _ in spec.multipliers])[:, None]
    s = np.array([q for _, q in spec.multipliers])[:, None]
    scaled = multiply_by_quantized_multiplier_array(acc.reshape(acc.shape[0], -1), m, s).reshape(acc.shape)
    return np.clip(scaled + spec.ofm_zp, spec.act_min, spec.act_max).astype(np.int8)


def run_generated_layer(spec, config: HardwareConfig, mode: str, x: np.ndarray):
    """The layer's stream generated for ``config`` and run on the simulator
    with the (C, H, W) input ``x``: its (C, H, W) output, the plan and the
    run's counters."""
    from npukit.mynpu.simulator import run_stream
    from npukit.mynpu.stream_generator import Constants, generate

    constants = Constants()
    plan = generate(spec, config, constants, 2, mode)
    bindings = [np.zeros(max(n, 1), np.uint8) for n in plan.binding_sizes]
    data = x if spec.ifm.roles[0] == "C" else x.transpose(1, 2, 0)
    bindings[0][:x.size] = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    run = run_stream(config, plan.stream, bindings, bytes(constants.data), max_instructions=1)
    out = bindings[1][:spec.ofm.tensor.extent].view(np.int8).reshape(spec.ofm.tensor.shape)
    return (out if spec.ofm.roles[0] == "C" else out.transpose(2, 0, 1)), plan, run.counters
