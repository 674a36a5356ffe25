"""MobileNetV1 as an int8 TFLite model, built here: Keras'
``MobileNet(weights=None)`` (random weights: they change no cycle count)
with a fixed batch of one, converted by the TFLite converter with full int8
quantization calibrated on a seeded random representative set.

    python benchmarks/mobilenet_v1.py [--alpha 1.0] [--resolution 224]

The model is cached under npukit's cache directory
(``$NPUKIT_CACHE_DIR``/models), keyed by the parameters, this file and the
TensorFlow version, and is not part of the repository.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SEED = 0
CALIBRATION_SAMPLES = 8


def _cache_path(alpha: float, resolution: int) -> Path:
    sys.path.insert(0, str(REPO / "compiler_plugin"))
    from npukit.cpu.archive_build import cache_dir
    import tensorflow as tf

    key = hashlib.sha256(Path(__file__).read_bytes() + f"{alpha}-{resolution}-{tf.__version__}".encode())
    return cache_dir() / "models" / f"mobilenet_v1_{alpha:g}_{resolution}_int8-{key.hexdigest()[:12]}.tflite"


def build(alpha: float = 1.0, resolution: int = 224) -> Path:
    """The cached .tflite, built when missing."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    path = _cache_path(alpha, resolution)
    if path.exists():
        return path
    tf.keras.utils.set_random_seed(SEED)
    # A batch of one: the classifier's reshape is then static (no SHAPE operator).
    inputs = tf.keras.Input(shape=(resolution, resolution, 3), batch_size=1)
    model = tf.keras.applications.MobileNet(weights=None, alpha=alpha, input_tensor=inputs)
    rng = np.random.default_rng(SEED)

    def representative():
        for _ in range(CALIBRATION_SAMPLES):
            yield [rng.uniform(-1.0, 1.0, (1, resolution, resolution, 3)).astype(np.float32)]

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    data = converter.convert()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--resolution", type=int, default=224)
    args = parser.parse_args()
    print(build(args.alpha, args.resolution))
    return 0


if __name__ == "__main__":
    sys.exit(main())
