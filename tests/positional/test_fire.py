r"""FIRE (Li et al., 2023): the log-normalised distance, the learned function, and the fixed forms it contains.

The normalised distance is checked against the paper's formula evaluated here with ``math.log``; the biases
against ALiBi's slopes and T5's buckets worked by hand (as in test_alibi.py and test_t5.py). The weights that
reproduce them are built here, from the normalised distances, by a construction stated next to each test: a
ReLU layer is piecewise linear in its input, so it can pass exactly through one value per integer distance.
Everything runs on NumPy and on the strict CuPy stand-in.
"""
import math

import numpy as np
import pytest

from mini_transformer import no_grad
from mini_transformer.engine import backend
from mini_transformer.engine.gradcheck import assert_gradcheck
from mini_transformer.engine.optim import AdamW
from mini_transformer.model import GPTConfig, TinyEncoder, TinyGPT
from mini_transformer.positional import SCHEMES
from mini_transformer.positional.fire import FIRE

from positional_helpers import N, P, qk, set_

pytestmark = pytest.mark.usefixtures("each_backend")


def fire(width, L0, c=1.0, L_multiplier=1.0, H=2):
    """A float64 one-layer FIRE with c and the threshold multiplier set; the MLP is set by each test."""
    scheme = FIRE(H, 1, width, L0).to_dtype("float64")
    set_(scheme.layers[0].c, [c])
    set_(scheme.layers[0].L_multiplier, [L_multiplier])
    return scheme


def set_mlp(scheme, W1, b1, W2):
    f = scheme.layers[0]
    for p, v in ((f.W1, W1), (f.b1, b1), (f.W2, W2)):
        set_(p, v)


def bias(scheme, T, q_from=0):
    """The bias ``(H, T_q, T)`` for queries at q_from .. T-1 over keys 0 .. T-1, on the host."""
    q, k = qk(T - q_from, T, H=scheme.n_heads)
    with no_grad():
        return N(scheme.score_bias(q, k, P(np.arange(q_from, T)), P(np.arange(T)), 0))[0]


def psi(x, c):
    return math.log(c * x + 1)


def test_the_normalised_distance_is_the_paper_s_formula():
    # c = 0.5, L = |-2| x 3 = 6 (a negative multiplier counts by its size); f(x) = x on one head: the bias is
    # psi(i - j) / (psi(max(L, i)) + 1e-6), psi(x) = log(0.5 x + 1); queries 0..9, so 7, 8, 9 are past L
    scheme = fire(width=1, L0=3.0, c=-0.5, L_multiplier=-2.0, H=1)
    set_mlp(scheme, [[1.0]], [0.0], [[1.0]])
    got = bias(scheme, 10)[0]
    for i in range(10):
        for j in range(i + 1):
            want = psi(i - j, 0.5) / (psi(max(6, i), 0.5) + 1e-6)
            assert abs(got[i, j] - want) <= 1e-15, (i, j)
    assert got[9, 0] == pytest.approx(1.0, abs=1e-5) and got.max() <= 1.0      # past L the farthest key maps to ~1
    assert got[3, 0] == pytest.approx(math.log(2.5) / math.log(4), abs=1e-5)   # before L: psi(3) / psi(6)
    assert (np.triu(got, 1) == 0).all()                                          # a future key counts as distance 0


def test_before_the_threshold_the_bias_depends_on_the_distance_only_and_past_it_on_the_query_too():
    draw = np.random.default_rng(0)
    scheme = fire(width=8, L0=10.0, c=0.3)
    set_mlp(scheme, draw.normal(size=(1, 8)), draw.normal(size=8), draw.normal(size=(8, 2)))
    b = bias(scheme, 16)
    np.testing.assert_array_equal(b[:, 4, 1], b[:, 9, 6])              # distance 3, both queries before L = 10
    assert np.abs(b[:, 13, 10] - b[:, 9, 6]).max() > 1e-3             # distance 3 at query 13: psi(13) divides
    # queries asked for alone (a cache's last step) get the rows of the full bias
    np.testing.assert_allclose(bias(scheme, 16, q_from=12), b[:, 12:], rtol=0, atol=1e-15)


