"""The int8 SOFTMAX's tables, cut after the first zero of their zero tail,
read what the whole tables hold at every index once the index is clamped."""

import numpy as np
import pytest

from npukit.frontends.tflite.softmax import without_zero_tail
from npukit.quantization.fixed_point_reference import rdbpot
from npukit.quantization.tflite_prepare import ACCUMULATION_INTEGER_BITS, softmax_exponentials, softmax_parameters


@pytest.mark.parametrize("beta,scale", [(1.0, 0.0625), (1.0, 0.11), (0.5, 0.02), (1.0, 1 / 256), (2.0, 0.3)])
def test_cut_tables_read_the_whole_tables(beta, scale):
    exponentials = softmax_exponentials(softmax_parameters(beta, scale))
    shares = np.array([rdbpot(int(e), ACCUMULATION_INTEGER_BITS) for e in exponentials], np.int32)
    for table in (exponentials, shares):
        cut, last = without_zero_tail(table)
        if last is None:
            assert np.array_equal(cut, table)
            continue
        assert len(cut) == last + 1 < len(table) and cut[last] == 0
        assert np.array_equal(cut[np.minimum(np.arange(256), last)], table)


def test_a_table_without_a_zero_tail_is_kept():
    table = np.arange(1, 257, dtype=np.int32)
    cut, last = without_zero_tail(table)
    assert last is None and cut is table
    cut, last = without_zero_tail(np.zeros(256, np.int32))
    assert last == 0 and list(cut) == [0]
