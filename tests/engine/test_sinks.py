r"""Attention with a learned sink logit per head (GPT-OSS): every path tested by the property that defines it.

The sink is one more column in each row's softmax, head h's logit s_h, that takes no value:
P_{ij} = e^{S_{ij}} / (e^{s_h} + \sum_{j'} e^{S_{ij'}}), y = P V. So: a row's weights sum to
1 - p_sink; s_h = -\infty is plain attention; a sink far above the scores takes all the weight and y -> 0;
a row masked on every key gives y = 0 (all weight on the sink) instead of NaN; and
d s_h = -\sum_{b,i} p_{sink} gy \cdot y (``kernels/attention.py`` derives it). The expected numbers are worked by
hand in the comments or computed here in NumPy from the definition, never by the code under test. Each test runs
the reference (``functional``), the whole-matrix kernel and the blocked kernel (in tiles of 3 keys, so that even
these short rows cross tiles), on NumPy and on the strict stand-in.
"""
import math

import numpy as np
import pytest

from mini_transformer import Tensor
from mini_transformer.engine import backend, functional, kernels
from mini_transformer.engine.gradcheck import assert_gradcheck
from mini_transformer.engine.kernels import attention as whole_attention
from mini_transformer.engine.kernels import blocked_attention

pytestmark = pytest.mark.usefixtures("each_backend")

PATHS = {
    "reference": functional.scaled_dot_product_attention,
    "whole-matrix kernel": whole_attention.scaled_dot_product_attention,
    "blocked kernel": blocked_attention.scaled_dot_product_attention,
}

TOL = 1e-6   # the engine's gradcheck tolerance for attention (tests/engine/test_autograd.py)


@pytest.fixture(autouse=True)
def small_block(monkeypatch):
    monkeypatch.setattr(blocked_attention, "BLOCK", 3)


def t64(seed, *shape, requires_grad=True):
    return Tensor(backend.asarray(np.random.default_rng(seed).normal(size=shape)), requires_grad=requires_grad,
                  dtype="float64")


def const(a, requires_grad=False):
    return Tensor(backend.asarray(np.asarray(a, dtype="float64")), requires_grad=requires_grad, dtype="float64")


def causal(T_q, T_k):
    return np.arange(T_k)[None, :] <= np.arange(T_k - T_q, T_k)[:, None]


def host(a):
    return backend.to_numpy(a.data if isinstance(a, Tensor) else a)


@pytest.mark.parametrize("path", list(PATHS))
def test_gradcheck_q_k_v_bias_and_sinks_under_a_causal_mask(path):
    mask = backend.asarray(causal(4, 7))
    inputs = [t64(0, 2, 3, 4, 5), t64(1, 2, 3, 7, 5), t64(2, 2, 3, 7, 2), t64(3, 1, 3, 4, 7), t64(4, 3)]
    assert_gradcheck(lambda q, k, v, b, s: PATHS[path](q, k, v, bias=b, mask=mask, sinks=s), inputs, tol=TOL)


@pytest.mark.parametrize("path", list(PATHS))
def test_gradcheck_of_the_sinks_with_two_batch_axes_and_a_row_masked_on_every_key(path):
    mask = causal(3, 5).copy()
    mask[1] = False                                       # query 1 sees no key: all its weight on the sink
    inputs = [t64(5, 2, 2, 2, 3, 4), t64(6, 2, 2, 2, 5, 4), t64(7, 2, 2, 2, 5, 3), t64(8, 2)]
    assert_gradcheck(lambda q, k, v, s: PATHS[path](q, k, v, mask=backend.asarray(mask), sinks=s), inputs, tol=TOL)


# One query, two keys with equal scores (q = 0), values e_1 and e_2, sink s: the row is (1, 1, e^s) / (2 + e^s),
# so each key gets w = 1 / (2 + e^s), p_sink = e^s / (2 + e^s), y = (w, w). For L = y_1 + y_2, gy = (1, 1):
# D = gy . y = 2w, and d s = -p_sink D; gV = P^T gy = w in every entry; gQ = s gS K = 0 and gK = s gS^T Q = 0,
# as K = 0 and Q = 0.
HAND = [  # (sink s, w, p_sink, d s)
    (0.0, 1 / 3, 1 / 3, -(1 / 3) * (2 / 3)),              # e^0 = 1: thirds; d s = -2/9
    (math.log(2.0), 1 / 4, 1 / 2, -(1 / 2) * (1 / 2)),    # e^s = 2: quarters; d s = -1/4
    (math.log(6.0), 1 / 8, 3 / 4, -(3 / 4) * (1 / 4)),    # e^s = 6: eighths; d s = -3/16
]


