"""The mynpu compiler target on the shared int8 models: what it puts on the
NPU, that its lowering is TFLite's arithmetic, that tiling and the depthwise
mappings do not change results, and that the report's cycle estimate is what
the device counts when the model runs."""

from __future__ import annotations

import numpy as np
import pytest
from iree.compiler.api import Session, Source

import npukit
from npukit.driver import iree_capi
from npukit.driver.compile_plan import cpu_flags
from npukit.driver.phases import PhasedPipeline
from npukit.frontends import import_model
from npukit.mynpu.options import MynpuOptions
from npukit.mynpu.simulator import run_stream
from npukit.passes.mynpu_partition import MynpuTarget
from npukit.runtime.binding import NpukitRuntimeModel
from npukit.targets.cpu_presets import get_preset
from tests.support.models import MLPERF_MODELS, random_inputs
from tests.support.mynpu_streams import tflite_first_conv
from tests.support.oracles import TFLiteReference

INLINE = ["--iree-execution-model=inline-dynamic", "--iree-torch-emit-async-entry-points=false"]


def _compile(shared_models, tmp_path_factory, name: str, options: MynpuOptions | None = None):
    out = tmp_path_factory.mktemp("mynpu") / name
    return npukit.compile(shared_models / f"{name}.onnx", "mynpu", "embedded", out,
                          execution_model="inline-dynamic", mynpu=options)


def _inputs(name: str, count: int) -> list[np.ndarray]:
    model = next(m for m in MLPERF_MODELS if m.name == name)
    shape = {"kws_int8": (1, 49, 10, 1), "resnet8_int8": (1, 32, 32, 3)}[name]
    return random_inputs(model, shape, np.random.default_rng(11), count)


def _run(result, inputs):
    model = NpukitRuntimeModel(result)
    outputs = [model(x)[0] for x in inputs]
    _, total = model.npu_counters()
    model.close()
    return outputs, total


@pytest.fixture(scope="module")
def kws(shared_models, tmp_path_factory):
    return _compile(shared_models, tmp_path_factory, "kws_int8")


@pytest.fixture(scope="module")
def resnet(shared_models, tmp_path_factory):
    return _compile(shared_models, tmp_path_factory, "resnet8_int8")


@pytest.fixture
def compiled(request, kws, resnet):
    """The default mynpu compile of the model named by the test's ``name``."""
    return {"kws_int8": kws, "resnet8_int8": resnet}[request.getfixturevalue("name")]


@pytest.mark.parametrize("name", ["kws_int8", "resnet8_int8"])
def test_models_run_on_the_npu_with_the_estimated_cycles(name, compiled):
    result = compiled
    report = result.manifest["mynpu"]
    summary = report["summary"]
    assert summary["npu_mac_share"] >= 0.95
    for row in report["dispatches"]:
        assert row["device"] in ("mynpu", "cpu")
        assert bool(row["reason"]) == (row["device"] == "cpu"), row
        if row["device"] == "mynpu":
            assert row["cycles"] == max(row["compute_cycles"], row["dma_cycles"]) or \
                row["cycles"] <= row["compute_cycles"] + row["dma_cycles"]
            assert 0 < row["utilisation"] <= 1
    inputs = _inputs(name, 3)
    outputs, total = _run(result, inputs)
    # The device counted exactly the cycles the compiler estimated, every inference.
    assert total.cycles == len(inputs) * summary["total_cycles"]
    assert total.macs == len(inputs) * sum(r["macs"] for r in report["dispatches"] if r["device"] == "mynpu")
    assert len({o.tobytes() for o in outputs}) == len(inputs)  # input-dependent results


def _partition(model) -> MynpuTarget:
    """The mynpu target after partitioning |model| (compiled up to 'stream')."""
    imported = import_model(model, None)
    iree_capi.ensure_global_command_line()
    session = Session()
    session.set_flags("--iree-hal-target-backends=llvm-cpu", *cpu_flags(get_preset("host"), set()), *INLINE)
    target = MynpuTarget(MynpuOptions(), inline=True)
    PhasedPipeline(session, hooks={"preprocessing": [target.retarget], "stream": [target.partition]}).run(
        Source.wrap_buffer(session, imported.mlir), compile_to="stream")
    return target


