"""Keras models built around the operators that surround convolutions in
real models (squeeze-and-excitation, U-Net decoders, slicing, pooling), and a
model whose biases are large next to its accumulators' scale.

The operator each construct becomes in a .tflite file is the converter's
choice; the zoo's tests read the files to check that every operator is there.
"""

from __future__ import annotations


def _input(shape: tuple[int, ...]):
    import keras

    return keras.Input(shape, batch_size=1, name="input")


def squeeze_excite_hardswish(input_shape: tuple[int, ...], width: int, classes: int = 10):
    """A MobileNetV3-style network: explicit zero padding before a strided
    convolution, hard-swish activations, squeeze-and-excitation (global mean,
    two dense layers, logistic gate multiplied onto the features)."""
    import keras
    from keras import layers

    inputs = _input(input_shape)
    x = layers.ZeroPadding2D(1)(inputs)  # not SAME's (0, 1): stays a PAD
    x = layers.Conv2D(width, 3, strides=2, padding="valid")(x)
    x = layers.Activation("hard_swish")(x)
    for _ in range(2):
        y = layers.DepthwiseConv2D(3, padding="same")(x)
        y = layers.Activation("hard_swish")(y)
        squeeze = layers.GlobalAveragePooling2D(keepdims=True)(y)
        squeeze = layers.Dense(max(width // 4, 4), activation="relu")(squeeze)
        squeeze = layers.Dense(width, activation="sigmoid")(squeeze)
        y = layers.Multiply()([y, squeeze])
        y = layers.Conv2D(width, 1)(y)
        x = layers.Add()([x, y])
    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(classes, activation="softmax")(x)
    return keras.Model(inputs, outputs, name="squeeze_excite_hardswish")


def unet(input_shape: tuple[int, ...], width: int):
    """A small U-Net for segmentation: max-pooling encoder, a decoder that
    upsamples with a transposed convolution, nearest-neighbour and bilinear
    resizing, skip connections joined by concatenation, leaky ReLU, and a
    tanh output."""
    import keras
    import tensorflow as tf
    from keras import layers

    height, width_px = int(input_shape[0]), int(input_shape[1])
    inputs = _input(input_shape)
    e1 = layers.Conv2D(width, 3, padding="same", activation="relu")(inputs)
    e2 = layers.Conv2D(2 * width, 3, padding="same", activation="relu")(layers.MaxPooling2D(2)(e1))
    e3 = layers.Conv2D(4 * width, 3, padding="same", activation="relu")(layers.MaxPooling2D(2)(e2))
    d2 = layers.Conv2DTranspose(2 * width, 3, strides=2, padding="same")(e3)
    d2 = layers.LeakyReLU(negative_slope=0.2)(layers.Concatenate()([d2, e2]))
    d2 = layers.Conv2D(2 * width, 3, padding="same")(d2)
    d1 = layers.Lambda(
        lambda t: tf.image.resize(t, (height, width_px), method="nearest"), name="resize_nearest"
    )(d2)
    d1 = layers.Concatenate()([d1, e1])
    d1 = layers.Conv2D(width, 3, padding="same")(d1)
    d1 = layers.LeakyReLU(negative_slope=0.2)(d1)
    coarse = layers.Conv2D(1, 1)(e3)
    coarse = layers.Lambda(
        lambda t: tf.image.resize(t, (height, width_px), method="bilinear"), name="resize_bilinear"
    )(coarse)
    fine = layers.Conv2D(1, 1)(d1)
    outputs = layers.Activation("tanh")(layers.Add()([fine, coarse]))
    return keras.Model(inputs, outputs, name="unet")


def slices_and_pools(input_shape: tuple[int, ...], width: int, classes: int = 6):
    """Strided slicing, average pooling, a difference of two branches, a
    clamp to [0, 6] that stands alone (after a concatenation, where no layer
    can absorb it), a reshape and a dense classifier."""
    import keras
    from keras import layers

    inputs = _input(input_shape)
    x = layers.Conv2D(width, 3, padding="same", activation="relu")(inputs)
    even = layers.Lambda(lambda t: t[:, ::2, ::2, :], name="even_pixels")(x)
    pooled = layers.AveragePooling2D(2)(x)
    difference = layers.Subtract()([pooled, even])
    joined = layers.Concatenate()([difference, even])
    joined = layers.ReLU(6.0)(joined)
    y = layers.Conv2D(width, 3, strides=2, padding="same")(joined)
    y = layers.Reshape((int(y.shape[1]) * int(y.shape[2]), width))(y)
    y = layers.Reshape((-1,))(y)
    outputs = layers.Dense(classes, activation="softmax")(y)
    return keras.Model(inputs, outputs, name="slices_and_pools")


def large_bias(input_shape: tuple[int, ...], filters: int, bias: float, classes: int = 4):
    """Layers whose biases dwarf their accumulators' scale: with inputs of
    magnitude about 0.01 (an input scale near 8e-5) and kernels up to 1 (a
    weight scale near 1/127), a bias of 30 is about 5e7 accumulator units,
    above 2**24, where float32 no longer holds every integer. A convolution
    and a fully connected layer over the whole input carry such biases (of
    alternating signs); the latter's 1024 positive weights sum enough of the
    input for the output to follow it."""
    import keras
    import numpy as np
    from keras import initializers, layers

    def alternating(count: int):
        return initializers.Constant(np.where(np.arange(count) % 2 == 0, bias, -bias).astype(np.float32))

    inputs = _input(input_shape)
    positive = initializers.RandomUniform(0.5, 1.0)
    x = layers.Conv2D(filters, 3, padding="same", kernel_initializer=positive,
                      bias_initializer=alternating(filters))(inputs)
    x = layers.GlobalMaxPooling2D()(x)
    y = layers.Flatten()(inputs)
    y = layers.Dense(filters, kernel_initializer=positive, bias_initializer=alternating(filters))(y)
    x = layers.Concatenate()([x, y])
    outputs = layers.Dense(classes)(x)
    return keras.Model(inputs, outputs, name="large_bias")
