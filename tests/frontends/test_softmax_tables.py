"""The int8 SOFTMAX's table of exponentials, cut after the first zero of its
zero tail, reads what the whole table holds at every index once the index is
clamped; the Q12.19 shares of the sum computed from its entries equal the
shares of the whole table (the second table they replace)."""

import numpy as np
import pytest

from npukit.frontends.tflite.softmax import without_zero_tail
from npukit.quantization.fixed_point_reference import rdbpot
from npukit.quantization.tflite_prepare import ACCUMULATION_INTEGER_BITS, softmax_exponentials, softmax_parameters


@pytest.mark.parametrize("beta,scale", [(1.0, 0.0625), (1.0, 0.11), (0.5, 0.02), (1.0, 1 / 256), (2.0, 0.3),
                                        (1.0, 0.14469251)])
def test_cut_table_reads_the_whole_table(beta, scale):
    exponentials = softmax_exponentials(softmax_parameters(beta, scale))
    cut, last = without_zero_tail(exponentials)
    index = np.arange(256) if last is None else np.minimum(np.arange(256), last)
    if last is None:
        assert np.array_equal(cut, exponentials)
    else:
        assert len(cut) == last + 1 < len(exponentials) and cut[last] == 0
    assert np.array_equal(cut[index], exponentials)
    shares = [rdbpot(int(e), ACCUMULATION_INTEGER_BITS) for e in exponentials]
    assert [rdbpot(int(cut[i]), ACCUMULATION_INTEGER_BITS) for i in index] == shares


def test_kws_table_is_cut():
    """kws_int8's softmax (input scale 0.1447): 126 of 256 entries kept."""
    cut, last = without_zero_tail(softmax_exponentials(softmax_parameters(1.0, 0.14469251)))
    assert last == 125 and cut.nbytes == 504


def test_a_table_without_a_zero_tail_is_kept():
    table = np.arange(1, 257, dtype=np.int32)
    cut, last = without_zero_tail(table)
    assert last is None and cut is table
    cut, last = without_zero_tail(np.zeros(256, np.int32))
    assert last == 0 and list(cut) == [0]


# (beta, input scale): a table that never underflows, one cut at about 80
# entries, one cut at about 40.
_COMPUTED = [(1.0, 0.02), (1.0, 0.11), (2.0, 0.3)]


def test_computed_exponentials_equal_tflite_at_every_difference(tmp_path):
    """A softmax of 2 elements has fewer elements than its table entries, so
    it computes its exponentials (frontends/tflite/softmax.py): every
    difference 0..255 of the two inputs gives TFLite's reference outputs."""
    import npukit
    from support.tflite_builder import Branch, Spec, build_model, run_reference

    branches = []
    for beta, scale in _COMPUTED:
        cut, _ = without_zero_tail(softmax_exponentials(softmax_parameters(beta, scale)))
        assert len(cut) > 2
        x = Spec((1, 2), np.int8, np.float32(scale), 3)
        branches.append(Branch("SOFTMAX", [x], [Spec((1, 2), np.int8, np.float32(1 / 256), -128)], dict(beta=beta)))
        # int16 outputs show 128 times finer differences.
        branches.append(Branch("SOFTMAX", [x], [Spec((1, 2), np.int16, np.float32(1 / 32768), 0)], dict(beta=beta)))
    path = tmp_path / "softmax2.tflite"
    build_model(branches, path)
    model = npukit.load(npukit.compile(path, out_dir=tmp_path / "host"))
    for d in range(256):
        x = np.array([[127, 127 - d]], np.int8)
        inputs = [x] * len(branches)
        for got, want in zip(model(*inputs), run_reference(path, inputs)):
            assert np.array_equal(np.asarray(got).reshape(want.shape), want), (d, got, want)
