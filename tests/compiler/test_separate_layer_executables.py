"""Layers of equal shape whose constants differ: IREE shares one executable
between them (constants at run-time offsets, which neither the NPU nor the
packed CPU kernels can take); the tuned and NPU compiles give each layer its
own executable again. Their results are checked in kernels/test_layer_sweeps.py
(the 'repeated_layers' sweep)."""

from __future__ import annotations

import pytest

import npukit
from kernels.layer_sweeps import repeated_layers_sweep
from support.tflite_builder import build_model


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("repeated") / "repeated.tflite"
    build_model(repeated_layers_sweep(), path)
    return path


def _layer_calls(manifest) -> list[int]:
    return [d["calls"] for d in manifest["dispatches"] if d["macs"]]


def test_iree_shares_the_executables(model, tmp_path):
    stock = npukit.compile(model, cpu_pipeline="stock", out_dir=tmp_path / "stock")
    assert _layer_calls(stock.manifest) == [3, 3, 3, 3]


@pytest.mark.parametrize("target, output", [("host", "vmfb"), ("mynpu", "embedded")])
def test_each_layer_gets_its_own(model, tmp_path, target, output):
    result = npukit.compile(model, target=target, output=output, out_dir=tmp_path / target)
    assert _layer_calls(result.manifest) == [1] * 12
    names = [d["name"] for d in result.manifest["dispatches"] if d["macs"]]
    assert len(set(names)) == 12
    taken = [k for k, v in result.manifest["cpu_kernels"].items() if "operation" in v]
    if target == "mynpu":
        taken = [r["name"] for r in result.manifest["mynpu"]["dispatches"] if r["device"] == "mynpu"]
    assert sorted(taken) == sorted(names)