def test_per_row_positions_give_each_row_its_own_bias():
    draw = np.random.default_rng(1)
    scheme = fire(width=4, L0=3.0, c=0.7)
    set_mlp(scheme, draw.normal(size=(1, 4)), draw.normal(size=4), draw.normal(size=(4, 2)))
    rows = np.array([[0, 1, 2, 3, 4], [0, 0, 5, 6, 7]])                # the second row left-padded, starting at 5
    q, k = qk(5, 5)
    with no_grad():
        both = N(scheme.score_bias(q, k, P(rows), P(rows), 0))
    for b, row in enumerate(rows):
        with no_grad():
            alone = N(scheme.score_bias(q, k, P(row), P(row), 0))[0]
        np.testing.assert_array_equal(both[b], alone)


def test_a_linear_f_is_a_linear_bias_in_the_normalised_distance_at_every_length():
    # f(x) = -m_h x: one hidden unit relu(x) (x >= 0 always) and output weights -m_h, ALiBi's 2-head slopes
    # 1/16 and 1/256. The bias is -m_h psi(i - j) / (psi(max(L, i)) + 1e-6), before L and past it
    scheme = fire(width=1, L0=8.0, c=0.25)
    set_mlp(scheme, [[1.0]], [0.0], [[-1 / 16, -1 / 256]])
    got = bias(scheme, 20)
    for i in (0, 5, 7, 8, 13, 19):
        for j in range(i + 1):
            x = psi(i - j, 0.25) / (psi(max(8, i), 0.25) + 1e-6)
            np.testing.assert_allclose(got[:, i, j], [-x / 16, -x / 256], rtol=1e-14, atol=1e-17)


def _piecewise_linear_through(xs, ys):
    r"""Weights of f = \sum_k (s_k - s_{k-1}) relu(x - x_k), the piecewise-linear f through (xs, ys) per head.

    ``xs`` increasing from x_0 = 0, ``ys`` ``(n, H)`` with y_0 = 0: n - 1 hidden units, kinks at x_0 .. x_{n-2},
    slope s_k on [x_k, x_{k+1}] (s_{-1} = 0), so f(x_k) = y_k exactly in exact arithmetic.
    """
    slopes = np.diff(ys, axis=0) / np.diff(xs)[:, None]                # (n - 1, H)
    changes = np.diff(slopes, axis=0, prepend=0.0)
    return [list(np.ones(len(xs) - 1))], list(-xs[:-1]), changes


def test_within_the_threshold_fire_reproduces_alibi_exactly():
    # ALiBi with H = 2: -m_h (i - j), m = 1/16, 1/256 (2^(-8h/2)). FIRE's input for distance d < L is
    # x_d = psi(d) / (psi(L) + 1e-6) whatever the query, strictly increasing in d, so the f that is linear between
    # (x_d, -m d) for d = 0 .. L - 1 (L - 1 ReLUs) makes every score of a query before L ALiBi's
    L, c = 12, 0.5
    xs = np.array([psi(d, c) / (psi(L, c) + 1e-6) for d in range(L)])
    ys = -np.arange(L)[:, None] * np.array([1 / 16, 1 / 256])[None, :]
    scheme = fire(width=L - 1, L0=float(L), c=c)
    set_mlp(scheme, *_piecewise_linear_through(xs, ys))
    got = bias(scheme, L)
    d = np.tril(np.arange(L)[:, None] - np.arange(L)[None, :])
    np.testing.assert_allclose(got[0], np.tril(-d / 16), rtol=0, atol=1e-12)
    np.testing.assert_allclose(got[1], np.tril(-d / 256), rtol=0, atol=1e-12)


