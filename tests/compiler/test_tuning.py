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
        # The default first: the kernel's own rule, or lane-ordered weights for channel-last layers (in the
        # row-taps form where it fits).
        assert layer.candidates[0] in (KernelChoice(), KernelChoice(weights="lanes"),
                                       KernelChoice(weights="lanes", conv_form="rows"))
        assert layer.choice in layer.candidates
    recorded = TuningDatabase(path).choices(HOST)
    assert recorded == {layer.key: layer.choice for layer in result.layers}


def test_tune_command_refuses_an_unknown_target(shared_models, tmp_path, capsys):
    code = cli_main(["tune", str(shared_models / "kws_int8.onnx"), "--target", "no-such-board",
                     "--database", str(tmp_path / "t.json")])
    assert code == 1
    assert "unknown tuning target 'no-such-board'" in capsys.readouterr().err
    assert not (tmp_path / "t.json").exists()


def _three_convolutions(path):
    """A padded 3x3 layer, a strided first layer and a pointwise layer, side by side."""
    from kernels.layer_sweeps import RELU, RELU6, SAME, VALID, _few_branches
    from support.tflite_builder import build_model

    build_model(_few_branches(np.random.default_rng(23), [
        # in_c, out_c, (h, w), kernel, stride, padding, activation, per_channel, in zp, out zp, multiplier
        (8, 16, (10, 10), (3, 3), (1, 1), SAME, RELU, True, -128, -128, None),
        (3, 8, (16, 16), (3, 3), (2, 2), SAME, RELU6, True, 0, -128, None),
        (16, 24, (8, 8), (1, 1), (1, 1), VALID, RELU6, True, -128, 5, None),
    ]), path)
    return path


@pytest.mark.slow
def test_board_tune_measures_both_weight_forms(tmp_path):
    """On the Cortex-M4 every convolution is built with int8 and with int16
    weights; each build's outputs equal the host's (tune checks), and the
    winners, built once more, take no more instructions than the defaults."""
    path = tmp_path / "tuning.json"
    result = tune(_three_convolutions(tmp_path / "three.tflite"), "mps2-an386", database=path)
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


def _entries_by_round(manifest: dict) -> tuple[dict[str, list[KernelChoice]], int]:
    """Layer key -> its candidates (from any of its dispatches; the longest
    list), and the number of rounds the tuner would build."""
    found: dict[str, list[KernelChoice]] = {}
    for entry in manifest["cpu_kernels"].values():
        if "layer" in entry:
            cands = [KernelChoice.from_json(c) for c in entry["candidates"]]
            if len(cands) > len(found.get(entry["layer"], [])):
                found[entry["layer"]] = cands
    return found, max((len(c) for c in found.values()), default=0)


@pytest.mark.parametrize("name", ["resnet8_int8", "kws_int8"])
def test_every_choice_a_tuning_entry_can_name_computes_tflite_arithmetic(shared_models, tmp_path, rng, name):
    """Each kind of entry the tuner can write (every candidate of every
    layer: lane-ordered, int8 with the kernel's rule, packed and direct on
    the host), read back from a database, on padded 3x3, strided, 1x1,
    residual (resnet8) and depthwise (kws) layers: 0 LSB against TFLite's
    reference kernels on random inputs and at both ends of int8, twice on
    the same loaded model."""
    model = shared_models / f"{name}.tflite"
    first = npukit.compile(model, "host", "vmfb", tmp_path / "r0", cpu_pipeline="tuned",
                           tuning_db=tmp_path / "none.json")
    layers, rounds = _entries_by_round(first.manifest)
    kinds = {key.split()[0] for key in layers}
    assert rounds > 1 and ("conv" in kinds) and any("padding" in key for key in layers)
    reference = TFLiteReference(model, kernels="reference")
    shape, dtype = reference.input_shape, np.int8
    inputs = [rng.integers(-128, 128, shape, dtype=dtype) for _ in range(2)]
    inputs += [np.full(shape, -128, dtype), np.full(shape, 127, dtype)]
    expected = [reference(x) for x in inputs]
    for r in range(1, rounds):
        db = TuningDatabase(tmp_path / f"tuning{r}.json")
        chosen = {key: cands[r] for key, cands in layers.items() if r < len(cands)}
        for key, choice in chosen.items():
            db.record(HOST, key, TunedLayer(choice, {choice.describe(): 1.0}, "seconds", "test"))
        db.save()
        built = npukit.compile(model, "host", "vmfb", tmp_path / f"r{r}", cpu_pipeline="tuned", tuning_db=db.path)
        entries = [e for e in built.manifest["cpu_kernels"].values() if e.get("layer") in chosen]
        for e in entries:  # the entry runs, or (another layer of its key has other candidates) is refused, saying so
            assert (e["tuned"] and KernelChoice.from_json(e["choice"]) == chosen[e["layer"]]) or e["refused"], e
        assert {e["layer"] for e in entries if e["tuned"]} == set(chosen), r
        loaded = npukit.load(built)
        for x, want in zip(inputs, expected):
            for _ in range(2):
                np.testing.assert_array_equal(np.asarray(loaded(x)[0]).reshape(want.shape), want,
                                              err_msg=f"round {r}: {sorted(c.describe() for c in chosen.values())}")


