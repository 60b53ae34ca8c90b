r"""Shaw et al. (2018): the clipped distance, and the score and value terms by hand.

Expected numbers are worked by hand from the papers' formulas (the working sits next to each number),
never produced by the code under test. Everything runs on NumPy and on the strict CuPy stand-in.
"""
import numpy as np
import pytest

from mini_transformer.positional import clipped_distance_index

from positional_helpers import A, N, make, T, P, set_, SQRT2

pytestmark = pytest.mark.usefixtures("each_backend")


def test_shaw_distance_is_clipped_to_k():
    # j - i clipped to [-2, 2], shifted by k = 2 into a row of a^K
    idx = N(clipped_distance_index(A(np.arange(5, 8)), A(np.arange(0, 8)), 2))
    assert idx.tolist() == [[0, 0, 0, 0, 1, 2, 3, 4], [0, 0, 0, 0, 0, 1, 2, 3], [0, 0, 0, 0, 0, 0, 1, 2]]


def test_shaw_scores_and_values_by_hand():
    # d_head 2, one head, k 1: r_ij = clip(j - i, -1, 1) picks row r + 1 of a^K = [(1, 0), (0, 1), (2, -1)].
    # s_ij = q_i . a^K_{r_ij} / sqrt 2, with q_0 = (1, 2), q_1 = (2, 0), q_2 = (0, 3) at positions 0, 1, 2:
    #   i 0: r (0, 1, 1)   -> (0,1).q0 = 2, (2,-1).q0 = 0, 0        -> (2, 0, 0)
    #   i 1: r (-1, 0, 1)  -> (1,0).q1 = 2, (0,1).q1 = 0, (2,-1).q1 = 4 -> (2, 0, 4)
    #   i 2: r (-1, -1, 0) -> 0, 0, (0,1).q2 = 3                    -> (0, 0, 3)
    scheme = make("shaw", {"shaw_k": 1}, d_model=2, n_heads=1)
    set_(scheme.layers[0].a_K, [[1, 0], [0, 1], [2, -1]])
    q = T([[[[1, 2], [2, 0], [0, 3]]]])
    pos = P([0, 1, 2])
    np.testing.assert_allclose(N(scheme.score_bias(q, q, pos, pos, 0))[0, 0],
                               np.array([[2, 0, 0], [2, 0, 4], [0, 0, 3]]) / SQRT2, rtol=0, atol=1e-15)
    # z_i = sum_j alpha_ij a^V_{r_ij}, a^V = [(3, 0), (0, 1), (0, -2)], no scale:
    #   i 0: .5 (0,1) + .25 (0,-2) + .25 (0,-2) = (0, -0.5)
    #   i 1: .5 (3,0) + .5 (0,1)                = (1.5, 0.5)
    #   i 2: .2 (3,0) + .3 (3,0) + .5 (0,1)      = (1.5, 0.5)
    set_(scheme.layers[0].a_V, [[3, 0], [0, 1], [0, -2]])
    probs = T([[[[0.5, 0.25, 0.25], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]]])
    np.testing.assert_allclose(N(scheme.output_term(probs, pos, pos, 0))[0, 0], [[0, -0.5], [1.5, 0.5], [1.5, 0.5]],
                               rtol=0, atol=1e-15)
