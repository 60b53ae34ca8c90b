r"""The references of chapter 0 (``solutions/engine.py``: softmax, its backward, cross-entropy), against numbers
worked by hand and against the library's own ops, which were written apart from them.

The grader trusts these references, so none of the expected values below comes from them.
"""
import math

import numpy as np
import pytest

from mini_transformer.engine import functional as F
from mini_transformer.engine.autograd import Tensor
from mini_transformer.engine.backend import asarray, to_numpy
from solutions import engine


def randn(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


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


def test_the_reference_tests_pass_on_the_references():
    engine.test_softmax_and_its_gradient(softmax=engine.softmax, softmax_backward=engine.softmax_backward)
