"""Keras builders of the model families people deploy to microcontrollers.

Each builder takes the input shape (without the batch dimension, which is
fixed to 1 as on a board) and the family's size options, and returns an
untrained ``keras.Model``. Keras is imported inside the functions so that
reading the zoo's catalogue never loads TensorFlow.
"""

from __future__ import annotations


def _input(shape: tuple[int, ...]):
    import keras

    return keras.Input(shape, batch_size=1, name="input")


def ds_cnn(input_shape: tuple[int, ...], filters: int, blocks: int, classes: int = 12):
    """The MLPerf Tiny keyword-spotting DS-CNN: a 10x4 strided convolution,
    depthwise-separable blocks with batch normalization, average pooling and a
    classifier (MLPerf's model is filters=64, blocks=4)."""
    import keras
    from keras import layers

    inputs = _input(input_shape)
    x = layers.Conv2D(filters, (10, 4), strides=(2, 2), padding="same")(inputs)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    for _ in range(blocks):
        x = layers.DepthwiseConv2D(3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.ReLU()(x)
        x = layers.Conv2D(filters, 1)(x)
        x = layers.BatchNormalization()(x)
        x = layers.ReLU()(x)
    x = layers.AveragePooling2D(pool_size=(int(x.shape[1]), int(x.shape[2])))(x)
    x = layers.Flatten()(x)
    x = layers.Dense(classes)(x)
    outputs = layers.Softmax()(x)
    return keras.Model(inputs, outputs, name="ds_cnn")


def mobilenet_v1(input_shape: tuple[int, ...], alpha: float, classes: int = 4):
    """keras.applications' MobileNetV1 (the MLPerf Tiny visual wake words
    model is alpha=0.25 at 96x96x3), untrained, with a small classifier."""
    import keras

    return keras.applications.MobileNet(
        input_tensor=_input(input_shape), alpha=alpha, weights=None, classes=classes, dropout=0.0
    )


def mobilenet_v2(input_shape: tuple[int, ...], alpha: float, classes: int = 4):
    """keras.applications' MobileNetV2, untrained, with a small classifier."""
    import keras

    return keras.applications.MobileNetV2(input_tensor=_input(input_shape), alpha=alpha, weights=None, classes=classes)


def mobilenet_v2_multiplier(input_shape: tuple[int, ...], width: int, classes: int = 10):
    """A small MobileNetV2: inverted residual blocks (1x1 expansion, 3x3
    depthwise, 1x1 projection, ReLU6, residual additions), whose first block
    expands with a depthwise convolution of channel multiplier 2 instead of a
    1x1 convolution."""
    import keras
    from keras import layers

    def conv_bn(x, channels: int, kernel: int = 1, strides: int = 1, relu6: bool = True):
        x = layers.Conv2D(channels, kernel, strides=strides, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        return layers.ReLU(6.0)(x) if relu6 else x

    def depthwise_bn(x, strides: int = 1, multiplier: int = 1):
        x = layers.DepthwiseConv2D(3, strides=strides, padding="same", depth_multiplier=multiplier, use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        return layers.ReLU(6.0)(x)

    def inverted_residual(x, expansion: int, channels: int, strides: int):
        inputs = x
        x = conv_bn(x, int(x.shape[-1]) * expansion)
        x = depthwise_bn(x, strides)
        x = conv_bn(x, channels, relu6=False)
        if strides == 1 and int(inputs.shape[-1]) == channels:
            x = layers.Add()([inputs, x])
        return x

    inputs = _input(input_shape)
    x = conv_bn(inputs, width, kernel=3, strides=2)
    x = depthwise_bn(x, multiplier=2)
    x = conv_bn(x, width, relu6=False)
    for expansion, channels, repeats, strides in ((4, width, 2, 2), (4, 2 * width, 2, 2), (4, 4 * width, 2, 2)):
        for i in range(repeats):
            x = inverted_residual(x, expansion, channels, strides if i == 0 else 1)
    x = conv_bn(x, 8 * width)
    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(classes, activation="softmax")(x)
    return keras.Model(inputs, outputs, name="mobilenet_v2_multiplier")


def conv1d_keywords(input_shape: tuple[int, ...], filters: int, dilations: tuple[int, ...], classes: int = 12):
    """A 1-D convolutional keyword model over (time, features): stacked
    dilated Conv1D layers, global average pooling over time, a classifier."""
    import keras
    from keras import layers

    inputs = _input(input_shape)
    x = inputs
    for dilation in dilations:
        x = layers.Conv1D(filters, 3, dilation_rate=dilation, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.ReLU()(x)
    x = layers.GlobalAveragePooling1D()(x)
    outputs = layers.Dense(classes, activation="softmax")(x)
    return keras.Model(inputs, outputs, name="conv1d_keywords")


def conv1d_streaming(input_shape: tuple[int, ...], filters: int, dilations: tuple[int, ...], classes: int = 4):
    """A temporal convolutional network as streamed on a microcontroller:
    causal dilated Conv1D layers with residual additions; the output is the
    last time step's class scores."""
    import keras
    from keras import layers

    inputs = _input(input_shape)
    x = layers.Conv1D(filters, 1)(inputs)
    for dilation in dilations:
        y = layers.Conv1D(filters, 3, dilation_rate=dilation, padding="causal", activation="relu")(x)
        x = layers.Add()([x, y])
    x = layers.Conv1D(classes, 1)(x)
    outputs = layers.Cropping1D((int(x.shape[1]) - 1, 0))(x)
    return keras.Model(inputs, outputs, name="conv1d_streaming")


def dense_autoencoder(input_shape: tuple[int, ...], hidden: int, layers_per_side: int, bottleneck: int = 8):
    """The MLPerf Tiny anomaly-detection autoencoder: Dense + batch norm +
    ReLU layers 640 -> hidden ... -> bottleneck -> ... hidden -> 640
    (MLPerf's model is hidden=128, layers_per_side=4)."""
    import keras
    from keras import layers

    def dense_bn_relu(x, units: int):
        x = layers.Dense(units)(x)
        x = layers.BatchNormalization()(x)
        return layers.ReLU()(x)

    inputs = _input(input_shape)
    x = inputs
    for _ in range(layers_per_side):
        x = dense_bn_relu(x, hidden)
    x = dense_bn_relu(x, bottleneck)
    for _ in range(layers_per_side):
        x = dense_bn_relu(x, hidden)
    outputs = layers.Dense(int(input_shape[-1]))(x)
    return keras.Model(inputs, outputs, name="dense_autoencoder")


def resnet(input_shape: tuple[int, ...], stages: tuple[int, ...], classes: int = 10):
    """A CIFAR-style ResNet (MLPerf Tiny's ResNet-8 is stages=(16, 32, 64)):
    a 3x3 stem, one residual block per stage, stride 2 from the second stage
    on with a strided 1x1 convolution on the shortcut, average pooling, a
    classifier."""
    import keras
    from keras import layers

    def conv_bn(x, channels: int, kernel: int, strides: int):
        x = layers.Conv2D(channels, kernel, strides=strides, padding="same")(x)
        return layers.BatchNormalization()(x)

    inputs = _input(input_shape)
    x = layers.ReLU()(conv_bn(inputs, stages[0], 3, 1))
    for index, channels in enumerate(stages):
        strides = 1 if index == 0 else 2
        y = layers.ReLU()(conv_bn(x, channels, 3, strides))
        y = conv_bn(y, channels, 3, 1)
        shortcut = x if strides == 1 and int(x.shape[-1]) == channels else conv_bn(x, channels, 1, strides)
        x = layers.ReLU()(layers.Add()([shortcut, y]))
    x = layers.AveragePooling2D(pool_size=(int(x.shape[1]), int(x.shape[2])))(x)
    x = layers.Flatten()(x)
    outputs = layers.Dense(classes, activation="softmax")(x)
    return keras.Model(inputs, outputs, name="resnet")
