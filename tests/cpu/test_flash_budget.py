"""Weight forms within a flash budget (npukit/cpu/flash_budget.py): int8
weights by default, int16-widened ones where a tuning result chose them or
a budget allows, the layers that save most per byte first."""

from __future__ import annotations

import pytest

import npukit
from npukit.cpu.flash_budget import LayerForms, fit_budget
from npukit.cpu.kernel_choice import KernelChoice
from npukit.errors import TargetError

INT8, INT16 = KernelChoice(weights="int8"), KernelChoice(weights="int16")


def _layers() -> list[LayerForms]:
    # name, choice, tuned, MACs, int8 bytes, int16 bytes: gains (MACs per extra byte) 10, 100, 1; "d" has no int16 form.
    return [LayerForms("a", INT8, False, 10_000, 1200, 2200), LayerForms("b", INT8, False, 100_000, 1200, 2200),
            LayerForms("c", INT16, True, 1_000, 1200, 2200), LayerForms("d", KernelChoice(weights="taps"), False,
                                                                         50_000, 700, None)]


def test_without_a_budget_the_choices_stay():
    layers = _layers()
    outcome = fit_budget(layers, None)
    assert [x.choice.weights for x in layers] == ["int8", "int8", "int16", "taps"]
    assert outcome.total == 1200 + 1200 + 2200 + 700 and outcome.narrow_total == 4300 and outcome.widened == 1


@pytest.mark.parametrize("budget, forms", [
    (4300, ["int8", "int8", "int8", "taps"]),  # exactly the int8 blocks: the tuned layer is narrowed too
    (5299, ["int8", "int8", "int8", "taps"]),
    (5300, ["int8", "int8", "int16", "taps"]),  # the tuned choice fits: it stays
    (6300, ["int8", "int16", "int16", "taps"]),  # then the largest gain first
    (7300, ["int16", "int16", "int16", "taps"]),
])
def test_a_budget_widens_the_best_gains_that_fit(budget, forms):
    layers = _layers()
    outcome = fit_budget(layers, budget)
    assert [x.choice.weights for x in layers] == forms
    assert outcome.total <= budget and outcome.budget == budget


def test_a_budget_below_the_int8_blocks_is_refused_with_the_need():
    with pytest.raises(TargetError, match="below the 4,300 B the layer kernels' constants need with int8"):
        fit_budget(_layers(), 4299)


def test_the_board_build_widens_within_its_budget(shared_models, artifact_cache, tmp_path):
    """kws_int8 on Cortex-M4: by default no layer has int16 weights; the int8
    blocks' size as a budget keeps it so; a budget of the int16 blocks
    widens every convolution; one below the int8 blocks is an error and
    writes nothing."""
    model = shared_models / "kws_int8.tflite"
    default = artifact_cache(model, "cortex-m4", "static").manifest
    assert all(e.get("choice", {}).get("weights") != "int16" for e in default["cpu_kernels"].values())
    narrow = default["kernel_constants"]["with_int8_weights"]
    same = artifact_cache(model, "cortex-m4", "static", flash_budget=narrow).manifest["kernel_constants"]
    assert same["int16_layers"] == 0 and same["kernel_constants"] == narrow
    wide = artifact_cache(model, "cortex-m4", "static", flash_budget=10 * narrow).manifest
    convolutions = [e for e in wide["cpu_kernels"].values() if e.get("choice", {}).get("weights") == "int16"]
    assert len(convolutions) == wide["kernel_constants"]["int16_layers"] == 6  # the first, 4 pointwise, the classifier
    assert narrow < wide["kernel_constants"]["kernel_constants"] <= 10 * narrow
    out = tmp_path / "refused"
    with pytest.raises(TargetError, match="flash budget of 1,000 B is below"):
        npukit.compile(model, target="cortex-m4", output="static", out_dir=out, flash_budget=1000)
    assert not out.exists()


def test_a_budget_needs_the_tuned_pipeline(shared_models, tmp_path):
    with pytest.raises(TargetError, match="stock pipeline has none"):
        npukit.compile(shared_models / "kws_int8.tflite", target="cortex-m4", output="static", out_dir=tmp_path / "o",
                       cpu_pipeline="stock", flash_budget=100_000)
    with pytest.raises(TargetError, match="number of bytes"):
        npukit.compile(shared_models / "kws_int8.tflite", target="cortex-m4", output="static", out_dir=tmp_path / "o",
                       flash_budget=-1)
