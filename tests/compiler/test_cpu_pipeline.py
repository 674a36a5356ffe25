"""The tuned CPU pipeline (``cpu_pipeline="tuned"``): int8 convolutions,
depthwise and fully connected layers and average pools of int32
accumulators call npukit's kernels, which compute each model's own
arithmetic: TFLite's integer arithmetic for .tflite models (exactly the
outputs of TFLite's reference kernels, tests/zoo), and an ONNX QDQ graph's
float requantization for .onnx models (exactly onnxruntime's outputs)."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import npukit
from npukit.cpu.layer_kernels import ENTRY_POINT, UNWEIGHTED_ENTRY_POINT, WORDS
from npukit.errors import TargetError
from npukit.targets.cpu_pipeline import CpuPipeline
from support.models import MLPERF_MODELS, random_inputs
from support.oracles import OnnxRuntimeReference

# The layers each ONNX model's kernels take: kws_int8's first convolution,
# four depthwise and four pointwise convolutions and the classifier;
# resnet8_int8's seven 3x3 convolutions (three fused with their residual
# addition of an int8 tensor), the two strided 1x1 shortcuts and the
# classifier. Every layer requantizes its own accumulators: the tensors it
# hands to an average pool or to a residual addition are int8
# (npukit.passes.quantized_handoffs). Left to IREE's code: the average pools
# of int8 tensors and the softmax.
_KERNEL_LAYERS = {
    "kws_int8": {"convolution + relu": 1, "depthwise convolution + relu": 4, "pointwise convolution + relu": 4,
                 "fully connected": 1},
    "resnet8_int8": {"convolution + relu": 4, "convolution + add": 3, "pointwise convolution": 2,
                     "fully connected": 1},
}


@pytest.mark.parametrize("name", ["kws_int8", "resnet8_int8"])
def test_tuned_host_build_equals_onnxruntime(name, shared_models, artifact_cache, rng):
    """The ONNX QDQ models' oracle is onnxruntime without graph optimizations:
    with the tuned kernels' float output stage the outputs are its outputs
    (they differ only where onnxruntime's float32 sums round a layer's value
    across a half step, tests/compiler/test_onnx_qdq_rounding.py; with
    TFLite's fixed point, kws_int8 was 8 LSB and resnet8_int8 43 LSB away)."""
    result = artifact_cache(shared_models / f"{name}.onnx")  # tuned is the default
    assert result.manifest["cpu_pipeline"] == "tuned" and not result.manifest["warnings"]
    kernels = result.manifest["cpu_kernels"]
    layers: dict[str, int] = {}
    for entry in kernels.values():
        if "operation" in entry:
            layers[entry["operation"]] = layers.get(entry["operation"], 0) + 1
        else:
            assert entry["reason"], entry
    assert layers == _KERNEL_LAYERS[name]
    model = next(m for m in MLPERF_MODELS if m.name == name)
    oracle = OnnxRuntimeReference(shared_models / f"{name}.onnx")
    shape = tuple(d if isinstance(d, int) else 1 for d in oracle.session.get_inputs()[0].shape)
    loaded = npukit.load(result)
    outputs, exact = [], 0
    for x in random_inputs(model, shape, rng, 20):
        outputs.append(loaded(x)[0])
        exact += np.array_equal(outputs[-1], oracle(x)[0])
    assert exact >= 18, f"{exact} of 20 outputs equal onnxruntime's"
    assert len({y.tobytes() for y in outputs}) > 1


def test_stock_pipeline_is_iree_unchanged(shared_models, artifact_cache):
    stock = artifact_cache(shared_models / "kws_int8.onnx", cpu_pipeline="stock")
    assert stock.manifest["cpu_pipeline"] == "stock" and stock.manifest["cpu_kernels"] is None


def test_static_library_carries_the_kernels_privately(shared_models, artifact_cache):
    """A static library is one object with the kernels merged in; only its
    query function is global, so two models link into one firmware."""
    result = artifact_cache(shared_models / "kws_int8.onnx", "cortex-m4", "static", cpu_pipeline="tuned")
    obj = result.files["static_library"]
    symbols = subprocess.run(["arm-none-eabi-nm", str(obj)], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in symbols.splitlines()]
    defined_global = [r[-1] for r in rows if len(r) == 3 and r[1].isupper() and r[1] != "U"]
    undefined = {r[-1] for r in rows if r[0] == "U"}
    assert defined_global == [f"{result.name}_linked_library_query"], defined_global
    assert ENTRY_POINT not in undefined and any(r[-1] == ENTRY_POINT for r in rows)
    assert "__aeabi_unwind_cpp_pr0" not in undefined


def test_elementwise_layers_link_their_kernels_alone(tmp_path):
    """An NPU build whose CPU layers are all without weights (squeeze_excite
    on hardware without OP_E_MUL and OP_POOL: its gated products, its global
    means, its softmax's maximum) calls npukit_s8_unweighted, and its static
    library holds those kernels, not the convolutions'."""
    import npukit
    from npukit.mynpu.options import MynpuOptions
    from zoo.catalogue import entries

    model = next(e for e in entries() if e.name == "squeeze_excite-int8.tflite").path()
    result = npukit.compile(model, target="mynpu+cortex-m4", output="static", out_dir=tmp_path / "out",
                            mynpu=MynpuOptions(mul=False, pool=False))
    kernels = result.manifest["cpu_kernels"]
    operations = [k["operation"] for k in kernels.values() if "operation" in k]
    assert operations.count("elementwise int8 product") == 2 and operations.count("int8 mean") == 3
    assert set(operations) <= {"elementwise int8 product", "int8 mean", "int8 max pool"}, operations
    obj = result.files["static_library"]
    symbols = subprocess.run(["arm-none-eabi-nm", str(obj)], capture_output=True, text=True, check=True).stdout
    names = {line.split()[-1] for line in symbols.splitlines() if line.strip()}
    assert {UNWEIGHTED_ENTRY_POINT, "npukit_s8_mul"} <= names
    assert not {ENTRY_POINT, "npukit_s8_conv", "npukit_s8_depthwise"} & names


@pytest.mark.parametrize("target,encoding", [("cortex-m4", "NPC1"), ("host", "NPK1")])
def test_board_blocks_are_compact(target, encoding, shared_models, artifact_cache):
    """The layers' parameter blocks in a static library: compact on a
    32-bit board, the full words on the 64-bit host (kernels/s8_layer.h)."""
    from elftools.elf.elffile import ELFFile

    result = artifact_cache(shared_models / "kws_int8.onnx", target, "static", cpu_pipeline="tuned")
    with open(result.files["static_library"], "rb") as f:
        blocks = [s.data() for s in ELFFile(f).iter_sections() if s.name.startswith(".rodata.npukit_layer_")]
    assert len(blocks) == 10
    assert {b[:4] for b in blocks} == {encoding.encode()}


def test_parameter_block_layout_is_read_from_the_header():
    assert WORDS["MAGIC"] == 0 and WORDS["COUNT"] == len(WORDS) - 1
    assert list(WORDS.values()) == list(range(len(WORDS)))


def test_unknown_pipeline_is_refused():
    with pytest.raises(TargetError, match="unknown CPU pipeline 'fast'; choose one of: stock, tuned"):
        CpuPipeline.parse("fast")


@pytest.mark.parametrize("where", ["kernel archive", "compile"])
def test_a_failing_tuned_compile_falls_back_to_stock(where, shared_models, tmp_path, monkeypatch):
    """When the kernels cannot be built or the tuned compile fails, the model
    is compiled with the stock pipeline, and the manifest says so and why."""
    import npukit.compile_model as compile_model
    import npukit.cpu.layer_kernels as layer_kernels
    from npukit.errors import CompileError, ToolchainError

    if where == "kernel archive":
        def broken(preset):
            raise ToolchainError("gcc: not found")
        monkeypatch.setattr(layer_kernels, "kernel_library", broken)
    else:
        real = compile_model._run_worker

        def run(job, work, say, deadline, time_limit, log):
            if job.tuned_cpu is not None:
                raise CompileError("a pass failed", phase="stream")
            return real(job, work, say, deadline, time_limit, log)
        monkeypatch.setattr(compile_model, "_run_worker", run)
    messages = []
    result = npukit.compile(shared_models / "kws_int8.onnx", out_dir=tmp_path / "out", cpu_pipeline="tuned",
                            progress=messages.append)
    assert result.manifest["cpu_pipeline"] == "stock" and result.manifest["cpu_kernels"] is None
    reason = "gcc: not found" if where == "kernel archive" else "a pass failed"
    note = f"the tuned CPU pipeline failed ({reason}); compiled with the stock pipeline instead"
    assert note in result.manifest["warnings"] and note in messages
    assert not list((tmp_path / "out").glob(".work*"))


def test_data_tiling_keeps_the_kernels_out_and_says_so(shared_models, tmp_path, rng):
    """With IREE's data tiling the dispatches' tensors carry layout encodings
    the kernels do not take: the tuned compile finishes (no fallback, no
    crash in the constant-pool analysis), gives each dispatch's reason, warns
    once, and the model runs (IREE's data-tiled code, whose requantization
    stays in f32)."""
    messages = []
    result = npukit.compile(shared_models / "kws_int8.onnx", out_dir=tmp_path / "out",
                            iree_flags=["--iree-opt-data-tiling"], progress=messages.append)
    assert result.manifest["cpu_pipeline"] == "tuned"
    kernels = result.manifest["cpu_kernels"]
    assert not any("operation" in entry for entry in kernels.values())
    assert any("data-tiling encoding" in entry["reason"] for entry in kernels.values())
    (warning,) = result.manifest["warnings"]
    assert "--iree-opt-data-tiling" in warning and warning in messages
    x = rng.integers(-128, 128, (1, 49, 10, 1), dtype=np.int8)
    (y,) = npukit.load(result)(x)
    assert y.shape == (1, 12) and y.dtype == np.int8


def test_a_fault_in_a_pass_is_a_readable_error(tmp_path, monkeypatch):
    """A Python exception inside one of npukit's pass hooks (which IREE's
    bindings hand back as a RuntimeError carrying the traceback) becomes the
    job's error, named by its last line, instead of a bare exit status."""
    import json

    from npukit.driver import compile_worker

    def fault(job, progress):
        raise RuntimeError("Exception raised in callback: Traceback (most recent call last):\n"
                           '  File "constant_pool.py", line 125, in _constant_resource\n'
                           "IndexError: index out of range")

    monkeypatch.setattr(compile_worker, "run_job", fault)
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"input_path": "m.mlir", "flags": [], "module_name": "m",
                               "output_format": "vm-bytecode", "output_path": str(tmp_path / "m.vmfb")}))
    assert compile_worker.main([str(job), str(tmp_path / "result.json")]) == 1
    result = json.loads((tmp_path / "result.json").read_text())
    assert not result["ok"] and result["error_kind"] == "CompileError"
    assert result["error"] == "an npukit pass failed: IndexError: index out of range"
    assert any("constant_pool.py" in line for line in result["diagnostics"])
