"""The MLPerf Tiny models compiled for the host run correctly on IREE's runtime
(the default, tuned CPU pipeline; for the int8 models both it and the stock
one compute the ONNX graph's float requantization, see test_cpu_pipeline).

Two oracles, both written elsewhere:

- onnxruntime on the same ONNX file: the exact semantics the compiler is
  given. int8 outputs must be identical, float ones within 1e-4 relative.
- the TFLite interpreter on the original .tflite file: 1 LSB for int8, 1e-4
  relative for float, with two documented exceptions:
  * ``kws_f32.tflite`` is a hybrid model (five weight tensors stored as int8;
    TFLite quantizes activations on the fly), so exact float arithmetic
    differs from it by up to a few percent; it is held to 5e-2.
  * in ``resnet8_int8`` TFLite computes the final average pool in integers and
    rounds half away from zero, while the ONNX QDQ form averages dequantized
    values in float and rounds half to even. Every other layer matches TFLite
    exactly; a 1-LSB pool difference grows through the dense layer and the
    softmax. The pool output is checked to be within 1 LSB of TFLite's on
    every input, and the final output within 1 LSB wherever the pool outputs
    agree.
"""

from __future__ import annotations

import threading

import numpy as np
import onnx
import pytest

import npukit
from support.models import MLPERF_MODELS, random_inputs
from support.oracles import OnnxRuntimeReference, TFLiteReference, assert_float_close, assert_int8_close

HYBRID_TFLITE = {"kws_f32"}
POOL_ROUNDING = {"resnet8_int8"}


def check_against_references(model, shared_models, outputs_for, rng, count=6) -> None:
    tflite = TFLiteReference(shared_models / f"{model.name}.tflite")
    ort = OnnxRuntimeReference(shared_models / f"{model.name}.onnx")
    for x in random_inputs(model, tflite.input_shape, rng, count):
        got = outputs_for(x)
        assert len(got) == 1
        exact = ort(x)[0]
        if model.quantized:
            np.testing.assert_array_equal(got[0], exact)
        else:
            assert_float_close(got[0], exact, rel=1e-4)
        want = tflite(x)
        if model.name in POOL_ROUNDING:
            continue  # checked layer by layer in test_resnet8_int8_layers_match_tflite
        if model.quantized:
            assert_int8_close(got[0], want)
        else:
            assert_float_close(got[0], want, rel=5e-2 if model.name in HYBRID_TFLITE else 1e-4)


@pytest.mark.parametrize("model", MLPERF_MODELS, ids=lambda m: m.name)
def test_host_vmfb_matches_references(model, shared_models, artifact_cache, rng):
    result = artifact_cache(shared_models / f"{model.name}.onnx")
    assert result.mode == "vmfb" and result.target == "host"
    entry = result.entry_points[0]
    assert entry.inputs[0].dtype == model.dtype
    loaded = npukit.load(result)
    check_against_references(model, shared_models, loaded, rng)


def test_resnet8_int8_layers_match_tflite(shared_models, tmp_path, rng):
    """The pooled features are within 1 LSB of TFLite's; where they agree the
    outputs agree within 1 LSB."""
    source = onnx.load(shared_models / "resnet8_int8.onnx")
    pool = next(n for n in source.graph.node if n.op_type == "AveragePool")
    quant = next(n for n in source.graph.node if n.op_type == "QuantizeLinear" and pool.output[0] in n.input)
    source.graph.output.append(onnx.helper.make_tensor_value_info(quant.output[0], onnx.TensorProto.INT8, [1, 64, 1, 1]))
    with_pool = tmp_path / "resnet8_int8_pool.onnx"
    onnx.save(source, with_pool)
    loaded = npukit.load(npukit.compile(with_pool, out_dir=tmp_path / "art", cpu_pipeline="stock"))

    from ai_edge_litert.interpreter import Interpreter

    with pytest.warns(UserWarning, match="preserve_all_tensors"):
        interp = Interpreter(
            model_path=str(shared_models / "resnet8_int8.tflite"), experimental_preserve_all_tensors=True
        )
    interp.allocate_tensors()
    inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
    pool_index = next(d["index"] for d in interp.get_tensor_details() if d["name"] == quant.output[0])
    model = next(m for m in MLPERF_MODELS if m.name == "resnet8_int8")
    agreeing = 0
    for x in random_inputs(model, tuple(inp["shape"]), rng, 24):
        interp.set_tensor(inp["index"], x)
        interp.invoke()
        probs, pooled = loaded(x)
        tfl_pooled = interp.get_tensor(pool_index).reshape(-1)
        assert_int8_close(pooled.reshape(-1), tfl_pooled)
        if np.array_equal(pooled.reshape(-1), tfl_pooled):
            agreeing += 1
            assert_int8_close(probs, interp.get_tensor(out["index"]))
    assert agreeing >= 6, f"only {agreeing} of 24 inputs had identical pooled features"