def test_within_the_threshold_fire_reproduces_t5_s_buckets_exactly():
    # T5, causal, 4 buckets, max_distance 8 (worked in test_t5.py): n_e = 2 exact (d = 0, 1); d >= 2:
    # 2 + floor(ln(d/2) / ln 4 * 2), capped at 3: d 2, 3 -> 2; d >= 4 -> 3. Table entry b of head h is 10 b + h.
    # f is a step at each bucket boundary (d = 1, 2, 4): relu(k(x - a)) - relu(k(x - a) - 1) rises from 0 to 1 on
    # a ramp [a, a + 1/k] strictly between x_{d-1} and x_d (a = x_{d-1} + gap/4, k = 2/gap), so on the integer
    # distances it is exactly a step; table[0] comes from a unit that always outputs relu(0 x + 1) = 1
    L, c = 16, 1.0
    bucket = {0: 0, 1: 1, 2: 2, 3: 2}
    bucket.update({d: 3 for d in range(4, L)})
    table = np.array([[10 * b + h for h in range(2)] for b in range(4)], dtype=float)
    x = [psi(d, c) / (psi(L, c) + 1e-6) for d in range(L)]
    W1, b1, W2 = [0.0], [1.0], [table[0]]
    for d in (1, 2, 4):
        gap = x[d] - x[d - 1]
        a, k = x[d - 1] + gap / 4, 2 / gap
        W1 += [k, k]
        b1 += [-k * a, -k * a - 1]
        W2 += [table[bucket[d]] - table[bucket[d - 1]], -(table[bucket[d]] - table[bucket[d - 1]])]
    scheme = fire(width=7, L0=float(L), c=c)
    set_mlp(scheme, [W1], b1, W2)
    got = bias(scheme, L)
    for i in range(L):
        for j in range(i + 1):
            np.testing.assert_allclose(got[:, i, j], table[bucket[i - j]], rtol=0, atol=1e-12, err_msg=f"{i}, {j}")


def test_the_gradient_of_every_parameter_in_float64():
    # queries 0..7 with L = 1.1 x 4 = 4.4: some divide by psi(L) (the gradient reaches L's multiplier), some by
    # psi(i) (it does not); every parameter of f, c and the multiplier is perturbed entry by entry
    draw = np.random.default_rng(2)
    scheme = fire(width=5, L0=4.0, c=0.4, L_multiplier=1.1)
    set_mlp(scheme, draw.normal(size=(1, 5)), draw.normal(size=5), draw.normal(size=(5, 2)))
    q, k = qk(8, 8)
    pos = P(np.arange(8))
    params = scheme.parameters()
    assert len(params) == 5
    assert_gradcheck(lambda *ps: scheme.score_bias(q, k, pos, pos, 0), params, tol=1e-8)
    scheme.zero_grad()
    scheme.score_bias(q, k, pos, pos, 0).sum().backward()
    f = scheme.layers[0]
    assert abs(float(N(f.c.grad)[0])) > 1e-6 and abs(float(N(f.L_multiplier.grad)[0])) > 1e-6
    # past L only the queries' own positions divide: L's multiplier gets no gradient at all
    scheme.zero_grad()
    late = P(np.arange(5, 8))
    scheme.score_bias(q[:, :, :3], k, late, pos, 0).sum().backward()
    assert float(N(f.L_multiplier.grad)[0]) == 0.0


def small(max_len=8, **extra):
    cfg = GPTConfig(vocab_size=16, d_model=16, n_layers=2, n_heads=2, max_len=max_len, positional="fire", extra=extra)
    return TinyGPT(cfg)


def test_its_parameters_reach_the_optimiser_one_mlp_per_layer():
    model = small()
    fire_params = model.positional.parameters()
    assert len(fire_params) == 2 * 5                                   # W1, b1, W2, c, L_m in each layer
    assert {id(p) for p in fire_params} <= {id(p) for p in model.parameters()}
    before = [N(p.data).copy() for p in fire_params]
    x = backend.asarray(np.random.default_rng(3).integers(0, 16, (2, 8)))
    opt = AdamW(model.parameters(), lr=1e-2)
    model.zero_grad()
    model.loss(x, x).backward()
    opt.step()
    assert all(np.abs(N(p.data) - b).max() > 0 for p, b in zip(fire_params, before))
    assert model.positional.signature() == {"fire_width": 32, "fire_L": 8.0}     # fire_L defaults to max_len