@pytest.mark.parametrize("sink, w, p_sink, g_sink", HAND)
@pytest.mark.parametrize("path", list(PATHS))
def test_one_query_two_equal_keys_by_hand(path, sink, w, p_sink, g_sink):
    q, k = const(np.zeros((1, 1, 1, 2)), True), const(np.zeros((1, 1, 2, 2)), True)
    v = const(np.eye(2)[None, None], True)
    s = const([sink], True)
    y = PATHS[path](q, k, v, sinks=s)
    np.testing.assert_allclose(host(y), [[[[w, w]]]], rtol=1e-14)
    y.sum().backward()
    np.testing.assert_allclose(host(s.grad), [g_sink], rtol=1e-14)
    np.testing.assert_allclose(host(v.grad), np.full((1, 1, 2, 2), w), rtol=1e-14)
    assert np.abs(host(q.grad)).max() == 0.0 == np.abs(host(k.grad)).max()
    _, p = PATHS[path](q, k, v, sinks=s, return_weights=True)
    np.testing.assert_allclose(host(p), [[[[w, w]]]], rtol=1e-14)
    assert abs(host(p).sum() - (1.0 - p_sink)) < 1e-15


@pytest.mark.parametrize("path", list(PATHS))
def test_rows_sum_to_one_minus_the_sinks_share_computed_from_the_definition(path):
    q, k, v = t64(0, 2, 3, 4, 5), t64(1, 2, 3, 6, 5), t64(2, 2, 3, 6, 5)
    sinks = const([-1.0, 0.5, 2.0])
    mask = causal(4, 6)
    _, p = PATHS[path](q, k, v, mask=backend.asarray(mask), sinks=sinks, return_weights=True)
    S = host(q) @ np.swapaxes(host(k), -1, -2) / math.sqrt(5)                # (2, 3, 4, 6)
    e = np.where(mask, np.exp(S), 0.0)
    sink = np.exp([-1.0, 0.5, 2.0])[None, :, None]                             # e^{s_h}, (1, 3, 1)
    np.testing.assert_allclose(host(p).sum(axis=-1), 1.0 - sink / (sink + e.sum(axis=-1)), rtol=1e-13)
    np.testing.assert_allclose(host(p), e / (sink + e.sum(axis=-1))[..., None], rtol=1e-13)


@pytest.mark.parametrize("path", list(PATHS))
def test_a_sink_of_minus_infinity_is_plain_attention_and_gets_no_gradient(path):
    def run(with_sink):
        q, k, v, b = t64(0, 2, 2, 5, 4), t64(1, 2, 2, 7, 4), t64(2, 2, 2, 7, 3), t64(3, 2, 1, 5, 7)
        s = const([-np.inf, -np.inf], True)
        y = PATHS[path](q, k, v, bias=b, mask=backend.asarray(causal(5, 7)), sinks=s if with_sink else None)
        (y * const(np.random.default_rng(9).normal(size=y.shape))).sum().backward()
        return host(y), [host(t.grad) for t in (q, k, v, b)], (host(s.grad) if with_sink else None)
    y, grads, g_sink = run(True)
    y0, grads0, _ = run(False)
    np.testing.assert_allclose(y, y0, rtol=1e-13, atol=1e-15)
    for a, b in zip(grads, grads0):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
    assert g_sink.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("path", list(PATHS))
def test_a_sink_far_above_the_scores_takes_every_weight_and_y_is_zero(path):
    # e^{S - 1000} underflows to 0 for scores of order 1: every weight 0, p_sink 1, y = 0 exactly; a max taken over
    # the scores alone would leave e^{1000} = inf in the denominator and give NaN
    q, k, v = t64(0, 1, 2, 3, 4), t64(1, 1, 2, 5, 4), t64(2, 1, 2, 5, 4)
    s = const([1000.0, 1000.0], True)
    y = PATHS[path](q, k, v, mask=backend.asarray(causal(3, 5)), sinks=s)
    assert host(y).tolist() == np.zeros((1, 2, 3, 4)).tolist()
    y.sum().backward()
    for t in (q, k, v, s):
        assert np.isfinite(host(t.grad)).all() and np.abs(host(t.grad)).max() == 0.0


@pytest.mark.parametrize("path", list(PATHS))
def test_scores_and_sink_at_1000_where_exp_overflows_share_the_row_by_hand(path):
    # two keys and the sink all at 1000 (q = 0, a bias of 1000): thirds, as at 0; subtracting one max over the scores
    # and the sink together keeps every exponent at 0
    q, k, v = const(np.zeros((1, 1, 1, 2))), const(np.zeros((1, 1, 2, 2))), const(np.eye(2)[None, None])
    y = PATHS[path](q, k, v, bias=const(np.full((1, 1, 1, 2), 1000.0)), sinks=const([1000.0]))
    np.testing.assert_allclose(host(y), [[[[1 / 3, 1 / 3]]]], rtol=1e-14)


