"""``npukit tune`` and the tuning database: what a tune records is what the
next tuned compile uses, and every choice it measures computes TFLite's
arithmetic exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest

import npukit
from npukit.cli.main import main as cli_main
from npukit.cpu.kernel_choice import KernelChoice
from npukit.cpu.tuning_database import TunedLayer, TuningDatabase
from npukit.tuning.tuning_search import tune
from npukit.errors import NpukitError
from npukit.targets.cpu_presets import HOST
from support.oracles import TFLiteReference


def _layers(manifest: dict) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for export, entry in manifest["cpu_kernels"].items():
        if "layer" in entry:
            found.setdefault(entry["layer"], []).append(export)
    return found


def _is_convolution(key: str) -> bool:
    """Whether a layer key is a convolution's (the layers with choices)."""
    return key.split()[0] in ("conv", "fully_connected")


def test_database_choice_reaches_the_compile(shared_models, tmp_path, rng):
    model = shared_models / "resnet8_int8.onnx"
    first = npukit.compile(model, "host", "vmfb", tmp_path / "a", cpu_pipeline="tuned")
    layers = _layers(first.manifest)
    assert all(not e["tuned"] for e in first.manifest["cpu_kernels"].values() if "layer" in e)
    db = TuningDatabase(tmp_path / "tuning.json")
    forced = {}
    # The x86 forms (packed, direct) are choices of padded layers too (run from strips of their padded input).
    convolutions = [key for key in sorted(layers) if _is_convolution(key)]
    assert any("padding" in key for key in convolutions) and any("padding" not in key for key in convolutions)
    for i, key in enumerate(convolutions):
        forced[key] = KernelChoice(conv_form=("direct", "packed")[i % 2])
        db.record(HOST, key, TunedLayer(forced[key], {"x": 1.0}, "seconds", "test"))
    db.save()
    second = npukit.compile(model, "host", "vmfb", tmp_path / "b", cpu_pipeline="tuned", tuning_db=db.path)
    for key in convolutions:
        for export in layers[key]:
            entry = second.manifest["cpu_kernels"][export]
            assert entry["tuned"] and KernelChoice.from_json(entry["choice"]) == forced[key], entry
    reference = TFLiteReference(shared_models / "resnet8_int8.tflite", kernels="reference")
    x = rng.integers(-128, 128, (1, 32, 32, 3), dtype=np.int8)
    np.testing.assert_array_equal(npukit.run(second, x)[0], reference(x))


def test_unreadable_database_says_which_file_and_what_to_do(tmp_path):
    path = tmp_path / "tuning.json"
    path.write_text("{not json")
    with pytest.raises(NpukitError, match=r"tuning\.json: not a readable npukit tuning database.*delete it"):
        TuningDatabase(path)
    path.write_text(json.dumps({"format": 99, "sections": {}}))
    with pytest.raises(NpukitError, match="format 99"):
        TuningDatabase(path)


def test_host_tune_measures_every_layer_and_records_it(shared_models, tmp_path):
    path = tmp_path / "tuning.json"
    result = tune(shared_models / "kws_int8.onnx", "host", database=path, runs=3)
    assert result.unit == "seconds" and result.layers
    for layer in result.layers:
        assert all(m is not None and m > 0 for m in layer.measured), layer  # the hook saw each dispatch
        # The default first: the kernel's own rule, or lane-ordered weights for channel-last layers.
        assert layer.candidates[0] in (KernelChoice(), KernelChoice(weights="lanes"))
        assert layer.choice in layer.candidates
    recorded = TuningDatabase(path).choices(HOST)
    assert recorded == {layer.key: layer.choice for layer in result.layers}


def test_tune_command_refuses_an_unknown_target(shared_models, tmp_path, capsys):
    code = cli_main(["tune", str(shared_models / "kws_int8.onnx"), "--target", "no-such-board",
                     "--database", str(tmp_path / "t.json")])
    assert code == 1
    assert "unknown tuning target 'no-such-board'" in capsys.readouterr().err
    assert not (tmp_path / "t.json").exists()


@pytest.mark.slow
def test_board_tune_measures_both_weight_forms(shared_models, tmp_path):
    """On the Cortex-M4 every convolution is built with int8 and with int16
    weights; each build's outputs equal the host's (tune checks), and the
    winners, built once more, take no more instructions than the defaults."""
    path = tmp_path / "tuning.json"
    result = tune(shared_models / "kws_int8.onnx", "mps2-an386", database=path)
    assert result.unit == "instructions"
    convolutions = [r for r in result.layers if _is_convolution(r.key)]
    assert convolutions
    for layer in convolutions:
        assert [c.weights for c in layer.candidates] == ["int8", "int16"]
        assert all(m is not None and m > 0 for m in layer.measured), layer
        assert layer.measured[layer.best] == min(layer.measured)
    assert 0 < result.tuned_total <= result.default_total
    from npukit.targets.boards import get_board

    assert TuningDatabase(path).choices(get_board("mps2-an386").cpu) == {r.key: r.choice for r in result.layers}
