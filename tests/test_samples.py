"""The bundled digits sample: the demo runs, and the training script trains."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np

import npukit

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "samples" / "digits"


def test_demo_prints_predictions_accuracy_and_timing(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SAMPLE / "demo.py"), "--out-dir", str(tmp_path)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"label \d -> \d", proc.stdout)
    accuracy = float(re.search(r"accuracy: ([\d.]+)%", proc.stdout).group(1))
    assert accuracy >= 95.0, proc.stdout  # onnxruntime gives 96.94% on the same model
    assert re.search(r"latency per inference: median [\d.]+ us", proc.stdout)
    # The deploy to mps2-an386 under QEMU, with its table.
    assert re.search(r"the board predicts \d for the first test image \(label \d\); its logits are the same as",
                     proc.stdout), proc.stdout
    for label in ("flash (text + rodata)", "RAM", "instructions per inference", "instructions per MAC"):
        assert label in proc.stdout


def test_bundled_model_is_int8_qdq():
    import onnx

    model = onnx.load(SAMPLE / "digits_int8.onnx")
    ops = {n.op_type for n in model.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear", "Conv", "Gemm"} <= ops
    weights = [i for i in model.graph.initializer if i.data_type == onnx.TensorProto.INT8]
    assert len(weights) >= 3, "conv and dense weights are stored as int8"


def test_training_script_produces_a_working_model(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SAMPLE / "train.py"), "--out-dir", str(tmp_path), "--epochs", "4"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    int8_acc = float(re.search(r"int8 accuracy \(onnxruntime, QDQ\): ([\d.]+)", proc.stdout).group(1))
    assert int8_acc > 0.85, proc.stdout
    data = np.load(tmp_path / "digits_test.npz")
    result = npukit.compile(tmp_path / "digits_int8.onnx", out_dir=tmp_path / "art")
    model = npukit.load(result)
    predictions = [int(np.argmax(model(x[None])[0])) for x in data["images"]]
    accuracy = float(np.mean(np.array(predictions) == data["labels"]))
    assert abs(accuracy - int8_acc) <= 0.01, (accuracy, int8_acc)
