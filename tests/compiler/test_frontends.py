"""Model formats: detection, ONNX, TFLite (read directly), MLIR text and bytecode."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import npukit
from npukit.frontends.model_format import ModelFormat, detect_format
from support.models import MLPERF_MODELS, random_inputs
from support.oracles import TFLiteReference
from support.onnx_models import add_model

BIN = Path(sys.executable).parent


def test_detects_formats_by_content(tmp_path, shared_models):
    assert detect_format(shared_models / "kws_int8.onnx") is ModelFormat.ONNX
    assert detect_format(shared_models / "kws_int8.tflite") is ModelFormat.TFLITE
    renamed = tmp_path / "model.bin"
    renamed.write_bytes((shared_models / "kws_int8.tflite").read_bytes())
    assert detect_format(renamed) is ModelFormat.TFLITE, "the TFL3 identifier wins over the name"
    text = tmp_path / "m.mlir"
    text.write_text("module {}\n")
    assert detect_format(text) is ModelFormat.MLIR
    bc = tmp_path / "m.anything"
    bc.write_bytes(b"ML\xefR" + b"\x00" * 16)
    assert detect_format(bc) is ModelFormat.MLIR_BYTECODE


def test_tflite_model_read_directly(shared_models, artifact_cache, rng):
    """The .tflite file, read from its flatbuffer, runs exactly like TFLite's
    reference kernels (the default, tuned CPU pipeline)."""
    model = next(m for m in MLPERF_MODELS if m.name == "kws_int8")
    result = artifact_cache(shared_models / "kws_int8.tflite")
    assert result.manifest["model"]["format"] == "tflite"
    loaded = npukit.load(result)
    reference = TFLiteReference(shared_models / "kws_int8.tflite", kernels="reference")
    for x in random_inputs(model, reference.input_shape, rng, 4):
        np.testing.assert_array_equal(loaded(x)[0], reference(x))


def test_tflite_import_needs_no_tensorflow(shared_models):
    """Importing a .tflite model loads neither TensorFlow nor a converter."""
    code = ("import sys; from npukit.frontends import import_model; "
            f"m = import_model({str(shared_models / 'resnet8_int8.tflite')!r}); "
            "print(sorted(n for n in sys.modules if n.split('.')[0] in ('tensorflow', 'tf2onnx', 'keras')))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


@pytest.fixture(scope="module")
def add_mlir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("add")
    onnx_path = add_model(d / "add.onnx")
    out = d / "add.mlir"
    subprocess.run([str(BIN / "iree-import-onnx"), str(onnx_path), "-o", str(out)], check=True)
    return out


def test_mlir_text_input_reads_signature_from_mlir(add_mlir, tmp_path):
    result = npukit.compile(add_mlir, out_dir=tmp_path / "out")
    (entry,) = result.entry_points
    assert entry.name == "single_op"
    assert [(t.shape, t.dtype) for t in entry.inputs] == [([2, 3], "float32"), ([2, 3], "float32")]
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    (c,) = npukit.run(result, a, a * 10)
    np.testing.assert_array_equal(c, a * 11)


def test_mlir_bytecode_input(add_mlir, tmp_path):
    from iree.compiler import ir

    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse(add_mlir.read_text())
        bc = tmp_path / "add.mlirbc"
        with bc.open("wb") as f:
            module.operation.write_bytecode(f)
    result = npukit.compile(bc, out_dir=tmp_path / "out")
    assert result.manifest["model"]["format"] == "mlirbc"
    a = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(npukit.run(result, a, a)[0], 2 * a)
