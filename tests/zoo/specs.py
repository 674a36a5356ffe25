"""What the zoo generates: architectures (a Keras builder, its options, the
input shape and the range of the seeded calibration data) and the forms each
is converted to (.tflite int8 per-channel or per-tensor, int8 with float
input/output, int16x8, float32; ONNX QDQ per-channel or per-tensor, float32).

Nothing here imports TensorFlow: the catalogue lists generated models from
these records and only builds a file when someone asks for its path.
"""

from __future__ import annotations

from dataclasses import dataclass

# Form -> (file format, arithmetic of the layers).
FORMS: dict[str, tuple[str, str]] = {
    "int8": ("tflite", "int8"),
    "int8-per-tensor": ("tflite", "int8"),
    "int8-float-io": ("tflite", "int8"),
    "int16x8": ("tflite", "int16x8"),
    "float32": ("tflite", "float32"),
    "qdq-per-channel": ("onnx", "int8"),
    "qdq-per-tensor": ("onnx", "int8"),
    "onnx-float32": ("onnx", "float32"),
}

DEFAULT_SEED = 20240611


@dataclass(frozen=True)
class Architecture:
    name: str
    family: str
    builder: str  # "module:function" under tests/zoo
    options: tuple[tuple[str, object], ...]
    input_shape: tuple[int, ...]  # without the batch dimension (1)
    input_range: tuple[float, float]  # the float inputs the calibration data spans
    forms: tuple[str, ...]
    description: str

    @property
    def keyword_options(self) -> dict[str, object]:
        return dict(self.options)


@dataclass(frozen=True)
class GeneratedModel:
    architecture: Architecture
    form: str
    seed: int = DEFAULT_SEED

    @property
    def name(self) -> str:
        return f"{self.architecture.name}-{self.form}"

    @property
    def format(self) -> str:
        return FORMS[self.form][0]

    @property
    def arithmetic(self) -> str:
        return FORMS[self.form][1]

    @property
    def family(self) -> str:
        return self.architecture.family

    @property
    def file_name(self) -> str:
        return f"{self.name}.{self.format}"


def _arch(name, family, builder, input_shape, input_range, forms, description, **options) -> Architecture:
    for form in forms:
        if form not in FORMS:
            raise ValueError(f"{name}: unknown form {form!r}; known: {', '.join(FORMS)}")
    return Architecture(name, family, builder, tuple(sorted(options.items())), tuple(input_shape),
                        input_range, tuple(forms), description)


F = "keras_families"
O = "keras_operator_models"