def _run_layer(target: MynpuTarget, name: str, ifm: np.ndarray) -> np.ndarray:
    """One exported layer's stream on the simulator: |ifm| in, the whole OFM tensor out."""
    spec, plan = target.exports[name]
    i, o = spec.ifm.tensor, spec.ofm.tensor
    bindings = [np.zeros(max(size, 1), np.uint8) for size in plan.binding_sizes]
    bindings[i.binding][i.offset:i.offset + ifm.nbytes] = ifm.view(np.uint8).ravel()
    run_stream(MynpuOptions().config(), plan.stream, bindings=bindings, constants=bytes(target.constants.data))
    dtype = np.int8 if o.dtype == "i8" else np.int32
    count = int(np.prod(o.shape))
    return bindings[o.binding][o.offset:o.offset + count * o.element_bytes].view(dtype).reshape(o.shape)


def test_strided_pointwise_convolution_runs_on_the_npu(shared_models):
    """resnet8_int8's second shortcut (1x1, stride 2), which IREE writes as a
    pointwise contraction over a strided read of its input, runs on the NPU as
    a stride-2 convolution over the whole input."""
    target = _partition(shared_models / "resnet8_int8.onnx")
    name = next(n for n in target.exports if "_matmul_like_64x8x8x32_" in n)
    spec, _ = target.exports[name]
    assert spec.kind == "conv" and spec.kernel == (1, 1) and spec.stride == (2, 2)
    assert spec.ifm.tensor.shape == (32, 16, 16) and spec.ofm.tensor.shape == (64, 8, 8)
    rng = np.random.default_rng(2)
    x = rng.integers(-128, 128, (32, 16, 16), dtype=np.int8)
    out = _run_layer(target, name, x)
    weights = spec.weights.reshape(64, 32).astype(np.int64)
    expected = np.einsum("oc,chw->ohw", weights, x[:, ::2, ::2].astype(np.int64))  # int32 accumulators
    np.testing.assert_array_equal(out, expected)


def test_first_kws_convolution_is_tflites_arithmetic(shared_models):
    """The stream the compiler writes for kws_int8's first convolution (weights
    packed, biases and multipliers derived from IREE's float epilogue) gives
    exactly TFLite's reference-kernel output."""
    target = _partition(shared_models / "kws_int8.onnx")
    name = next(n for n in target.exports if "_conv_64x25x5x10x4_" in n)
    spec, _ = target.exports[name]
    layer, reference = tflite_first_conv(shared_models / "kws_int8.tflite")
    assert spec.ifm_zp == layer.input_zp and spec.ofm_zp == layer.output_zp
    np.testing.assert_array_equal(spec.bias, layer.bias)
    assert spec.multipliers == layer.multipliers
    rng = np.random.default_rng(5)
    for _ in range(3):
        x = rng.integers(-128, 128, (49, 10), dtype=np.int8)
        padded = np.full(spec.ifm.tensor.shape, spec.ifm_zp, np.int8)  # IREE pads with the zero point
        padded[4:53, 1:11] = x
        ofm = spec.ofm.tensor
        out = _run_layer(target, name, padded)
        window = out[:, ofm.offsets[1]:ofm.offsets[1] + 25, ofm.offsets[2]:ofm.offsets[2] + 5]
        np.testing.assert_array_equal(window.transpose(1, 2, 0), reference(x.reshape(1, 49, 10, 1)))


@pytest.mark.parametrize("name", ["kws_int8", "resnet8_int8"])
def test_models_on_the_npu_equal_tflites_reference_kernels(name, compiled, shared_models):
    """The whole model compiled for mynpu (NPU layers plus the CPU's
    dispatches, whose requantizations are integer too) gives exactly the
    outputs of TFLite's reference kernels, the integer arithmetic of TFLite
    Micro and CMSIS-NN, on 20 random inputs."""
    tflite = TFLiteReference(shared_models / f"{name}.tflite", kernels="reference")
    inputs = _inputs(name, 20)
    outputs, _ = _run(compiled, inputs)
    for x, y in zip(inputs, outputs):
        np.testing.assert_array_equal(y, tflite(x))