def test_it_runs_past_its_training_length_with_no_table():
    model = small(max_len=8)
    x = backend.asarray(np.random.default_rng(4).integers(0, 16, (1, 40)))
    with no_grad():
        out = N(model(x).data)
    assert out.shape == (1, 40, 16) and np.isfinite(out).all()


def test_settings_and_refusals():
    assert small(fire_width=4, fire_L=3.0).positional.layers[1].W1.shape == (1, 4)
    assert small(fire_L=3).positional.layers[0].L0 == 3.0
    with pytest.raises(ValueError, match=r"FIRE: fire_width must be an integer >= 1, got 0"):
        small(fire_width=0)
    with pytest.raises(ValueError, match=r"FIRE: fire_L=-1.0 must be a number >= 0"):
        small(fire_L=-1.0)
    with pytest.raises(ValueError, match=r"^positional='fire' is causal only: its distance i - j and its normaliser "
                                         r"psi\(max\(L, i\)\) read keys at or before the query, so it cannot serve "
                                         r"TinyEncoder; use TinyGPT, or a bidirectional scheme such as 't5' or 'alibi'\.$"):
        TinyEncoder(GPTConfig(vocab_size=16, d_model=16, n_layers=1, n_heads=2, positional="fire"))
    with pytest.raises(ValueError, match=r"FIRE: fire_L='3' must be a number >= 0"):
        FIRE(2, 1, L0="3")
    assert FIRE(2, 1, L0=0).layers[0].L0 == 0.0 and FIRE(2, 1, L0=0.5).layers[0].L0 == 0.5
    cfg = GPTConfig(vocab_size=16, d_model=16, n_layers=1, n_heads=2, positional="fire")
    assert SCHEMES["fire"].from_config(cfg).layers[0].L0 == 64.0          # causal unless told: GPTConfig's max_len


def test_it_starts_as_the_paper_s_code_does_and_draws_from_the_model_s_seed():
    # c = 0.1 and L = L0 (multiplier 1) at the start; f's first layer O(1) slopes, its output near no bias
    f = FIRE(2, 3).layers
    assert len(f) == 3 and f[0].W1.shape == (1, 32) and f[0].L0 == 64.0
    assert float(N(f[0].c.data)[0]) == pytest.approx(0.1) and float(N(f[0].L_multiplier.data)[0]) == 1.0
    W1 = np.concatenate([N(g.W1.data).ravel() for g in f])                 # 96 draws of N(0, 1)
    W2 = np.concatenate([N(g.W2.data).ravel() for g in f])                 # 192 draws of N(0, 0.02^2)
    assert 0.7 < W1.std() < 1.3 and 0.01 < W2.std() < 0.03
    # without an rng: seed 0, the same weights each time; in a model: GPTConfig.seed's generator
    assert np.array_equal(N(FIRE(2, 1).layers[0].W1.data), N(FIRE(2, 1, rng=backend.rng(0)).layers[0].W1.data))
    seeds = [N(TinyGPT(GPTConfig(positional="fire", n_layers=1, seed=s)).positional.layers[0].W1.data) for s in (0, 1)]
    assert not np.array_equal(seeds[0], seeds[1])


def test_c_zero_flattens_every_distance_to_f_of_0():
    # psi = log(0 x + 1) = 0: every key of every query gets f(0) = W2^T relu(b1); the 1e-6 keeps it finite
    scheme = fire(width=2, L0=4.0, c=0.0)
    set_mlp(scheme, [[1.0, 1.0]], [0.5, -1.0], [[2.0, 1.0], [5.0, 5.0]])
    np.testing.assert_array_equal(bias(scheme, 6), np.ones((2, 6, 6)) * np.array([1.0, 0.5])[:, None, None])
