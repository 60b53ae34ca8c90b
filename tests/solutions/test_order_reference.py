r"""The references of chapter 1 (``solutions/order.py``: the permutation gap, self-attention, the counting head),
against numbers worked by hand and against the library's own ops, which were written apart from them.

The grader trusts these references, so none of the expected values below comes from them.
"""
import numpy as np
import pytest

from mini_transformer.engine import functional as F
from mini_transformer.engine.autograd import Tensor
from mini_transformer.engine.backend import asarray, to_numpy
from solutions import order


def randn(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


def test_permutation_gap_worked_example():
    perm = np.array([2, 0, 1])
    assert order.permutation_gap(np.array([[1.0, 2.0, 3.0]]), np.array([[3.0, 1.0, 2.0]]), perm) == 0.0
    # the same outputs un-shuffled the wrong way round are 2 apart at most
    assert order.permutation_gap(np.array([[1.0, 2.0, 3.0]]), np.array([[2.0, 3.0, 1.0]]), perm) == 2.0


@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_matches_the_library(each_backend, causal):
    B, T, d, d_k, d_v = 2, 6, 5, 3, 4
    x, W_q, W_k, W_v = randn(6, B, T, d), randn(7, d, d_k), randn(8, d, d_k), randn(9, d, d_v)
    mask = asarray(np.tril(np.ones((T, T), dtype=bool))) if causal else None
    q, k, v = (Tensor(asarray((x @ W)[:, None])) for W in (W_q, W_k, W_v))  # (B, 1, T, d) one head
    lib = to_numpy(F.scaled_dot_product_attention(q, k, v, mask=mask).data)[:, 0]
    mine = to_numpy(order.self_attention(asarray(x), asarray(W_q), asarray(W_k), asarray(W_v), causal))
    np.testing.assert_allclose(mine, lib, rtol=1e-12, atol=1e-14)


def test_uniform_causal_attention_counts(each_backend):
    marker = np.zeros((1, 6, 1))
    marker[0, 0, 0] = 1.0
    y = to_numpy(order.uniform_causal_attention(asarray(marker)))[0, :, 0]
    np.testing.assert_allclose(y, [1, 1 / 2, 1 / 3, 1 / 4, 1 / 5, 1 / 6], rtol=1e-15)
    assert order.uniform_causal_attention(asarray(randn(1, 2, 3).astype(np.float32))).dtype == np.float32


def test_self_attention_is_equivariant_without_the_mask_and_not_with_it():
    """Chapter 1's claim C1, on the reference: a rounding-level gap without the mask, a large one with it."""
    x, W_q, W_k, W_v = randn(10, 2, 9, 4), randn(11, 4, 4), randn(12, 4, 4), randn(13, 4, 4)
    perm = np.random.default_rng(14).permutation(9)
    for causal, small in [(False, True), (True, False)]:
        gap = order.permutation_gap(order.self_attention(x, W_q, W_k, W_v, causal),
                                    order.self_attention(x[:, perm], W_q, W_k, W_v, causal), perm)
        assert (gap < 1e-13) == small, (causal, gap)


def test_the_reference_tests_pass_on_the_references():
    order.test_self_attention_is_permutation_equivariant(self_attention=order.self_attention,
                                                         permutation_gap=order.permutation_gap)
