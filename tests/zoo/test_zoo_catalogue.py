"""The zoo: every catalogued model runs on its oracle, the generated set
covers the families and operators it claims (read from the files), the
quantization variants are what their names say, and generation is
deterministic and safe to run from several processes."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from support.zoo_oracles import InputSpec, reference_run, seeded_inputs

from . import cache, generator
from .catalogue import ZooRecord, catalogue, entries, format_table, main
from .onnx_reader import OnnxModel
from .specs import generated_model
from .tflite_reader import TFLiteModel

REQUIRED_FAMILIES = {"ds-cnn", "mobilenet-v1", "mobilenet-v2", "conv1d", "autoencoder", "resnet", "large-bias"}
REQUIRED_INT8_OPERATORS = {
    "CONV_2D", "DEPTHWISE_CONV_2D", "PAD", "CONCATENATION", "MEAN", "MAX_POOL_2D", "AVERAGE_POOL_2D",
    "HARD_SWISH", "LOGISTIC", "TANH", "LEAKY_RELU", "MUL", "RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR",
    "TRANSPOSE_CONV", "RESHAPE", "STRIDED_SLICE", "ADD", "SUB", "SOFTMAX", "FULLY_CONNECTED", "RELU6",
    "QUANTIZE", "DEQUANTIZE",
}
WEIGHTED_OPERATORS = {"CONV_2D": 1, "DEPTHWISE_CONV_2D": 1, "FULLY_CONNECTED": 1, "TRANSPOSE_CONV": 1}
BIASED_OPERATORS = {"CONV_2D": 2, "DEPTHWISE_CONV_2D": 2, "FULLY_CONNECTED": 2, "TRANSPOSE_CONV": 3}
# The models whose oracle is known not to run them (the reason is read from
# the file; see TFLiteModel.oracle_limitations).
MODELS_WITHOUT_ORACLE = {"keyword_scrambled_8bit.tflite"}
ENTRY_NAMES = [entry.name for entry in entries()]


@pytest.fixture(scope="session")
def records() -> dict[str, ZooRecord]:
    """Every zoo model's record; generated models are built once per
    generator key (another worker building them is waited for)."""
    return {record.name: record for record in catalogue()}


def _generated(records: dict[str, ZooRecord], form: str | None = None, fmt: str | None = None) -> list[ZooRecord]:
    found = []
    for record in records.values():
        if record.source != "generated":
            continue
        spec = generated_model(record.name.rsplit(".", 1)[0])
        if (form is None or spec.form == form) and (fmt is None or record.format == fmt):
            found.append(record)
    return found


@pytest.mark.parametrize("name", ENTRY_NAMES)
def test_model_runs_on_its_oracle(records, name):
    record = records[name]
    if record.oracle_limitations:
        pytest.xfail("; ".join(record.oracle_limitations))
    cache_dir = cache.zoo_dir() / "references"
    run = reference_run(record.path, record.input_range, seed=7, count=4, cache_dir=cache_dir)
    assert len(run.outputs) == 4 and all(len(outputs) >= 1 for outputs in run.outputs)
    for outputs in run.outputs:
        for y in outputs:
            if np.issubdtype(y.dtype, np.floating):
                assert np.all(np.isfinite(y)), f"{name}: the oracle gave non-finite outputs"
    if record.format == "tflite":
        default = reference_run(record.path, record.input_range, seed=7, count=4, kernels="default",
                                cache_dir=cache_dir)
        for want, got in zip(run.outputs, default.outputs):
            assert [(y.shape, y.dtype) for y in got] == [(y.shape, y.dtype) for y in want]


def test_most_generated_models_outputs_move_with_their_inputs(records):
    """Untrained networks can ignore noise-like inputs; a zoo of such models
    would test little. At least three quarters of the generated models must
    give different outputs for four different seeded inputs."""
    still = []
    generated = _generated(records)
    for record in generated:
        run = reference_run(record.path, record.input_range, seed=7, count=4,
                            cache_dir=cache.zoo_dir() / "references")
        first = run.outputs[0]
        if all(np.array_equal(a, b) for other in run.outputs[1:] for a, b in zip(first, other)):
            still.append(record.name)
    assert len(still) <= len(generated) // 4, f"outputs independent of the input: {still}"


def test_models_without_an_oracle_are_the_known_ones(records):
    assert {name for name, record in records.items() if record.oracle_limitations} == MODELS_WITHOUT_ORACLE


def test_every_shared_model_has_a_family(records):
    unclassified = [name for name, record in records.items() if record.family == "unclassified"]
    assert not unclassified, f"add these shared models to catalogue.SHARED_MODELS: {unclassified}"


def test_figures_read_from_the_files_match_the_published_ones(records):
    # MLPerf Tiny: DS-CNN 2.66 M MACs, ResNet-8 12.5 M; the PyTorch MobileNetV2: 300 M MACs, 3.5 MB.
    for fmt in ("tflite", "onnx"):
        assert records[f"kws_int8.{fmt}"].macs == 2_656_768
        assert records[f"resnet8_int8.{fmt}"].macs == 12_501_632
        assert records[f"kws_int8.{fmt}"].arithmetic == "int8"
        assert records[f"resnet8_f32.{fmt}"].arithmetic == "float32"
    assert records["kws_f32.tflite"].arithmetic == "mixed"  # int8 weights, float activations
    mobilenet = records["mobilenet_v2_quantized_1x3x224x224.tflite"]
    assert 300e6 < mobilenet.macs < 301e6 and 3.4e6 < mobilenet.weight_bytes < 3.6e6
    assert mobilenet.size_class == "large"
    assert records["trained_lstm_int8.tflite"].recurrent and records["keyword_scrambled_8bit.tflite"].recurrent
    assert not records["kws_int8.tflite"].recurrent
    assert records["seanet_conv0_int16x8.tflite"].arithmetic == "int16x8"


def test_generated_models_fit_the_board_and_the_big_ones_are_flagged(records):
    generated = _generated(records)
    assert all(r.fits_board for r in generated)
    large = {r.name for r in generated if r.size_class == "large"}
    assert "mobilenet_v1_050_128_rgb-int8.tflite" in large
    assert len(large) <= 3, f"most generated models should be small: {sorted(large)}"


def test_generated_set_covers_every_family(records):
    int8_tflite = [r for r in _generated(records, fmt="tflite") if r.arithmetic == "int8"]
    assert REQUIRED_FAMILIES <= {r.family for r in int8_tflite}
    onnx_int8 = {r.family for r in _generated(records, fmt="onnx") if r.arithmetic == "int8"}
    assert {"ds-cnn", "mobilenet-v1", "mobilenet-v2", "conv1d", "autoencoder", "resnet"} <= onnx_int8
    float_tflite = {r.family for r in _generated(records, fmt="tflite") if r.arithmetic == "float32"}
    assert len(float_tflite) >= 4, float_tflite
    assert any(r.arithmetic == "int16x8" for r in _generated(records, fmt="tflite"))
    assert any(r.arithmetic == "float32" for r in _generated(records, fmt="onnx"))


def test_generated_int8_tflite_models_contain_every_operator(records):
    present: set[str] = set()
    for record in _generated(records, fmt="tflite"):
        if record.arithmetic == "int8":
            present.update(record.operators)
    assert not REQUIRED_INT8_OPERATORS - present, sorted(REQUIRED_INT8_OPERATORS - present)


def test_float_io_model_converts_at_its_edges(records):
    model = TFLiteModel(records["ds_cnn_xs-int8-float-io.tflite"].path)
    assert [t.dtype for t in model.inputs] == ["float32"] and [t.dtype for t in model.outputs] == ["float32"]
    assert model.operators[0].name == "QUANTIZE" and model.operators[0].inputs[0] == model.inputs[0].index
    assert model.operators[-1].name == "DEQUANTIZE" and model.operators[-1].outputs[0] == model.outputs[0].index
    inner = [t.dtype for op in model.operators[1:-1] for t in (model.tensors[i] for i in op.outputs)]
    assert set(inner) == {"int8"}


def _weights(model: TFLiteModel):
    for op in model.operators:
        if op.name in WEIGHTED_OPERATORS:
            yield op, model.tensors[op.inputs[WEIGHTED_OPERATORS[op.name]]]


def test_tflite_per_tensor_variants_are_per_tensor_and_the_others_per_channel(records):
    per_tensor = _generated(records, form="int8-per-tensor")
    assert len(per_tensor) >= 4
    for record in per_tensor:
        weights = list(_weights(TFLiteModel(record.path)))
        assert weights and all(len(w.scales) == 1 for _, w in weights), record.name
    checked = 0
    for record in _generated(records, form="int8"):
        convolutions = [(op, w) for op, w in _weights(TFLiteModel(record.path))
                        if op.name in ("CONV_2D", "DEPTHWISE_CONV_2D")]
        checked += bool(convolutions)
        for op, w in convolutions:
            channels = w.shape[0] if op.name == "CONV_2D" else w.shape[-1]
            assert len(w.scales) == channels and w.quantized_dimension == (0 if op.name == "CONV_2D" else 3), \
                (record.name, op.name, len(w.scales), channels)
    assert checked >= 10


def test_onnx_per_tensor_variants_are_per_tensor_and_the_others_per_channel(records):
    for form, per_channel in (("qdq-per-tensor", False), ("qdq-per-channel", True)):
        models = _generated(records, form=form)
        assert len(models) >= 2
        for record in models:
            model = OnnxModel(record.path)
            scales = [model.constant(node.input[1]).size for node in model.weight_dequantizers()]
            assert scales, record.name
            if per_channel:
                assert max(scales) > 1, record.name
            else:
                assert set(scales) == {1}, record.name


def test_large_bias_variants_have_biases_float32_cannot_hold(records):
    for name in ("large_bias-int8.tflite", "large_bias-int8-per-tensor.tflite"):
        model = TFLiteModel(records[name].path)
        largest = 0
        for op in model.operators:
            if op.name not in BIASED_OPERATORS or len(op.inputs) <= BIASED_OPERATORS[op.name]:
                continue
            bias_tensor = model.tensors[op.inputs[BIASED_OPERATORS[op.name]]]
            data = model.tensors[op.inputs[0 if op.name != "TRANSPOSE_CONV" else 2]]
            weights = model.tensors[op.inputs[1]]
            bias = model.constant(bias_tensor).astype(np.int64)
            # The bias is in accumulator units: its scale is input scale x weight scale.
            expected = np.asarray(weights.scales) * data.scales[0]
            np.testing.assert_allclose(np.broadcast_to(bias_tensor.scales, bias.shape),
                                       np.broadcast_to(expected, bias.shape), rtol=1e-6)
            largest = max(largest, int(np.abs(bias).max()))
            if np.abs(bias).max() > 2**24:
                # float32 loses the integer: the bias plus an accumulator of 1 rounds.
                assert np.any((bias + 1).astype(np.float32).astype(np.int64) != bias + 1), name
        assert largest > 2**24, f"{name}: largest bias {largest} fits a float32 exactly"


def test_a_depthwise_convolution_has_channel_multiplier_above_one(records):
    found = []
    for record in _generated(records, fmt="tflite"):
        model = TFLiteModel(record.path)
        for op in model.operators:
            if op.name == "DEPTHWISE_CONV_2D":
                in_channels = model.tensors[op.inputs[0]].shape[-1]
                out_channels = model.tensors[op.outputs[0]].shape[-1]
                if out_channels > in_channels > 1:
                    found.append((record.name, out_channels // in_channels))
    assert found and any(r.startswith("mobilenet_v2_mult") and "int8" in r for r, _ in found), found


def test_conv1d_models_have_dilated_convolutions(records):
    dilations = set()
    for record in _generated(records, fmt="tflite"):
        if record.family == "conv1d" and record.arithmetic == "int8":
            for op in TFLiteModel(record.path).operators:
                if op.name == "CONV_2D":
                    dilations.add(max(op.option("dilation_h"), op.option("dilation_w")))
    assert max(dilations) > 1, dilations
    tiny = records["conv1d_tiny-int8.tflite"]
    assert tiny.weight_bytes < 1024  # small enough for IREE to inline into dispatches


@pytest.mark.parametrize("name", ["ds_cnn_xs-int8", "mobilenet_v2_mult_s-qdq-per-tensor"])
def test_generation_is_deterministic(records, name):
    """A model generated again from scratch (Keras model, conversion) has the
    cached file's bytes, which may come from another process."""
    spec = generated_model(name)
    assert generator.generate_bytes(spec) == generator.model_path(spec).read_bytes()