@pytest.mark.parametrize("path", list(PATHS))
def test_a_row_masked_on_every_key_puts_all_its_weight_on_the_sink(path):
    mask = causal(4, 6).copy()
    mask[2] = False
    q, k, v, s = t64(0, 2, 2, 4, 3), t64(1, 2, 2, 6, 3), t64(2, 2, 2, 6, 3), t64(3, 2)
    y = PATHS[path](q, k, v, mask=backend.asarray(mask), sinks=s)
    (y * const(np.random.default_rng(9).normal(size=y.shape))).sum().backward()
    assert host(y)[:, :, 2].tolist() == np.zeros((2, 2, 3)).tolist()          # y = 0 / 1: no NaN
    assert np.isfinite(host(y)).all() and np.abs(host(y)[:, :, [0, 1, 3]]).min() > 0
    for t in (q, k, v, s):
        assert np.isfinite(host(t.grad)).all()
    assert np.abs(host(q.grad)[:, :, 2]).max() == 0.0                         # it looks at nothing, so nothing moves it


@pytest.mark.parametrize("shape", [(3,), (1, 2), (), (2, 1)])
@pytest.mark.parametrize("path", list(PATHS))
def test_sinks_of_the_wrong_shape_are_refused_in_a_sentence(path, shape):
    q, k, v = t64(0, 1, 2, 3, 4), t64(1, 1, 2, 5, 4), t64(2, 1, 2, 5, 4)
    with pytest.raises(ValueError, match=r"scaled_dot_product_attention: sinks has shape " + re_tuple(shape)
                       + r", but it needs one logit per head, shape \(2,\): H = q.shape\[-3\] = 2 for q of shape "
                         r"\(1, 2, 3, 4\)\."):
        PATHS[path](q, k, v, sinks=const(np.zeros(shape)))


def re_tuple(shape):
    return "\\(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + "\\)"


@pytest.mark.parametrize("path", ["whole-matrix kernel", "blocked kernel"])
def test_float32_inputs_and_sinks_give_float32_outputs_and_gradients_close_to_the_reference(path):
    def run(f):
        ts = [Tensor(backend.asarray(np.random.default_rng(n).normal(size=shape)), requires_grad=True,
                     dtype="float32") for n, shape in enumerate([(2, 2, 5, 4), (2, 2, 7, 4), (2, 2, 7, 4), (2,)])]
        y = f(*ts[:3], mask=backend.asarray(causal(5, 7)), sinks=ts[3])
        (y * Tensor(backend.asarray(np.random.default_rng(9).normal(size=y.shape)), dtype="float32")).sum().backward()
        return [y.data] + [t.grad for t in ts]
    for n, (a, b) in enumerate(zip(run(PATHS[path]), run(functional.scaled_dot_product_attention))):
        assert a.dtype == b.dtype == np.float32, f"output {n}: {a.dtype}, the reference's {b.dtype}"
        np.testing.assert_allclose(host(a), host(b), rtol=1e-5, atol=1e-6, err_msg=f"output {n}")


@pytest.mark.parametrize("T_k, route", [(4, "whole"), (8, "blocked")])
def test_the_fast_sets_entry_passes_the_sinks_on_either_route(monkeypatch, T_k, route):
    calls = []
    for name, module in (("blocked", blocked_attention), ("whole", whole_attention)):
        run = module.scaled_dot_product_attention
        monkeypatch.setattr(module, "scaled_dot_product_attention",
                            lambda *a, _run=run, _name=name, **kw: calls.append(_name) or _run(*a, **kw))
    monkeypatch.setattr(blocked_attention, "BLOCKED_FROM", 6)

    def run(f):
        q, k, v, s = t64(0, 2, 2, 3, 4), t64(1, 2, 2, T_k, 4), t64(2, 2, 2, T_k, 4), t64(3, 2)
        y = f(q, k, v, mask=backend.asarray(causal(3, T_k)), sinks=s)
        (y * const(np.random.default_rng(9).normal(size=y.shape))).sum().backward()
        return [host(y)] + [host(t.grad) for t in (q, k, v, s)]
    for a, b in zip(run(kernels.FAST.attention), run(kernels.REFERENCE.attention)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert calls == [route]
    q, k, v, s = t64(0, 2, 2, 3, 4), t64(1, 2, 2, T_k, 4), t64(2, 2, 2, T_k, 4), const([0.0, 9.0])
    _, p = kernels.FAST.attention(q, k, v, sinks=s, return_weights=True)
    _, p_ref = kernels.REFERENCE.attention(q, k, v, sinks=s, return_weights=True)
    np.testing.assert_allclose(host(p), host(p_ref), rtol=1e-10, atol=1e-12)
    assert host(p)[:, 1].sum(axis=-1).max() < 0.5                               # head 1's sink at 9 took most