def test_cpu_dispatches_requantize_in_integers(resnet):
    """resnet8_int8's layers all run on the NPU, their residual additions
    included (each reads an int8 tensor, npukit.passes.quantized_handoffs).
    Of the dispatches left to the CPU the average pool of the int8 tensor
    requantizes in integers (TFLite's AVERAGE_POOL_2D in IREE's code), the
    softmax stays in f32, and the report says so."""
    rows = [r for r in resnet.manifest["mynpu"]["dispatches"] if r["device"] == "cpu"]
    arithmetic = {r["name"]: r["cpu_requantization"] for r in rows}
    assert not [r for r in rows if "residual" in r["reason"] or "accumulators" in r["reason"]]
    pool = [n for n in arithmetic if "_reduction_" in n]
    softmax = [n for n in arithmetic if "softmax" in n]
    assert len(pool) == len(softmax) == 1
    assert arithmetic[pool[0]] == "integer"
    assert arithmetic[softmax[0]].startswith("float: ")
    assert {a for n, a in arithmetic.items() if n not in pool + softmax} == {"none"}


def test_small_sram_tiles_without_changing_results(kws, shared_models, tmp_path_factory):
    small = _compile(shared_models, tmp_path_factory, "kws_int8", MynpuOptions(sram_kib=8))
    rows = {r["name"]: r for r in small.manifest["mynpu"]["dispatches"]}
    tiled = [r for r in rows.values() if r["device"] == "mynpu" and r["tiling"]["output_channels"] < 64]
    assert tiled and all(r["sram_peak"] <= 8 * 1024 for r in rows.values() if r["device"] == "mynpu")
    inputs = _inputs("kws_int8", 2)
    expected, _ = _run(kws, inputs)
    got, total = _run(small, inputs)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
    assert total.cycles == 2 * small.manifest["mynpu"]["summary"]["total_cycles"]
    assert small.manifest["mynpu"]["summary"]["total_cycles"] > kws.manifest["mynpu"]["summary"]["total_cycles"]


def test_auto_parallelism_picks_the_fastest_mode(shared_models, tmp_path_factory):
    """--mynpu-parallel=auto compiles for the parallelism with the fewest
    estimated cycles over the whole model, and the device counts exactly
    those. On 128 PEs, kws_int8's 64 output channels leave half of them idle
    under output parallelism; the output-pixels grid uses them all."""
    swept = npukit.explore(shared_models / "kws_int8.onnx", tmp_path_factory.mktemp("auto"), pes=(128,),
                           sram_kib=(256,), parallel=("output", "input", "output-pixels"), depthwise=("npu",),
                           jobs=1, plots=False)
    totals = {c["parallel"]: c["npu_cycles"] for c in swept.configurations}
    assert len(set(totals.values())) == 3
    auto = _compile(shared_models, tmp_path_factory, "kws_int8", MynpuOptions(pes=128, parallel="auto"))
    chosen = auto.manifest["mynpu"]
    assert chosen["hardware"]["parallelism"] == min(totals, key=totals.get) == "output-pixels"
    assert chosen["summary"]["total_cycles"] == min(totals.values())
    _, total = _run(auto, _inputs("kws_int8", 1))
    assert total.cycles == min(totals.values())


def test_depthwise_without_its_instruction(kws, shared_models, tmp_path_factory):
    """Without OP_DEPTH_CONV the depthwise layers, and only they, move to the
    CPU; mapped per channel onto OP_CONV they stay on the NPU, with the same
    results and more cycles."""
    default = {r["name"]: r for r in kws.manifest["mynpu"]["dispatches"]}
    depthwise = {n for n, r in default.items() if r["operation"].startswith("depthwise")}
    assert len(depthwise) == 4
    on_cpu = _compile(shared_models, tmp_path_factory, "kws_int8", MynpuOptions(depthwise="cpu"))
    rows = {r["name"]: r for r in on_cpu.manifest["mynpu"]["dispatches"]}
    moved = {n for n, r in rows.items() if r["device"] != default[n]["device"]}
    assert moved == depthwise
    assert all("OP_DEPTH_CONV" in rows[n]["reason"] for n in moved)
    per_channel = _compile(shared_models, tmp_path_factory, "kws_int8", MynpuOptions(depthwise="per-channel"))
    rows = {r["name"]: r for r in per_channel.manifest["mynpu"]["dispatches"]}
    assert all(rows[n]["device"] == "mynpu" and rows[n]["depthwise"] == "per-channel" for n in depthwise)
    assert all(rows[n]["cycles"] > default[n]["cycles"] for n in depthwise)
    inputs = _inputs("kws_int8", 2)
    expected, _ = _run(kws, inputs)
    got, _ = _run(per_channel, inputs)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)


