r"""The sinusoidal references (``solutions/sinusoidal.py``, chapter 2): ``shift_rotation`` against the
angle-addition formulas worked by hand, and the encoding table against the library's (see ``agreement.py``).
"""
import math

import numpy as np
import pytest

from mini_transformer import positional as lib
from mini_transformer.engine.backend import to_numpy
from solutions import sinusoidal

from agreement import assert_same


def test_shift_rotation_of_one_pair_by_hand(each_backend):
    """d_model = 2, omega_0 = 1: the block is [[cos k, sin k], [-sin k, cos k]]."""
    for k in (0, 1, 3, -2):
        M = to_numpy(sinusoidal.shift_rotation(k, 2))
        np.testing.assert_allclose(M, [[math.cos(k), math.sin(k)], [-math.sin(k), math.cos(k)]], atol=1e-15)


def test_shift_rotation_moves_hand_computed_rows(each_backend):
    """d_model = 4, base 100: omega = 1 and 100^(-1/2) = 0.1; rows worked out from sin and cos."""
    def row(t):
        return [math.sin(t), math.cos(t), math.sin(0.1 * t), math.cos(0.1 * t)]
    M = to_numpy(sinusoidal.shift_rotation(5, 4, base=100.0))
    for t in (0, 2, 11):
        np.testing.assert_allclose(M @ np.array(row(t)), row(t + 5), atol=1e-12)
    assert not M[0, 2] and not M[1, 3] and not M[2, 0]  # nothing couples two pairs


@pytest.mark.parametrize("T, d_model, base", [(1, 4, 10000.0), (50, 64, 10000.0), (7, 8, 100.0), (20, 2, 10000.0)])
def test_sinusoidal_positional_encoding(each_backend, T, d_model, base):
    assert_same(sinusoidal.sinusoidal_positional_encoding(T, d_model, base),
                lib.sinusoidal_positional_encoding(T, d_model, base))
    # The drill has no offset argument; the library's offset table is the drill's longer table, cut.
    offset = 13
    assert_same(sinusoidal.sinusoidal_positional_encoding(offset + T, d_model, base)[offset:],
                lib.sinusoidal_positional_encoding(T, d_model, base, offset=offset))