def test_entries_of_other_kernel_code_are_not_used(shared_models, tmp_path):
    """Entries another npukit's kernels measured (another checkout, an
    older release, or entries without the key) name choices that code ran:
    a compile leaves them out and says so."""
    model = shared_models / "resnet8_int8.tflite"
    first = npukit.compile(model, "host", "vmfb", tmp_path / "a", cpu_pipeline="tuned", tuning_db=tmp_path / "x.json")
    layers, _ = _entries_by_round(first.manifest)
    path = tmp_path / "tuning.json"
    db = TuningDatabase(path)
    for i, (key, cands) in enumerate(sorted(layers.items())):
        db.record(HOST, key, TunedLayer(cands[-1], {"x": 1.0}, "seconds", "old", kernels="0123456789abcdef"))
    db.save()
    data = json.loads(path.read_text())
    first_key = sorted(layers)[0]
    section = next(iter(data["sections"]))
    del data["sections"][section][first_key]["kernels"]  # an entry written before entries carried the key
    path.write_text(json.dumps(data))
    assert TuningDatabase(path).choices(HOST) == {}
    said: list[str] = []
    second = npukit.compile(model, "host", "vmfb", tmp_path / "b", cpu_pipeline="tuned", tuning_db=path,
                            progress=said.append)
    assert not any(e.get("tuned") for e in second.manifest["cpu_kernels"].values())
    note = f"{len(layers)} tuning entries for host: "
    assert any(note in n and "other kernel code" in n and "0123456789abcdef" in n for n in said), said
    assert any("other kernel code" in n for n in second.manifest["warnings"]), second.manifest["warnings"]
    # Entries of this npukit's kernels are taken.
    db = TuningDatabase(path)
    db.record(HOST, first_key, TunedLayer(layers[first_key][-1], {"x": 1.0}, "seconds", "now"))
    db.save()
    assert TuningDatabase(path).choices(HOST) == {first_key: layers[first_key][-1]}


def test_a_choice_outside_the_layers_candidates_is_refused_with_the_reason(shared_models, tmp_path, rng):
    """The database may name any choice (written by hand, by another
    target's tune, or for another layer of the same key): one that is not
    among this layer's candidates is refused, the manifest says why, and the
    layer runs on its default."""
    model = shared_models / "resnet8_int8.tflite"
    first = npukit.compile(model, "host", "vmfb", tmp_path / "a", cpu_pipeline="tuned", tuning_db=tmp_path / "x.json")
    layers, _ = _entries_by_round(first.manifest)
    db = TuningDatabase(tmp_path / "tuning.json")
    outside = {}
    for key, cands in layers.items():
        # int16 weights are a DSP core's form, tap-ordered ones a DSP depthwise form: neither runs on the host.
        outside[key] = next(c for c in (KernelChoice(weights="int16"), KernelChoice(weights="taps"),
                                        KernelChoice(weights="int16", conv_form="direct")) if c not in cands)
        db.record(HOST, key, TunedLayer(outside[key], {"x": 1.0}, "seconds", "test"))
    db.save()
    second = npukit.compile(model, "host", "vmfb", tmp_path / "b", cpu_pipeline="tuned", tuning_db=db.path)
    for export, entry in second.manifest["cpu_kernels"].items():
        if "layer" not in entry:
            continue
        assert not entry["tuned"] and entry["choice"] == entry["candidates"][0], (export, entry)
        assert entry["refused"].startswith(f"tuned choice '{outside[entry['layer']].describe()}' refused"), entry
    reference = TFLiteReference(model, kernels="reference")
    x = rng.integers(-128, 128, reference.input_shape, dtype=np.int8)
    np.testing.assert_array_equal(np.asarray(npukit.run(second, x)[0]).reshape(reference(x).shape), reference(x))


def test_a_candidate_counts_only_where_every_dispatch_ran_it_and_was_timed():
    """A round's build may name its dispatches otherwise or run a layer on
    its default: such a round measures nothing for the candidate (a missing
    timing used to count as 0 s, so the candidate won)."""
    from npukit.tuning.tuning_search import _measured

    lanes, packed = KernelChoice(weights="lanes"), KernelChoice(conv_form="packed")
    manifest = {"cpu_kernels": {"d0": {"layer": "k", "choice": packed.to_json()},
                                "d1": {"layer": "k", "choice": packed.to_json()}}}
    assert _measured({"d0": 1.0, "d1": 2.0}, manifest, ["d0", "d1"], packed) == 3.0
    assert _measured({"d0": 1.0}, manifest, ["d0", "d1"], packed) == float("inf")  # d1 not timed
    assert _measured({"d0": 1.0, "d1": 2.0}, manifest, ["d0", "d1"], lanes) == float("inf")  # ran packed
    assert _measured({"d0": 1.0, "d1": 2.0}, {"cpu_kernels": {}}, ["d0", "d1"], packed) == float("inf")


def test_host_tune_records_nothing_when_a_round_computes_other_outputs(shared_models, tmp_path, monkeypatch):
    """Every host round's build must compute the defaults' outputs (on the
    timing input and at both ends of int8) before any timing is recorded:
    here round 1's outputs are made to differ by one LSB."""
    from pathlib import Path

    from npukit.runtime import binding

    init, call = binding.NpukitRuntimeModel.__init__, binding.NpukitRuntimeModel.__call__

    def marked_init(self, result, *args, **kwargs):
        init(self, result, *args, **kwargs)
        self.round_name = Path(result.directory).name

    def perturbed_call(self, *arrays):
        outputs = call(self, *arrays)
        if self.round_name == "round1":
            outputs[0].reshape(-1)[0] ^= 1
        return outputs

    monkeypatch.setattr(binding.NpukitRuntimeModel, "__init__", marked_init)
    monkeypatch.setattr(binding.NpukitRuntimeModel, "__call__", perturbed_call)
    path = tmp_path / "tuning.json"
    with pytest.raises(NpukitError, match="round 1's build computes other outputs than the defaults'"):
        tune(shared_models / "kws_int8.tflite", "host", database=path, runs=1)
    assert not path.exists()
