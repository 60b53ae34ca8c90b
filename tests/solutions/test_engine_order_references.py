r"""The references of chapters 0 and 1 (``solutions/engine.py``, ``solutions/order.py``), against
numbers worked by hand and against the library's own ops, which were written apart from them.

The grader trusts these references, so none of the expected values below comes from them.
"""
import math

import numpy as np
import pytest

from mini_transformer.engine import functional as F
from mini_transformer.engine.autograd import Tensor
from mini_transformer.engine.backend import asarray, to_numpy
from solutions import engine, order


def randn(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


# ---------------------------------------------------------------------------
# Chapter 0: softmax, its backward, cross-entropy
# ---------------------------------------------------------------------------

def test_softmax_worked_example_large_scores_and_mask(each_backend):
    y = to_numpy(engine.softmax(asarray([0.0, math.log(2.0), math.log(3.0)])))
    np.testing.assert_allclose(y, [1 / 6, 2 / 6, 3 / 6], rtol=1e-14)
    # e^1000 overflows, but the weights of [1000, 1001, 1002] are those of [0, 1, 2]
    e = np.exp([0.0, 1.0, 2.0])
    np.testing.assert_allclose(to_numpy(engine.softmax(asarray([1000.0, 1001.0, 1002.0]))), e / e.sum(), rtol=1e-14)
    # a causal mask: row i spreads its weight over keys 0..i only; with equal scores, 1/(i+1) each
    w = to_numpy(engine.softmax(asarray(np.zeros((4, 4))), asarray(np.tril(np.ones((4, 4), dtype=bool)))))
    np.testing.assert_allclose(w, np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None], rtol=1e-14)
    y32 = engine.softmax(asarray(randn(0, 2, 3).astype(np.float32)))
    assert y32.dtype == np.float32


@pytest.mark.parametrize("masked", [False, True])
def test_softmax_and_its_backward_match_the_library(masked):
    x = randn(1, 2, 3, 5, 5)
    mask = np.tril(np.ones((5, 5), dtype=bool)) if masked else None
    t = Tensor(x, requires_grad=True)
    lib = F.softmax(t.masked_fill(~mask, float("-inf")) if masked else t, axis=-1)
    gy = randn(2, *x.shape)
    (lib * Tensor(gy)).sum().backward()
    y = engine.softmax(x, mask)
    np.testing.assert_allclose(y, lib.data, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(engine.softmax_backward(y, gy), t.grad, rtol=1e-12, atol=1e-15)


def test_softmax_backward_by_hand():
    # y = (1/2, 1/2), gy = (1, 0): sum gy y = 1/2, gx = (1/2 (1 - 1/2), 1/2 (0 - 1/2))
    np.testing.assert_allclose(engine.softmax_backward(np.array([0.5, 0.5]), np.array([1.0, 0.0])), [0.25, -0.25])
    # gy all ones: the loss sum(y) = 1 has no gradient
    y = engine.softmax(randn(3, 3, 4))
    np.testing.assert_allclose(engine.softmax_backward(y, np.ones((3, 4))), 0.0, atol=1e-15)


def test_cross_entropy_by_hand_and_against_the_library():
    assert math.isclose(engine.cross_entropy(np.zeros((4, 8)), np.array([0, 3, 5, 7])), math.log(8), rel_tol=1e-14)
    # logits (0, ln 3): p = (1/4, 3/4); targets 1 and 0 cost ln(4/3) and ln 4
    logits = np.array([[0.0, math.log(3.0)], [0.0, math.log(3.0)]])
    assert math.isclose(engine.cross_entropy(logits, np.array([1, 0])), (math.log(4 / 3) + math.log(4)) / 2,
                        rel_tol=1e-14)
    # confident and wrong by 800 nats: finite, and 800 to the digits float64 has
    assert math.isclose(engine.cross_entropy(np.array([[0.0, 800.0]]), np.array([0])), 800.0, rel_tol=1e-14)
    z, t = randn(4, 2, 5, 16), np.random.default_rng(5).integers(0, 16, (2, 5))
    assert math.isclose(engine.cross_entropy(z, t), float(F.cross_entropy(Tensor(z), t).data), rel_tol=1e-12)


# ---------------------------------------------------------------------------
# Chapter 1: permutation gap, self-attention, the counting head
# ---------------------------------------------------------------------------

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


def test_the_reference_tests_pass_on_the_references():
    engine.test_softmax_and_its_gradient(softmax=engine.softmax, softmax_backward=engine.softmax_backward)
    order.test_self_attention_is_permutation_equivariant(self_attention=order.self_attention,
                                                         permutation_gap=order.permutation_gap)


def test_self_attention_is_equivariant_without_the_mask_and_not_with_it():
    """Chapter 1's claim C1, on the reference: a rounding-level gap without the mask, a large one with it."""
    x, W_q, W_k, W_v = randn(10, 2, 9, 4), randn(11, 4, 4), randn(12, 4, 4), randn(13, 4, 4)
    perm = np.random.default_rng(14).permutation(9)
    for causal, small in [(False, True), (True, False)]:
        gap = order.permutation_gap(order.self_attention(x, W_q, W_k, W_v, causal),
                                    order.self_attention(x[:, perm], W_q, W_k, W_v, causal), perm)
        assert (gap < 1e-13) == small, (causal, gap)