def test_static_library_runs_the_npu_from_flash(kws, shared_models, tmp_path):
    """-m static: the mynpu executable is constant data in the vm-c module
    whose CPU code is the static library (by name), nothing to load into RAM;
    npukit's runtime gives the embedded build's outputs and runs the same NPU
    work (the device's cycle count)."""
    static = npukit.compile(shared_models / "kws_int8.onnx", "mynpu", "static", tmp_path / "out")
    assert static.manifest["execution_model"] == "inline-dynamic"
    assert {"static_library", "static_library_h", "vm_module_c"} <= set(static.files)
    placed = static.manifest["mynpu"]["executables"]
    assert [(e["cpu_code"], e["cpu_code_bytes"]) for e in placed] == [("static", 0)]
    assert placed[0]["static_library"] in static.files["static_library_h"].read_text()
    # One copy of the weights: the NPU's layers have no CPU code (nor tuned kernels' widened weights) in the
    # library, which keeps only the CPU dispatches (data movement, softmax) and IREE's tables. The NPU's
    # constants are the int8 weights (86% of them) and the integer parameters: half of them cannot hold a copy.
    assert placed[0]["cpu_code_for"] == "cpu dispatches"
    library = static.manifest["files"]["static_library"]["elf"]["sizes"]
    assert library["rodata"] + library["data"] < placed[0]["npu_constants_bytes"] / 2
    embedded = kws.manifest["mynpu"]["executables"]
    assert embedded[0]["cpu_code"].startswith("embedded-elf") and embedded[0]["cpu_code_bytes"] > 0
    assert static.manifest["mynpu"]["summary"] == kws.manifest["mynpu"]["summary"]
    inputs = _inputs("kws_int8", 3)
    expected, _ = _run(kws, inputs)
    got, total = _run(static, inputs)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
    assert total.cycles == 3 * static.manifest["mynpu"]["summary"]["total_cycles"] > 0


def test_static_library_needs_the_inline_model(shared_models, tmp_path):
    """With the async model the device keeps a CPU variant beside the mynpu
    one and both would be one static library: refused before anything is
    written, not silently run on the CPU."""
    from npukit.errors import TargetError

    with pytest.raises(TargetError, match="needs the inline-dynamic execution model"):
        npukit.compile(shared_models / "kws_int8.onnx", "mynpu", "static", tmp_path / "out", execution_model="async")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flag", ["table", "pool", "mul"])
def test_the_instruction_flags(flag):
    """--mynpu-table, --mynpu-pool and --mynpu-mul: on by default (OP_TABLE,
    OP_POOL, OP_E_MUL in the configuration), off leaves the instruction out;
    anything else is refused with the flag's name."""
    from npukit.errors import TargetError
    from npukit.mynpu.isa import Op

    bit = 1 << ({"table": Op.TABLE, "pool": Op.POOL, "mul": Op.E_MUL}[flag] - 0x10)
    assert MynpuOptions().config().instruction_mask & bit
    assert getattr(MynpuOptions.from_flags({f"mynpu-{flag}": "on"}), flag)
    off = MynpuOptions.from_flags({f"mynpu-{flag}": "off"})
    assert not getattr(off, flag) and not off.config().instruction_mask & bit
    assert off.config(parallelism="input").instruction_mask == MynpuOptions().config().instruction_mask & ~bit
    with pytest.raises(TargetError, match=f"--mynpu-{flag} must be on or off"):
        MynpuOptions.from_flags({f"mynpu-{flag}": "maybe"})
