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