def test_the_cache_key_follows_the_generator_source_and_tool_versions(tmp_path, monkeypatch):
    source = tmp_path / "specs.py"
    source.write_text("A = 1\n")
    key = cache.content_key((source,), ("tensorflow",))
    assert cache.content_key((source,), ("tensorflow",)) == key
    source.write_text("A = 2\n")
    changed_source = cache.content_key((source,), ("tensorflow",))
    monkeypatch.setattr(cache, "installed_version", lambda name: "0.0-other")
    changed_version = cache.content_key((source,), ("tensorflow",))
    assert len({key, changed_source, changed_version}) == 3
    monkeypatch.setenv("NPUKIT_ZOO_DIR", str(tmp_path / "zoo"))
    assert cache.zoo_dir().parent == tmp_path / "zoo"


def test_concurrent_builds_generate_once_and_write_whole_files(tmp_path, monkeypatch):
    spec = generated_model("conv1d_tiny-int8")
    calls = []
    started = threading.Event()

    def slow_generate(model):
        calls.append(model.name)
        started.set()
        threading.Event().wait(0.3)  # the second builder arrives while this one writes
        return b"x" * 100_000

    monkeypatch.setattr(generator, "generate_bytes", slow_generate)
    paths: list[Path] = []
    first = threading.Thread(target=lambda: paths.append(generator.build(spec, tmp_path)))
    first.start()
    started.wait(5)
    second = threading.Thread(target=lambda: paths.append(generator.build(spec, tmp_path)))
    second.start()
    first.join(10)
    second.join(10)
    assert calls == [spec.name]
    assert len(paths) == 2 and paths[0] == paths[1] and paths[0].read_bytes() == b"x" * 100_000
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_seeded_inputs_span_the_whole_integer_range():
    specs = [InputSpec("x", (1, 49, 10, 1), np.dtype(np.int8)), InputSpec("y", (1, 96), np.dtype(np.int16))]
    samples = seeded_inputs(specs, seed=3, count=2, float_range=None)
    x = samples[0][0]
    assert x.dtype == np.int8 and x.min() == -128 and x.max() == 127
    y = samples[0][1]
    assert y.dtype == np.int16 and y.min() < -30000 and y.max() > 30000
    assert all(np.array_equal(a, b) for a, b in zip(samples[1], seeded_inputs(specs, 3, 2, None)[1]))
    later = samples[1][0].astype(int)
    assert later.max() - later.min() < 255  # a part of the range
    with pytest.raises(ValueError, match="needs a value range"):
        seeded_inputs([InputSpec("z", (2,), np.dtype(np.float32))], 0, 1, None)


def test_catalogue_table_lists_every_model(records, capsys):
    assert main(["--no-operators"]) == 0
    printed = capsys.readouterr().out
    for name in records:
        assert f"| {name} |" in printed
    assert format_table(list(records.values())).count("\n") == len(records) + 1