ARCHITECTURES: tuple[Architecture, ...] = (
    # DS-CNN keyword spotting, 49x10 MFCC features.
    _arch("ds_cnn_xs", "ds-cnn", f"{F}:ds_cnn", (49, 10, 1), (-3.0, 3.0),
          ("int8", "int8-float-io", "int16x8"), "DS-CNN, 32 filters, 3 blocks", filters=32, blocks=3),
    _arch("ds_cnn_s", "ds-cnn", f"{F}:ds_cnn", (49, 10, 1), (-3.0, 3.0),
          ("int8", "int8-per-tensor", "float32", "qdq-per-channel", "qdq-per-tensor", "onnx-float32"),
          "DS-CNN as MLPerf Tiny KWS: 64 filters, 4 blocks", filters=64, blocks=4),
    _arch("ds_cnn_m", "ds-cnn", f"{F}:ds_cnn", (49, 10, 1), (-3.0, 3.0), ("int8",),
          "DS-CNN, 96 filters, 5 blocks", filters=96, blocks=5),
    # MobileNetV1 (keras.applications).
    _arch("mobilenet_v1_025_96_gray", "mobilenet-v1", f"{F}:mobilenet_v1", (96, 96, 1), (0.0, 1.0),
          ("int8", "int8-per-tensor", "qdq-per-channel"), "MobileNetV1 alpha 0.25, 96x96 grayscale", alpha=0.25),
    _arch("mobilenet_v1_025_96_rgb", "mobilenet-v1", f"{F}:mobilenet_v1", (96, 96, 3), (0.0, 1.0),
          ("int8",), "MobileNetV1 alpha 0.25, 96x96 RGB (MLPerf Tiny visual wake words)", alpha=0.25),
    _arch("mobilenet_v1_050_128_rgb", "mobilenet-v1", f"{F}:mobilenet_v1", (128, 128, 3), (0.0, 1.0),
          ("int8",), "MobileNetV1 alpha 0.5, 128x128 RGB", alpha=0.5),
    # MobileNetV2.
    _arch("mobilenet_v2_035_96_rgb", "mobilenet-v2", f"{F}:mobilenet_v2", (96, 96, 3), (0.0, 1.0),
          ("int8",), "keras.applications MobileNetV2 alpha 0.35, 96x96 RGB", alpha=0.35),
    _arch("mobilenet_v2_mult_s", "mobilenet-v2", f"{F}:mobilenet_v2_multiplier", (64, 64, 3), (0.0, 1.0),
          ("int8", "int8-per-tensor", "float32", "qdq-per-channel", "qdq-per-tensor"),
          "MobileNetV2 blocks, width 8, a depthwise expansion with channel multiplier 2", width=8),
    _arch("mobilenet_v2_mult_m", "mobilenet-v2", f"{F}:mobilenet_v2_multiplier", (96, 96, 3), (0.0, 1.0),
          ("int8",), "MobileNetV2 blocks, width 16, a depthwise expansion with channel multiplier 2", width=16),
    # 1-D convolutions.
    _arch("conv1d_kws_s", "conv1d", f"{F}:conv1d_keywords", (49, 10), (-3.0, 3.0),
          ("int8", "float32", "qdq-per-channel"), "Conv1D keyword model, 32 filters, dilations 1, 2, 4",
          filters=32, dilations=(1, 2, 4)),
    _arch("conv1d_kws_m", "conv1d", f"{F}:conv1d_keywords", (98, 40), (-3.0, 3.0),
          ("int8",), "Conv1D keyword model over 98x40 features, 64 filters, dilations 1, 2, 4, 8",
          filters=64, dilations=(1, 2, 4, 8)),
    _arch("conv1d_tcn", "conv1d", f"{F}:conv1d_streaming", (64, 16), (-1.0, 1.0),
          ("int8", "int8-per-tensor"), "causal TCN, 16 filters, dilations 1, 2, 4, 8, residual additions",
          filters=16, dilations=(1, 2, 4, 8)),
    _arch("conv1d_tiny", "conv1d", f"{F}:conv1d_keywords", (16, 4), (-1.0, 1.0),
          ("int8",), "Conv1D with 4 filters (weights of a few dozen bytes), dilations 1, 2",
          filters=4, dilations=(1, 2), classes=3),
    # Dense autoencoders (anomaly detection).
    _arch("autoencoder_mlperf", "autoencoder", f"{F}:dense_autoencoder", (640,), (-2.0, 2.0),
          ("int8", "float32", "qdq-per-channel", "qdq-per-tensor"),
          "MLPerf Tiny anomaly detection: 640 -> 4x128 -> 8 -> 4x128 -> 640", hidden=128, layers_per_side=4),
    _arch("autoencoder_s", "autoencoder", f"{F}:dense_autoencoder", (640,), (-2.0, 2.0),
          ("int8", "int8-per-tensor"), "640 -> 64 -> 8 -> 64 -> 640", hidden=64, layers_per_side=1),
    # ResNets with strided 1x1 shortcuts.
    _arch("resnet8", "resnet", f"{F}:resnet", (32, 32, 3), (0.0, 1.0),
          ("int8", "int8-per-tensor", "float32", "qdq-per-channel"),
          "ResNet-8 as MLPerf Tiny image classification: stages 16, 32, 64", stages=(16, 32, 64)),
    _arch("resnet10_gray", "resnet", f"{F}:resnet", (32, 32, 1), (0.0, 1.0),
          ("int8",), "four stages 8, 16, 32, 64 on 32x32 grayscale", stages=(8, 16, 32, 64)),
    # Operators around convolutions.
    _arch("squeeze_excite", "operators", f"{O}:squeeze_excite_hardswish", (32, 32, 3), (0.0, 1.0),
          ("int8", "float32"), "PAD, hard-swish, squeeze-and-excitation (MEAN, LOGISTIC, MUL)", width=16),
    _arch("unet", "operators", f"{O}:unet", (32, 32, 1), (0.0, 1.0),
          ("int8",), "U-Net: MAX_POOL_2D, TRANSPOSE_CONV, CONCATENATION, RESIZE_NEAREST_NEIGHBOR, "
          "RESIZE_BILINEAR, LEAKY_RELU, TANH", width=8),
    _arch("slices_and_pools", "operators", f"{O}:slices_and_pools", (16, 16, 3), (-1.0, 1.0),
          ("int8",), "STRIDED_SLICE, AVERAGE_POOL_2D, SUB, CONCATENATION, RELU6, RESHAPE", width=8),
    # Biases far above the accumulator's scale.
    _arch("large_bias", "large-bias", f"{O}:large_bias", (16, 16, 4), (-0.01, 0.01),
          ("int8", "int8-per-tensor"), "inputs of about 0.01, kernels in [0.5, 1], biases of +-30",
          filters=8, bias=30.0),
)


def generated_models() -> tuple[GeneratedModel, ...]:
    return tuple(GeneratedModel(arch, form) for arch in ARCHITECTURES for form in arch.forms)


def generated_model(name: str) -> GeneratedModel:
    for model in generated_models():
        if model.name == name:
            return model
    raise KeyError(f"no generated zoo model named {name!r}; known: {', '.join(m.name for m in generated_models())}")