def test_manifest_describes_the_artifact(shared_models, artifact_cache):
    result = artifact_cache(shared_models / "kws_int8.onnx")
    m = result.manifest
    assert m["name"] == "kws_int8" and m["vm_module"] == "kws_int8"
    assert m["iree_version"] == "3.13.0"
    assert m["target"]["name"] == "host" and m["mode"] == "vmfb"
    (entry,) = m["entry_points"]
    assert entry["inputs"] == [{"shape": [1, 49, 10, 1], "dtype": "int8", "name": "input_1"}]
    assert entry["outputs"][0]["shape"] == [1, 12] and entry["outputs"][0]["dtype"] == "int8"
    vmfb = m["files"]["vmfb"]
    assert vmfb["bytes"] == (result.directory / vmfb["path"]).stat().st_size > 0
    names = [d["name"] for d in m["dispatches"]]
    # DS-CNN: one standard conv, four depthwise + pointwise pairs, pooling, FC, softmax.
    assert sum("conv" in n for n in names) >= 5
    assert all("_dispatch_" in n for n in names)
    assert m["compile_seconds"] > 0


def test_load_checks_inputs(shared_models, artifact_cache):
    loaded = npukit.load(artifact_cache(shared_models / "kws_int8.onnx"))
    with pytest.raises(npukit.NpukitError, match="dtype float32, the model takes int8"):
        loaded(np.zeros((1, 49, 10, 1), np.float32))
    with pytest.raises(npukit.NpukitError, match="shape 1x49x10, the model takes 1x49x10x1"):
        loaded(np.zeros((1, 49, 10), np.int8))
    with pytest.raises(npukit.NpukitError, match="takes 1 input"):
        loaded()



@pytest.mark.parametrize("model", ["kws_int8.tflite", "kws_int8.onnx"])  # IREE's buffer views; its FunctionInvoker
def test_loaded_calls_return_arrays_of_their_own(model, shared_models, artifact_cache, rng):
    """A call's outputs are arrays of their own (a later call leaves them as
    they were), and an input that is not C-contiguous gives the outputs of
    the same values laid out contiguously."""
    loaded = npukit.load(artifact_cache(shared_models / model))
    shape = tuple(loaded.entry.inputs[0].shape)
    first, second = (rng.integers(-128, 128, shape, dtype=np.int8) for _ in range(2))
    kept = loaded(first)
    again = [o.copy() for o in loaded(first)]
    other = loaded(second)
    assert any(not np.array_equal(a, b) for a, b in zip(kept, other)), "two inputs gave equal outputs"
    for a, b in zip(kept, again):
        assert a.flags.owndata and a.flags.writeable
        np.testing.assert_array_equal(a, b)
    wide = np.zeros(shape[:-1] + (2 * shape[-1],), np.int8)
    wide[..., ::2] = second
    view = wide[..., ::2]
    assert not view.flags.c_contiguous
    for a, b in zip(loaded(view), other):
        np.testing.assert_array_equal(a, b)


def test_loaded_calls_from_two_threads_at_once(shared_models, artifact_cache, rng):
    """Calls from two threads at the same time each give their own input's
    outputs: a call that finds the loaded model's input arrays in use by the
    other makes buffer views of its own."""
    loaded = npukit.load(artifact_cache(shared_models / "kws_int8.tflite"))
    shape = tuple(loaded.entry.inputs[0].shape)
    inputs = [rng.integers(-128, 128, shape, dtype=np.int8) for _ in range(2)]
    expected = [loaded(x)[0] for x in inputs]
    assert not np.array_equal(*expected), "two inputs gave equal outputs"
    wrong: list[int] = []

    def calls(k: int) -> None:
        for _ in range(300):
            if not np.array_equal(loaded(inputs[k])[0], expected[k]):
                wrong.append(k)

    threads = [threading.Thread(target=calls, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong, f"{len(wrong)} of 600 calls gave another input's outputs"


def test_loaded_calls_whose_later_input_is_converted_or_refused(tmp_path, rng):
    """A call whose later input is not an array of its declared dtype and
    shape: converted (a list, a non-contiguous array) to the outputs of the
    inputs given, or refused, and a refused call leaves the next call's
    outputs right (TFLite's reference kernels the oracle)."""
    from support.tflite_builder import run_reference
    from support.tflite_models import int8_add_model

    path = int8_add_model(tmp_path / "add.tflite", (3, 5))
    loaded = npukit.load(npukit.compile(path, out_dir=tmp_path / "out"))
    a, b, c, other = (rng.integers(-128, 128, (3, 5), dtype=np.int8) for _ in range(4))

    def check(x, y, given_y=None):
        np.testing.assert_array_equal(loaded(x, y if given_y is None else given_y)[0], run_reference(path, [x, y])[0])

    check(a, b)
    check(other, c, c.tolist())  # a list: converted
    with pytest.raises(npukit.NpukitError, match="dtype int16, the model takes int8"):
        loaded(a, b.astype(np.int16))
    with pytest.raises(npukit.NpukitError, match="shape 5x3, the model takes 3x5"):
        loaded(other, b.T.copy())
    check(a, b)
    wide = np.zeros((3, 10), np.int8)
    wide[:, ::2] = b
    check(other, b, wide[:, ::2])  # not C-contiguous
