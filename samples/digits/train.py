"""Trains the bundled sample model: a small int8 CNN for 8x8 handwritten digits.

The data is scikit-learn's bundled ``digits`` set (1797 images of 8x8 pixels,
values 0..16). The network is trained in float with plain numpy, exported to
ONNX and quantized to int8 in QDQ form with onnxruntime's static quantization
(per-channel weights, int8 activations, calibrated on training images).

    python samples/digits/train.py            # writes digits_int8.onnx, digits_test.npz here

Needs the ``train`` extra: ``pip install -e '.[train]'``. The trained model is
committed, so the demo does not train.

Network (NCHW, 25.6k MACs):
    image f32[1,1,8,8]
    -> Conv 3x3, 8 channels, pad 1 -> ReLU          [1,8,8,8]
    -> Conv 3x3, 16 channels, stride 2, pad 1 -> ReLU  [1,16,4,4]
    -> Flatten -> Gemm 256x10                        logits f32[1,10]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 0


# --- layers (forward and backward), NCHW, im2col -----------------------------


def im2col(x: np.ndarray, k: int, stride: int, pad: int) -> tuple[np.ndarray, int, int]:
    n, c, h, w = x.shape
    oh = (h + 2 * pad - k) // stride + 1
    ow = (w + 2 * pad - k) // stride + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    cols = np.empty((n, c, k, k, oh, ow), dtype=x.dtype)
    for i in range(k):
        for j in range(k):
            cols[:, :, i, j] = xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
    # rows: (n, oh, ow); columns: (c, k, k)
    return cols.transpose(0, 4, 5, 1, 2, 3).reshape(n * oh * ow, c * k * k), oh, ow


def col2im(cols: np.ndarray, shape: tuple, k: int, stride: int, pad: int, oh: int, ow: int) -> np.ndarray:
    n, c, h, w = shape
    cols = cols.reshape(n, oh, ow, c, k, k).transpose(0, 3, 4, 5, 1, 2)
    xp = np.zeros((n, c, h + 2 * pad, w + 2 * pad), dtype=cols.dtype)
    for i in range(k):
        for j in range(k):
            xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride] += cols[:, :, i, j]
    return xp[:, :, pad : pad + h, pad : pad + w]


class Conv:
    def __init__(self, rng, cin: int, cout: int, k: int = 3, stride: int = 1, pad: int = 1):
        self.k, self.stride, self.pad = k, stride, pad
        self.w = rng.normal(0, np.sqrt(2.0 / (cin * k * k)), (cout, cin, k, k)).astype(np.float32)
        self.b = np.zeros(cout, np.float32)

    def forward(self, x):
        self.x_shape = x.shape
        self.cols, self.oh, self.ow = im2col(x, self.k, self.stride, self.pad)
        out = self.cols @ self.w.reshape(len(self.b), -1).T + self.b
        n = x.shape[0]
        return out.reshape(n, self.oh, self.ow, -1).transpose(0, 3, 1, 2)

    def backward(self, g):
        cout = len(self.b)
        g2 = g.transpose(0, 2, 3, 1).reshape(-1, cout)
        self.gw = (g2.T @ self.cols).reshape(self.w.shape)
        self.gb = g2.sum(0)
        gcols = g2 @ self.w.reshape(cout, -1)
        return col2im(gcols, self.x_shape, self.k, self.stride, self.pad, self.oh, self.ow)

    def params(self):
        return [(self.w, "gw"), (self.b, "gb")]


class Dense:
    def __init__(self, rng, cin: int, cout: int):
        self.w = rng.normal(0, np.sqrt(1.0 / cin), (cout, cin)).astype(np.float32)
        self.b = np.zeros(cout, np.float32)

    def forward(self, x):
        self.x = x
        return x @ self.w.T + self.b

    def backward(self, g):
        self.gw = g.T @ self.x
        self.gb = g.sum(0)
        return g @ self.w

    def params(self):
        return [(self.w, "gw"), (self.b, "gb")]


class Net:
    def __init__(self, rng):
        self.conv1 = Conv(rng, 1, 8)
        self.conv2 = Conv(rng, 8, 16, stride=2)
        self.fc = Dense(rng, 16 * 4 * 4, 10)
        self.layers = [self.conv1, self.conv2, self.fc]

    def forward(self, x):
        self.a1 = self.conv1.forward(x)
        r1 = np.maximum(self.a1, 0)
        self.a2 = self.conv2.forward(r1)
        r2 = np.maximum(self.a2, 0)
        self.flat_shape = r2.shape
        return self.fc.forward(r2.reshape(len(x), -1))

    def backward(self, g):
        g = self.fc.backward(g).reshape(self.flat_shape)
        g = self.conv2.backward(g * (self.a2 > 0))
        self.conv1.backward(g * (self.a1 > 0))


def softmax_cross_entropy(logits, labels):
    z = logits - logits.max(1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(1, keepdims=True)
    loss = -np.log(p[np.arange(len(labels)), labels] + 1e-12).mean()
    g = p
    g[np.arange(len(labels)), labels] -= 1
    return loss, g / len(labels)


def train(x_train, y_train, epochs: int, rng) -> Net:
    net = Net(rng)
    state = {id(p): (np.zeros_like(p), np.zeros_like(p)) for layer in net.layers for p, _ in layer.params()}
    lr, b1, b2, step = 3e-3, 0.9, 0.999, 0
    for epoch in range(epochs):
        order = rng.permutation(len(x_train))
        for start in range(0, len(order), 32):
            idx = order[start : start + 32]
            loss, g = softmax_cross_entropy(net.forward(x_train[idx]), y_train[idx])
            net.backward(g)
            step += 1
            for layer in net.layers:
                for p, gname in layer.params():
                    grad = getattr(layer, gname)
                    m, v = state[id(p)]
                    m *= b1
                    m += (1 - b1) * grad
                    v *= b2
                    v += (1 - b2) * grad * grad
                    p -= lr * (m / (1 - b1**step)) / (np.sqrt(v / (1 - b2**step)) + 1e-8)
        if (epoch + 1) % 10 == 0:
            print(f"epoch {epoch + 1}: loss {loss:.4f}")
    return net


# --- export ---------------------------------------------------------------------


def to_onnx(net: Net):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [
        numpy_helper.from_array(net.conv1.w, "conv1.weight"),
        numpy_helper.from_array(net.conv1.b, "conv1.bias"),
        numpy_helper.from_array(net.conv2.w, "conv2.weight"),
        numpy_helper.from_array(net.conv2.b, "conv2.bias"),
        numpy_helper.from_array(net.fc.w, "fc.weight"),
        numpy_helper.from_array(net.fc.b, "fc.bias"),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "conv1.weight", "conv1.bias"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node(
            "Conv", ["r1", "conv2.weight", "conv2.bias"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]
        ),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Flatten", ["r2"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "digits",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="npukit-samples")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def quantize(float_path: Path, int8_path: Path, calibration: np.ndarray) -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter({"image": x[None]} for x in calibration)

        def get_next(self):
            return next(self.items, None)

    prepared = float_path.with_name(float_path.stem + "_prep.onnx")
    quant_pre_process(str(float_path), str(prepared))
    quantize_static(
        str(prepared),
        str(int8_path),
        Reader(),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QInt8,
        weight_type=QuantType.QInt8,
    )
    prepared.unlink()


def onnx_accuracy(path: Path, images: np.ndarray, labels: np.ndarray) -> float:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    hits = sum(int(np.argmax(sess.run(None, {"image": x[None]})[0]) == y) for x, y in zip(images, labels))
    return hits / len(labels)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Train and quantize the digits sample model.")
    parser.add_argument("--out-dir", type=Path, default=HERE, help="where to write the model and test set")
    parser.add_argument("--epochs", type=int, default=40)
    args = parser.parse_args(argv)

    import onnx
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]  # N,1,8,8 in [0,1]
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=SEED, stratify=y)

    rng = np.random.default_rng(SEED)
    net = train(x_train, y_train, args.epochs, rng)
    float_acc = float((np.argmax(net.forward(x_test), 1) == y_test).mean())
    print(f"float accuracy (numpy): {float_acc:.4f}")

    args.out_dir.mkdir(parents=True, exist_ok=True)
    float_path = args.out_dir / "digits_f32.onnx"
    int8_path = args.out_dir / "digits_int8.onnx"
    onnx.save(to_onnx(net), float_path)
    quantize(float_path, int8_path, x_train[:200])
    float_path.unlink()
    int8_acc = onnx_accuracy(int8_path, x_test, y_test)
    print(f"int8 accuracy (onnxruntime, QDQ): {int8_acc:.4f}")
    np.savez_compressed(args.out_dir / "digits_test.npz", images=x_test, labels=y_test)
    print(f"wrote {int8_path} and {args.out_dir / 'digits_test.npz'} ({len(y_test)} test images)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
