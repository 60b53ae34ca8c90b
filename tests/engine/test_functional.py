r"""The relative-position ops of ``engine/functional.py``: gradchecked in float64, and checked against the slow way.

Every op here is linear in its input, so central differences have no truncation
error and only rounding is left: about eps |L| / h = 1e-16 |L| / 1e-4, measured at
most 3e-11 relative; ``TOL`` = 1e-9 leaves a factor of 30.

``relative_shift`` must equal the naive gather of each (query, key) distance;
``gather_distance`` and ``scatter_distance`` must be each other's transpose.
"""
import numpy as np
import pytest

import mini_transformer.engine.functional as F
from mini_transformer import Tensor
from mini_transformer.engine import backend
from mini_transformer.engine.gradcheck import assert_gradcheck

pytestmark = pytest.mark.usefixtures("each_backend")

TOL = 1e-9


def t64(*shape, seed=0):
    return Tensor(np.random.default_rng(seed).normal(size=shape), requires_grad=True, dtype="float64")


def idx(a):
    return backend.asarray(np.asarray(a))


def index():
    """(T_q 3, T_k 5) into 5 distances, repeats included; built per test, on the backend under test."""
    return idx([[0, 1, 4, 4, 2], [3, 3, 0, 1, 1], [2, 4, 4, 4, 0]])


def test_gradcheck_gather_distance():
    assert_gradcheck(lambda x: F.gather_distance(x, index()), [t64(2, 2, 3, 5)], tol=TOL)


def test_gradcheck_scatter_distance():
    assert_gradcheck(lambda x: F.scatter_distance(x, index(), 5), [t64(2, 2, 3, 5, seed=1)], tol=TOL)


@pytest.mark.parametrize("T_q,L", [(3, 5), (4, 4), (1, 6)])
def test_gradcheck_relative_shift(T_q, L):
    assert_gradcheck(lambda x: F.relative_shift(x), [t64(2, 2, T_q, L, seed=2)], tol=TOL)


def test_gather_and_scatter_hand_values_and_transpose():
    x = Tensor(np.arange(15.0).reshape(3, 5), dtype="float64")
    # row i picks x[i, index()[i, j]]: row 0 of x is 0..4, index() row 0 is (0, 1, 4, 4, 2)
    assert backend.to_numpy(F.gather_distance(x, index()).data)[0].tolist() == [0.0, 1.0, 4.0, 4.0, 2.0]
    # scatter of ones counts how often each distance appears per row: row 0 -> (1, 1, 1, 0, 2)
    ones = Tensor(np.ones((3, 5)), dtype="float64")
    assert backend.to_numpy(F.scatter_distance(ones, index(), 5).data)[0].tolist() == [1.0, 1.0, 1.0, 0.0, 2.0]
    # <gather(a), b> = <a, scatter(b)>
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3, 5)), rng.normal(size=(2, 3, 5))
    lhs = (backend.to_numpy(F.gather_distance(Tensor(a), index()).data) * b).sum()
    rhs = (a * backend.to_numpy(F.scatter_distance(Tensor(b), index(), 5).data)).sum()
    assert lhs == pytest.approx(rhs, abs=1e-12)


@pytest.mark.parametrize("q_first,T_q,k_first,T_k,causal", [
    (0, 6, 0, 6, True),      # a whole segment
    (9, 1, 0, 10, True),     # one decoding step over nine cached keys
    (12, 4, 8, 8, True),     # a segment after a 4-token memory
    (0, 5, 0, 5, False),     # an encoder: every distance from -4 to 4
    (3, 2, 0, 7, False),     # queries in the middle of the keys
])
def test_relative_shift_equals_the_naive_gather(q_first, T_q, k_first, T_k, causal):
    q_pos, k_pos = np.arange(q_first, q_first + T_q), np.arange(k_first, k_first + T_k)
    d_hi = q_pos[-1] - k_pos[0]
    d_lo = 0 if causal else q_pos[0] - k_pos[-1]
    L = d_hi - d_lo + 1                                     # columns: distances d_hi, d_hi - 1, ..., d_lo
    x = np.random.default_rng(4).normal(size=(2, 3, T_q, L))
    shifted = backend.to_numpy(F.relative_shift(Tensor(x)).data)[..., :T_k]
    dist = q_pos[:, None] - k_pos[None, :]                  # (T_q, T_k)
    valid = dist >= d_lo
    naive = x[..., np.arange(T_q)[:, None], np.clip(d_hi - dist, 0, L - 1)]
    np.testing.assert_array_equal(shifted[..., valid], naive[..., valid])
    assert valid.all() or causal                            # only the masked future is left out
