r"""The 2-D window bias (Swin): the row of each offset, invariance under a move inside the window.

Expected numbers are worked by hand from the papers' formulas (the working sits next to each number),
never produced by the code under test. Everything runs on NumPy and on the strict CuPy stand-in.
"""
import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.positional import relative_2d_index, RelativePositionBias2D

from positional_helpers import N, make, P, set_, logits, qk

pytestmark = pytest.mark.usefixtures("each_backend")


def test_relative_2d_index_and_translation_invariance():
    # w 2: tokens (0,0) (0,1) (1,0) (1,1). Row (dy + 1) * 3 + (dx + 1): same token -> 4, (0,0)->(1,1) has
    # dy = dx = -1 -> 0, the reverse -> 8
    idx = N(relative_2d_index(2))
    assert idx[0, 3] == 0 and idx[3, 0] == 8 and list(np.diag(idx)) == [4, 4, 4, 4]
    assert set(idx.ravel().tolist()) == set(range(9))
    w = 4
    bias = RelativePositionBias2D(3, w, backend.rng(2))
    assert bias.table.shape == ((2 * w - 1) ** 2, 3)
    b = N(bias.bias(w * w))[0]                                           # (H, 16, 16)

    def p(y, x):
        return y * w + x
    # the pair (0,0)->(1,2) and the pair moved by (2, 1): (2,1)->(3,3); and one moved only along x
    np.testing.assert_array_equal(b[:, p(0, 0), p(1, 2)], b[:, p(2, 1), p(3, 3)])
    np.testing.assert_array_equal(b[:, p(3, 0), p(1, 0)], b[:, p(3, 3), p(1, 3)])
    assert not np.array_equal(b[:, p(0, 0), p(1, 2)], b[:, p(0, 0), p(2, 1)])   # (dy, dx) is not (dx, dy)


@pytest.mark.parametrize("move", ["down a row", "right a column"])
def test_relative_2d_bias_is_invariant_under_a_move_inside_the_window(move):
    # w 3, raster order: token p at (p // 3, p % 3). Tokens that stay inside the window after the move:
    # rows 0-1 move down by 3 positions; columns 0-1 move right by 1 position
    scheme = make("relative_2d", {"window_size": 3}, causal=False)
    pos = np.array([0, 1, 2, 3, 4, 5]) if move == "down a row" else np.array([0, 1, 3, 4, 6, 7])
    step = 3 if move == "down a row" else 1
    q, k = qk(6, 6)
    np.testing.assert_array_equal(logits(scheme, q, k, P(pos + step), P(pos + step)),
                                  logits(scheme, q, k, P(pos), P(pos)))


def test_relative_2d_bias_layout_by_hand():
    # w 2, raster order: tokens 0 (0,0), 1 (0,1), 2 (1,0), 3 (1,1). Row of (dy, dx) = (y_i - y_j, x_i - x_j) is
    # (dy + 1) * 3 + (dx + 1); the table's row r holds r for head 0 and 100 + r for head 1:
    #   i 0: (0,0) 4, (0,-1) 3, (-1,0) 1, (-1,-1) 0      i 1: (0,1) 5, 4, (-1,1) 2, (-1,0) 1
    #   i 2: (1,0) 7, (1,-1) 6, 4, (0,-1) 3               i 3: (1,1) 8, (1,0) 7, (0,1) 5, 4
    scheme = make("relative_2d", {"window_size": 2}, causal=False)
    set_(scheme.table, [[r, 100 + r] for r in range(9)])
    q, k = qk(4, 4)
    pos = P(np.arange(4))
    want = np.array([[4, 3, 1, 0], [5, 4, 2, 1], [7, 6, 4, 3], [8, 7, 5, 4]])
    np.testing.assert_array_equal(N(scheme.score_bias(q, k, pos, pos, 0))[0], [want, 100 + want])


def test_the_2d_bias_of_a_whole_window_and_a_given_table():
    from mini_transformer.positional import RelativePositionBias2D
    table = backend.asarray(np.arange(9.0)[:, None] * np.ones((1, 2)))      # row r holds r for both heads
    bias = RelativePositionBias2D(2, 2, table=table)
    np.testing.assert_array_equal(N(bias.bias(4))[0, 0], [[4, 3, 1, 0], [5, 4, 2, 1], [7, 6, 4, 3], [8, 7, 5, 4]])
