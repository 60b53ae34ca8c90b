r"""Every positional scheme by the property that defines it, and by one small case worked out by hand.

* Relative schemes: move every query and key by the same amount and the scores
  do not change; with the same token at every position the scores depend on
  i - j alone, and not on nothing.
* Encoder forms: ALiBi's bias is symmetric in i and j; T5 files a key d ahead in
  the bucket of a key d behind, plus half the buckets.
* One case per scheme with numbers from the paper's formula, worked in the
  comments beside them, never produced by the code under test.

The schemes are reached only through their hooks (``embed``, ``rotate``,
``score_bias``, ``output_term``), as attention reaches them.
"""
import math

import numpy as np
import pytest

from mini_transformer import Tensor
from mini_transformer.engine import backend
from mini_transformer.model import GPTConfig, TinyEncoder, TinyGPT
from mini_transformer.positional import SCHEMES, make_scheme

pytestmark = pytest.mark.usefixtures("each_backend")

SQRT2 = math.sqrt(2.0)


def make(name, extra=None, causal=True, d_model=8, n_heads=2, seed=0, **cfg):
    """A float64 scheme built from a config, with O(1) random parameters (a 0.02 init would hide mistakes)."""
    config = GPTConfig(vocab_size=8, d_model=d_model, n_heads=n_heads, n_layers=1, max_len=16, positional=name,
                       extra=dict(extra or {}), **cfg)
    scheme = make_scheme(config, backend.rng(seed), causal=causal).to_dtype("float64")
    draw = np.random.default_rng(seed + 1)
    for p in scheme.parameters():
        p.data[...] = backend.asarray(draw.normal(0, 0.5, p.shape))
    return scheme


def T(a):
    """A float64 Tensor on the active backend from host numbers."""
    return Tensor(backend.asarray(np.asarray(a, dtype=np.float64)))


def P(a):
    """Integer positions on the active backend."""
    return backend.asarray(np.asarray(a, dtype=np.int64))


def N(x):
    """Host NumPy from a Tensor or a backend array."""
    return backend.to_numpy(x)


def set_(param, values):
    param.data[...] = backend.asarray(np.asarray(values, dtype=np.float64))


def logits(scheme, q, k, q_pos, k_pos):
    r"""What attention adds up before the softmax: R q . R k / \sqrt{d_{head}} plus the scheme's score term."""
    q, k = scheme.rotate(q, q_pos, 0), scheme.rotate(k, k_pos, 0)
    s = N(q @ k.transpose(0, 1, 3, 2)) / math.sqrt(q.shape[-1])          # (B, H, T_q, T_k)
    bias = scheme.score_bias(q, k, q_pos, k_pos, 0)
    return s if bias is None else s + N(bias)


def qk(T_q, T_k, d_head=4, H=2, seed=0, same=False):
    """Random queries and keys (B 2, H, T, d_head); with ``same``, one query and one key repeated at every position."""
    draw = np.random.default_rng(seed)
    if same:
        q, k = draw.normal(size=(2, H, 1, d_head)), draw.normal(size=(2, H, 1, d_head))
        return T(np.repeat(q, T_q, axis=2)), T(np.repeat(k, T_k, axis=2))
    return T(draw.normal(size=(2, H, T_q, d_head))), T(draw.normal(size=(2, H, T_k, d_head)))


# ---------------------------------------------------------------------------
# Relative schemes: only the offset i - j matters
# ---------------------------------------------------------------------------

RELATIVE = [
    ("none", {}, True),
    ("shaw", {"shaw_k": 2}, True),
    ("shaw", {"shaw_k": 2, "shaw_values": False}, False),
    ("transformer_xl", {}, True),
    ("transformer_xl", {}, False),
    ("t5", {"num_buckets": 8, "max_distance": 6}, True),
    ("t5", {"num_buckets": 8, "max_distance": 6}, False),
    ("rope", {}, True),
    ("rope", {"rope_interleaved": True, "partial_rotary_factor": 0.5}, True),
    ("alibi", {}, True),
    ("alibi", {}, False),
    ("decoupled_rope", {"d_rope": 4}, True),
]
RELATIVE_IDS = [f"{n}{'-' + '-'.join(f'{k}={v}' for k, v in e.items()) if e else ''}-{'causal' if c else 'encoder'}"
                for n, e, c in RELATIVE]


def _visible(q_pos, k_pos, causal):
    """(T_q, T_k) host mask of the pairs attention keeps: all of them in an encoder, j <= i under the causal mask."""
    q, k = N(q_pos), N(k_pos)
    return np.ones((len(q), len(k)), bool) if not causal else k[None, :] <= q[:, None]


@pytest.mark.parametrize("name,extra,causal", RELATIVE, ids=RELATIVE_IDS)
@pytest.mark.parametrize("shift", [1, 29])
def test_moving_every_position_by_the_same_amount_leaves_the_scores_unchanged(name, extra, causal, shift):
    scheme = make(name, extra, causal)
    q, k = qk(4, 7)
    q_pos, k_pos = np.arange(3, 7), np.arange(0, 7)          # four new tokens after three cached ones
    here = logits(scheme, q, k, P(q_pos), P(k_pos))
    moved = logits(scheme, q, k, P(q_pos + shift), P(k_pos + shift))
    seen = _visible(P(q_pos), P(k_pos), causal)
    # float64; RoPE's angles m theta round to about m eps, so scores agree to ~1e-14
    np.testing.assert_allclose(moved[..., seen], here[..., seen], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name,extra,causal", RELATIVE, ids=RELATIVE_IDS)
def test_with_one_token_everywhere_the_scores_depend_on_the_offset_alone(name, extra, causal):
    # the same query and key at every position: a relative scheme's scores are constant along each diagonal
    # i - j = const (a Toeplitz matrix), and, unless the scheme is NoPE, differ between diagonals
    scheme = make(name, extra, causal)
    q, k = qk(6, 6, same=True)
    pos = P(np.arange(6))
    s = logits(scheme, q, k, pos, pos)                        # (2, H, 6, 6)
    seen = _visible(pos, pos, causal)
    offset = np.arange(6)[:, None] - np.arange(6)[None, :]
    per_offset = {}
    for d in np.unique(offset[seen]):
        on = seen & (offset == d)
        np.testing.assert_allclose(s[..., on], s[..., on][..., :1] * np.ones(on.sum()), rtol=0, atol=1e-12)
        per_offset[d] = s[..., on][..., 0]                    # (2, H)
    spread = max(np.abs(a - b).max() for a in per_offset.values() for b in per_offset.values())
    if name == "none":
        assert spread <= 1e-12                                # no position at all: every pair scores the same
    else:
        assert spread > 1e-2, f"{name}: the scores do not depend on the offset at all"


def test_decoupled_rope_scores_depend_on_the_offset_not_the_sum():
    # the rotary part is (R_i q^R)^T (R_j k^R) = q^{R T} R_{j-i} k^R; the pair (i, j) = (5, 1) and the pair (4, 2)
    # share the sum i + j = 6 but not the offset, and the pair (7, 3) shares the offset 4 with (5, 1)
    scheme = make("decoupled_rope", {"d_rope": 4})
    q, k = qk(1, 1, same=True)
    at = {(i, j): logits(scheme, q, k, P([i]), P([j]))[..., 0, 0] for i, j in [(5, 1), (4, 2), (7, 3)]}
    np.testing.assert_allclose(at[(7, 3)], at[(5, 1)], rtol=0, atol=1e-12)
    assert np.abs(at[(4, 2)] - at[(5, 1)]).max() > 1e-2


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


# ---------------------------------------------------------------------------
# Encoder forms
# ---------------------------------------------------------------------------

def test_alibi_in_an_encoder_is_symmetric_and_is_minus_slope_times_distance():
    # TinyEncoder builds its scheme itself: H 2 gives slopes 2^-4 and 2^-8; the bias is -m |i - j|
    scheme = TinyEncoder(GPTConfig(vocab_size=8, d_model=8, n_heads=2, n_layers=1, max_len=8,
                                   positional="alibi")).positional
    q, k = qk(4, 4)
    pos = P(np.arange(10, 14))
    bias = N(scheme.score_bias(q, k, pos, pos, 0))[0]         # (H, 4, 4)
    np.testing.assert_array_equal(bias, bias.transpose(0, 2, 1))
    distance = np.array([[0, 1, 2, 3], [1, 0, 1, 2], [2, 1, 0, 1], [3, 2, 1, 0]])
    np.testing.assert_array_equal(bias[0], -distance / 16)
    np.testing.assert_array_equal(bias[1], -distance / 256)


def test_alibi_in_a_decoder_penalises_the_past_only():
    # one decoding step: the query at 5 over keys at 0, 3, 4, 5 (a window that dropped 1 and 2): -m (5 - j)
    scheme = make("alibi", causal=True)
    q, k = qk(1, 4)
    bias = N(scheme.score_bias(q, k, P([5]), P([0, 3, 4, 5]), 0))[0, :, 0]      # (H, 4)
    np.testing.assert_array_equal(bias, [[-5 / 16, -2 / 16, -1 / 16, 0.0], [-5 / 256, -2 / 256, -1 / 256, 0.0]])


def test_t5_in_an_encoder_files_a_key_ahead_like_the_key_behind_plus_half_the_buckets():
    # 8 buckets split 4 and 4; a key d ahead sits in bucket(d behind) + 4. Table entry b of head h is 10 b + h.
    scheme = make("t5", {"num_buckets": 8, "max_distance": 16}, causal=False)
    set_(scheme.table, [[10 * b + h for h in range(2)] for b in range(8)])
    q, k = qk(12, 12)
    pos = P(np.arange(12))
    bias = N(scheme.score_bias(q, k, pos, pos, 0))[0]        # (H, 12, 12)
    np.testing.assert_array_equal(bias - bias.transpose(0, 2, 1),
                                  40 * np.sign(np.arange(12)[None, :] - np.arange(12)[:, None])[None] * np.ones((2, 1, 1)))


# ---------------------------------------------------------------------------
# One small case per scheme, worked by hand
# ---------------------------------------------------------------------------

def test_none_adds_nothing_anywhere():
    scheme = make("none")
    x, q = T(np.arange(24.0).reshape(2, 3, 4)), T(np.arange(16.0).reshape(1, 2, 2, 4))
    pos = P([7, 8])
    np.testing.assert_array_equal(N(scheme.embed(x, 5)), np.arange(24.0).reshape(2, 3, 4))
    np.testing.assert_array_equal(N(scheme.rotate(q, pos, 0)), np.arange(16.0).reshape(1, 2, 2, 4))
    assert scheme.score_bias(q, q, pos, pos, 0) is None and scheme.output_term(q, pos, pos, 0) is None


def test_sinusoidal_embed_by_hand_with_the_config_base():
    # d_model 4, base 100: omega = (100^0, 100^(-2/4)) = (1, 0.1); PE(t) = (sin t, cos t, sin .1t, cos .1t)
    scheme = make("sinusoidal", d_model=4, n_heads=1, sinusoidal_base=100.0)
    out = N(scheme.embed(T(np.zeros((1, 2, 4))), 1))[0]      # positions 1 and 2
    np.testing.assert_allclose(out, [[0.8414709848078965, 0.5403023058681398, 0.09983341664682815, 0.9950041652780258],
                                     [0.9092974268256817, -0.4161468365471424, 0.19866933079506122, 0.9800665778412416]],
                               rtol=0, atol=1e-15)


def test_learned_embed_adds_the_rows_of_its_positions():
    # a table whose row t is (t, -t, 10 t, 0); tokens at positions 2, 3, 4 get rows 2, 3, 4 added
    scheme = make("learned", d_model=4, n_heads=1)
    set_(scheme.weight, [[t, -t, 10 * t, 0] for t in range(16)])
    out = N(scheme.embed(T(np.ones((1, 3, 4))), 2))[0]
    np.testing.assert_array_equal(out, [[3, -1, 21, 1], [4, -2, 31, 1], [5, -3, 41, 1]])


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


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "encoder"])
def test_transformer_xl_terms_b_c_d_by_hand(causal):
    # d_model 2, one head: R_d = (sin d, cos d) (omega_0 = 1 for any base), W_{k,R} = I, v = (0.5, 0), u = (0, 2),
    # q_0 = (1, 0), q_1 = (0, 1), k_0 = (1, 1), k_1 = (3, 0). A_ij = (q_i + v) . R_{i-j} + u . k_j, over sqrt 2:
    #   (0, 0): (1.5, 0).(0, 1) + 2 = 2            (1, 0): (0.5, 1).(sin 1, cos 1) + 2 = 0.5 sin 1 + cos 1 + 2
    #   (1, 1): (0.5, 1).(0, 1) + 0 = 1            (0, 1): (1.5, 0).(-sin 1, cos 1) + 0 = -1.5 sin 1 (encoder only)
    scheme = make("transformer_xl", d_model=2, n_heads=1, causal=causal)
    set_(scheme.layers[0].W_kR.weight, np.eye(2))
    set_(scheme.v, [[0.5, 0.0]])
    set_(scheme.u, [[0.0, 2.0]])
    q, k = T([[[[1, 0], [0, 1]]]]), T([[[[1, 1], [3, 0]]]])
    pos = P([4, 5])                                          # any two consecutive positions: only i - j counts
    got = N(scheme.score_bias(q, k, pos, pos, 0))[0, 0] * SQRT2
    s1, c1 = math.sin(1.0), math.cos(1.0)
    assert got[0, 0] == pytest.approx(2.0, abs=1e-15) and got[1, 1] == pytest.approx(1.0, abs=1e-15)
    assert got[1, 0] == pytest.approx(0.5 * s1 + c1 + 2.0, abs=1e-15)
    if not causal:
        assert got[0, 1] == pytest.approx(-1.5 * s1, abs=1e-15)


@pytest.mark.parametrize("causal, extra, buckets", [
    # causal, 4 buckets, max_distance 8: n_e = 2 exact (n = 0, 1); n >= 2: 2 + floor(ln(n/2) / ln 4 * 2), capped
    # at 3: n 2 -> 2 + 0, 3 -> 2 + floor(0.585) = 2, 4 -> 2 + floor(1.0) = 3 (exactly on the boundary), 5.. -> 3;
    # a future key (n < 0) -> 0
    (True, {"num_buckets": 4, "max_distance": 8},
     {-5: 0, -1: 0, 0: 0, 1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 11: 3}),
    # encoder, 8 buckets, max_distance 16: 4 a side, n_e = 2; n >= 2: 2 + floor(ln(n/2) / ln 8 * 2), capped at 3:
    # 3 -> floor(0.390), 5 -> floor(0.881): 2; 6 -> floor(1.057): 3; a key n ahead: bucket(n behind) + 4
    (False, {"num_buckets": 8, "max_distance": 16},
     {-11: 7, -6: 7, -5: 6, -2: 6, -1: 5, 0: 0, 1: 1, 2: 2, 5: 2, 6: 3, 11: 3}),
], ids=["causal", "encoder"])
def test_t5_bias_by_hand(causal, extra, buckets):
    # n = i - j, how far back the key is. Table entry b of head h is 10 b + h, so the bias names its bucket.
    scheme = make("t5", extra, causal=causal)
    set_(scheme.table, [[10 * b + h for h in range(2)] for b in range(extra["num_buckets"])])
    q, k = qk(12, 12)
    pos = P(np.arange(12))
    bias = N(scheme.score_bias(q, k, pos, pos, 0))[0]        # (H, 12, 12)
    for n, b in buckets.items():
        i, j = (11, 11 - n) if n >= 0 else (0, -n)
        assert bias[:, i, j].tolist() == [10 * b, 10 * b + 1], (n, b)


@pytest.mark.parametrize("interleaved, want", [
    # d_head 4, base 100: theta = (1, 0.1). x = (1, 0, 0, 1) at position 2.
    # rotate-half pairs (0, 2), (1, 3): (1, 0) turned by 2 -> (cos 2, sin 2); (0, 1) turned by .2 -> (-sin .2, cos .2)
    (False, [-0.4161468365471424, -0.19866933079506122, 0.9092974268256817, 0.9800665778412416]),
    # interleaved pairs (0, 1), (2, 3): (1, 0) turned by 2, (0, 1) turned by .2
    (True, [-0.4161468365471424, 0.9092974268256817, -0.19866933079506122, 0.9800665778412416]),
], ids=["rotate-half", "interleaved"])
def test_rope_rotate_by_hand_with_the_config_base(interleaved, want):
    scheme = make("rope", {"rope_interleaved": interleaved}, d_model=4, n_heads=1, rope_base=100.0)
    out = N(scheme.rotate(T([[[[1.0, 0.0, 0.0, 1.0]]]]), P([2]), 0))[0, 0, 0]
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-15)


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


def test_decoupled_rope_rotary_score_by_hand():
    # d_model 2, one head, d_rope 2 (theta_0 = 1): W^{QR} = W^{KR} = I, q = (1, 0), k = (0, 1) at every position,
    # so q^R = (1, 0), k^R = (0, 1). Rotate-half on 2 channels: R_m (a, b) = (a cos m - b sin m, b cos m + a sin m),
    # R_i q^R = (cos i, sin i), R_j k^R = (-sin j, cos j); their product is sin(i - j), over sqrt(d_head) = sqrt 2
    scheme = make("decoupled_rope", {"d_rope": 2}, d_model=2, n_heads=1)
    set_(scheme.layers[0].W_QR.weight, np.eye(2))
    set_(scheme.layers[0].W_KR.weight, np.eye(2))
    q_pos, k_pos = [3, 4], [0, 1, 2, 3, 4]
    q, k = T(np.tile([1.0, 0.0], (1, 1, 2, 1))), T(np.tile([0.0, 1.0], (1, 1, 5, 1)))
    got = N(scheme.score_bias(q, k, P(q_pos), P(k_pos), 0))[0, 0]
    np.testing.assert_allclose(got, [[math.sin(i - j) / SQRT2 for j in k_pos] for i in q_pos], rtol=0, atol=1e-15)


# ---------------------------------------------------------------------------
# Building a scheme: defaults, the generator, the initial scale, the dtype
# ---------------------------------------------------------------------------

def _schemes_with_parameters():
    """Constructors of the schemes with parameters, each taking ``rng`` (None: the scheme's own default)."""
    from mini_transformer.positional import (DecoupledRoPE, LearnedPositionalEmbedding, RelativePositionBias,
                                             RelativePositionBias2D, ShawRelativePosition, TransformerXLRelative)
    return {
        "learned": lambda **kw: LearnedPositionalEmbedding(16, 32, **kw),
        "shaw": lambda **kw: ShawRelativePosition(8, 2, **kw),
        "transformer_xl": lambda **kw: TransformerXLRelative(64, 2, 2, **kw),
        "t5": lambda **kw: RelativePositionBias(4, **kw),
        "relative_2d": lambda **kw: RelativePositionBias2D(4, 4, **kw),
        "decoupled_rope": lambda **kw: DecoupledRoPE(32, 2, 2, **kw),
    }


@pytest.mark.parametrize("name", sorted(_schemes_with_parameters()))
def test_a_scheme_built_without_a_generator_is_the_one_built_with_seed_0(name):
    build = _schemes_with_parameters()[name]
    own, seeded, other = build(), build(rng=backend.rng(0)), build(rng=backend.rng(1))
    for a, b, c in zip(own.parameters(), seeded.parameters(), other.parameters()):
        np.testing.assert_array_equal(N(a), N(b))
    assert any(not np.array_equal(N(a), N(c)) for a, c in zip(own.parameters(), other.parameters()))


@pytest.mark.parametrize("name", sorted(_schemes_with_parameters()))
def test_initial_parameters_are_drawn_with_std_0_02(name):
    # GPT-2's init, N(0, 0.02^2): with at least 64 draws per tensor the sample std lies within 25% of 0.02
    # (about 4 standard errors at n = 64)
    for p in _schemes_with_parameters()[name]().parameters():
        values = N(p).ravel()
        assert values.size >= 64 and 0.015 < values.std() < 0.025, (name, p.shape, values.std())


@pytest.mark.parametrize("name", ["learned", "shaw", "transformer_xl", "t5", "relative_2d", "decoupled_rope"])
def test_the_model_generator_decides_a_scheme_s_parameters(name):
    cfg = GPTConfig(vocab_size=8, d_model=8, n_heads=2, n_layers=1, max_len=9, positional=name)
    a, b, c = (make_scheme(cfg, backend.rng(seed)) for seed in (3, 3, 4))
    assert all(np.array_equal(N(x), N(y)) for x, y in zip(a.parameters(), b.parameters()))
    assert all(not np.array_equal(N(x), N(z)) for x, z in zip(a.parameters(), c.parameters()))


def test_constructor_defaults_are_the_papers():
    from mini_transformer.positional import (ALiBi, DecoupledRoPE, RelativePositionBias, RotaryEmbedding,
                                             ShawRelativePosition, SinusoidalPositionalEncoding,
                                             TransformerXLRelative)
    assert ShawRelativePosition(4, 1).signature() == {"shaw_k": 16, "shaw_values": True}
    assert RelativePositionBias(2).signature() == {"num_buckets": 32, "max_distance": 128, "bidirectional": True}
    assert TransformerXLRelative(8, 2, 1).signature() == {"mem_len": None, "sinusoidal_base": 10000.0, "causal": True}
    assert DecoupledRoPE(8, 2, 1).signature() == {"d_rope": 2, "rope_base": 10000.0, "rope_scaling": None,
                                                  "max_len": None}
    assert SinusoidalPositionalEncoding(4).signature() == {"sinusoidal_base": 10000.0}
    assert ALiBi(2).signature() == {"bidirectional": False}
    # the chapter's front: linear scaling with the default factor is factor 1, no scaling; "none" is no scaling
    for rope in (RotaryEmbedding(8, scaling="linear"), RotaryEmbedding(8, scaling="none")):
        np.testing.assert_array_equal(N(rope.inv_freq), [1.0, 0.1, 0.01, 0.001])
    # tables start at position 0 unless told otherwise
    cos, _ = RotaryEmbedding(8)(3)
    np.testing.assert_allclose(N(cos)[:, 0], [1.0, math.cos(1.0), math.cos(2.0)], rtol=0, atol=1e-15)


def test_a_config_s_scheme_takes_the_decoder_form_unless_told():
    cfg = GPTConfig(vocab_size=8, d_model=8, n_heads=2, n_layers=1, max_len=9, positional="t5")
    assert make_scheme(cfg, backend.rng(0)).bidirectional is False
    assert SCHEMES["t5"].from_config(cfg).bidirectional is False


FLOAT32_CASES = [("none", {}), ("sinusoidal", {}), ("learned", {}), ("shaw", {"shaw_k": 2}),
                 ("transformer_xl", {}), ("t5", {"num_buckets": 8, "max_distance": 6}), ("rope", {}),
                 ("rope", {"rope_scaling": {"rope_type": "yarn", "factor": 2.0}}), ("alibi", {}),
                 ("relative_2d", {"window_size": 3}), ("decoupled_rope", {"d_rope": 2})]


@pytest.mark.parametrize("name,extra", FLOAT32_CASES, ids=[f"{n}{'-' + str(e) if e else ''}" for n, e in FLOAT32_CASES])
def test_a_float32_model_stays_float32_through_every_hook(name, extra):
    # the tables are built in float64; each hook must hand back the dtype of what it was given
    extra = dict(extra)
    scaling = extra.pop("rope_scaling", None)
    cfg = GPTConfig(vocab_size=8, d_model=8, n_heads=2, n_layers=1, max_len=9, positional=name, extra=extra,
                    rope_scaling=scaling)
    scheme = make_scheme(cfg, backend.rng(0))
    x32 = Tensor(backend.asarray(np.ones((1, 3, 8), dtype=np.float32)))
    q32 = Tensor(backend.asarray(np.random.default_rng(0).normal(size=(1, 2, 3, 4)).astype(np.float32)))
    pos = P([0, 1, 2])
    assert str(scheme.embed(x32, 0).dtype) == "float32"
    assert str(scheme.rotate(q32, pos, 0).dtype) == "float32"
    bias = scheme.score_bias(q32, q32, pos, pos, 0)
    assert bias is None or str(bias.dtype) == "float32"
    assert str(TinyGPT(cfg)(np.zeros((1, 3), dtype=np.int64)).dtype) == "float32"


# ---------------------------------------------------------------------------
# Edges of each scheme's arguments
# ---------------------------------------------------------------------------

def test_rope_signature_by_hand():
    from mini_transformer.positional import RoPE
    plain = make("rope", d_model=8, n_heads=1)                    # d_head 8, max_len 16
    assert plain.signature() == {"rope_interleaved": False, "partial_rotary_factor": 1.0, "rope_base": 10000.0,
                                 "rope_scaling": None, "max_len": 16, "rope_theta": 10000.0, "rotary_dim": 8,
                                 "pairing": "rotate-half (i, i + d/2)", "rope_type": "default",
                                 "original_max_position_embeddings": 16, "target_max_position_embeddings": 16}
    # YaRN trained at 4, stretched 2x, in a model whose max_len is 16: the record keeps 4 and 8, not 16
    yarn = {"type": "yarn", "factor": 2.0, "original_max_position_embeddings": 4}
    sig = make("rope", {"rope_interleaved": True}, d_model=8, n_heads=1, rope_scaling=yarn).signature()
    assert (sig["pairing"], sig["rope_type"], sig["original_max_position_embeddings"],
            sig["target_max_position_embeddings"]) == ("interleaved (2i, 2i+1)", "yarn", 4, 8)
    assert RoPE(8).signature()["target_max_position_embeddings"] is None      # built with no length at all
    assert RoPE(8, rope_scaling={"type": "dynamic", "factor": 2.0}, max_position_embeddings=4).rerotate_keys


def test_rope_tables_for_no_positions_are_empty_even_when_they_depend_on_the_length():
    rope = make("rope", d_model=8, n_heads=1, rope_scaling={"rope_type": "dynamic", "factor": 2.0})
    cos, sin = rope.rotary.at(P(np.zeros(0)))
    assert N(cos).shape == (0, 8) and N(sin).shape == (0, 8)


def test_the_public_apply_rotary_takes_a_tensor_and_its_gradient():
    from mini_transformer.engine.gradcheck import assert_gradcheck
    from mini_transformer.positional import RotaryEmbedding, apply_rotary
    for interleaved in (False, True):
        cos, sin = RotaryEmbedding(4, interleaved=interleaved)(3, offset=2)
        a = np.random.default_rng(1).normal(size=(1, 2, 3, 4))
        x = Tensor(backend.asarray(a), requires_grad=True)
        np.testing.assert_allclose(N(apply_rotary(x, cos, sin, interleaved)),
                                   N(apply_rotary(backend.asarray(a), cos, sin, interleaved)), rtol=0, atol=1e-15)
        # linear in x, so only rounding is left (see test_positional_ops)
        assert_gradcheck(lambda t: apply_rotary(t, cos, sin, interleaved), [x], tol=1e-9)


@pytest.mark.parametrize("make_it, message", [
    ("ShawRelativePosition(4, 1, k=0)", "ShawRelativePosition: shaw_k must be an integer >= 1, got 0 (the clipping distance)."),
    ("RelativePositionBias2D(2, 0)", "RelativePositionBias2D: window_size must be an integer >= 1, got 0."),
    ("DecoupledRoPE(8, 2, 1, d_rope=3)", "DecoupledRoPE: d_rope must be an integer >= 2 and even, got 3 (RoPE turns pairs of channels)."),
    ("DecoupledRoPE(8, 2, 1, d_rope=0)", "DecoupledRoPE: d_rope must be an integer >= 2 and even, got 0 (RoPE turns pairs of channels)."),
    ("alibi_slopes(0)", "alibi_slopes: n_heads must be an integer >= 1, got 0."),
    ("TransformerXLRelative(8, 2, 1, mem_len=0)", "transformer_xl: mem_len must be an integer >= 1, got 0."),
    ("RotaryEmbedding(3)", "RotaryEmbedding: d_head must be an integer >= 2 and even, got 3 (RoPE turns pairs of channels)."),
    ("RotaryEmbedding(8, partial_rotary_factor=0)", "RotaryEmbedding: partial_rotary_factor=0 must lie in (0, 1]."),
    ("RotaryEmbedding(8, partial_rotary_factor=1.5)", "RotaryEmbedding: partial_rotary_factor=1.5 must lie in (0, 1]."),
    ("rope_channel_permutation(8, rotary_dim=0)", "rope_channel_permutation: rotary_dim=0 must be even and in (0, d_head=8]."),
    ("rope_channel_permutation(8, rotary_dim=3)", "rope_channel_permutation: rotary_dim=3 must be even and in (0, d_head=8]."),
    ("rope_channel_permutation(8, rotary_dim=10)", "rope_channel_permutation: rotary_dim=10 must be even and in (0, d_head=8]."),
    ("RelativePositionBias(2, num_buckets=2, bidirectional=True)",
     "relative_position_bucket: num_buckets=2 leaves 1 bucket per direction; T5's rule needs at least 2 (exact ones "
     "and log-spaced ones)."),
    ("RelativePositionBias(2, num_buckets=8, max_distance=2)",
     "relative_position_bucket: max_distance=2 must exceed the 2 exact distances, or the log-spaced buckets have no "
     "range to cover."),
    ("RelativePositionBias(2, num_buckets=1, bidirectional=False)",
     "relative_position_bucket: num_buckets must be an integer >= 2, got 1."),
])
def test_bad_arguments_are_refused_in_one_exact_sentence(make_it, message):
    from mini_transformer import positional
    from mini_transformer.positional import transformer_xl
    names = {**vars(positional), "TransformerXLRelative": transformer_xl.TransformerXLRelative}
    with pytest.raises(ValueError) as info:
        eval(make_it, names)
    assert str(info.value) == message


def test_the_smallest_legal_arguments_work():
    from mini_transformer.positional import (RelativePositionBias, RelativePositionBias2D, TransformerXLRelative,
                                             alibi_slopes, relative_position_bucket)
    assert N(alibi_slopes(1)).tolist() == [2.0 ** -8]                         # H 1: 2^(-8 * 1/1)
    assert N(RelativePositionBias2D(1, 1, rng=backend.rng(0)).bias(1)).shape == (1, 1, 1, 1)   # a 1 x 1 window
    assert N(RelativePositionBias(2, num_buckets=4, max_distance=3).bias(2, 2)).shape == (1, 2, 2, 2)  # 2 a side
    assert RelativePositionBias(2, num_buckets=2, max_distance=2, bidirectional=False).num_buckets == 2
    TransformerXLRelative(8, 2, 1, mem_len=None)                              # no memory limit is allowed
    assert N(relative_position_bucket(P([3, -3]))).tolist() == [19, 3]        # both directions, 32 buckets


def test_t5_causal_buckets_with_an_odd_count_by_hand():
    # causal, 5 buckets, max_distance 8: n_e = 5 // 2 = 2 exact; n >= 2: 2 + floor(ln(n/2) / ln 4 * 3), capped at 4:
    # n 3 -> floor(0.877) = 0 -> 2;  4 -> floor(1.5) -> 3;  5 -> floor(1.98) -> 3;  6 -> floor(2.38) -> 4;  8 -> 4
    from mini_transformer.positional import relative_position_bucket
    got = N(relative_position_bucket(P([0, -1, -2, -3, -4, -5, -6, -8]), False, num_buckets=5, max_distance=8))
    assert got.tolist() == [0, 1, 2, 2, 3, 3, 4, 4]


def test_the_2d_bias_of_a_whole_window_and_a_given_table():
    from mini_transformer.positional import RelativePositionBias2D
    table = backend.asarray(np.arange(9.0)[:, None] * np.ones((1, 2)))      # row r holds r for both heads
    bias = RelativePositionBias2D(2, 2, table=table)
    np.testing.assert_array_equal(N(bias.bias(4))[0, 0], [[4, 3, 1, 0], [5, 4, 2, 1], [7, 6, 4, 3], [8, 7, 5, 4]])


@pytest.mark.parametrize("q_pos, k_pos, name", [([0, 2], [0, 1, 2], "q_pos"), ([1, 2], [0, 2], "k_pos")])
def test_transformer_xl_refuses_positions_with_a_gap(q_pos, k_pos, name):
    scheme = make("transformer_xl", causal=False)
    q, k = qk(len(q_pos), len(k_pos))
    with pytest.raises(ValueError, match=rf"^transformer_xl: {name} must be consecutive integer positions"):
        scheme.score_bias(q, k, P(q_pos), P(k_pos), 0)


def test_transformer_xl_reads_the_config_s_sinusoidal_base():
    # d_model 4, one head, base 100: R_d = (sin d, cos d, sin(d/10), cos(d/10)); W_{k,R} = I, u = v = 0 and
    # q = (0, 0, 1, 0) leave (b) = sin((i - j)/10), over sqrt(d_head) = 2
    scheme = make("transformer_xl", d_model=4, n_heads=1, causal=False, sinusoidal_base=100.0)
    set_(scheme.layers[0].W_kR.weight, np.eye(4))
    set_(scheme.u, np.zeros((1, 4)))
    set_(scheme.v, np.zeros((1, 4)))
    q = T(np.tile([0.0, 0.0, 1.0, 0.0], (1, 1, 3, 1)))
    got = N(scheme.score_bias(q, q, P([0, 1, 2]), P([0, 1, 2]), 0))[0, 0]
    np.testing.assert_allclose(got, [[math.sin((i - j) / 10) / 2 for j in range(3)] for i in range(3)],
                               rtol=0, atol=1e-15)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_rope_from_your_functions_turns_like_the_library_at_any_offset(dtype):
    # the chapter's side-by-side scheme: tables from RotaryEmbedding, the turn from the public apply_rotary
    from exercises.adapters import from_functions
    from mini_transformer.positional.rope import RotaryEmbedding, apply_rotary
    mine = from_functions.rope(RotaryEmbedding(4), apply_rotary)
    library = make("rope", d_model=4, n_heads=1)
    x = Tensor(backend.asarray(np.random.default_rng(2).normal(size=(1, 1, 3, 4)).astype(dtype)))
    for pos in ([5, 6, 7], [0]):
        got = mine.rotate(x[:, :, :len(pos)], P(pos), 0)
        assert str(got.dtype) == dtype
        np.testing.assert_allclose(N(got), N(library.rotate(x[:, :, :len(pos)], P(pos), 0)), rtol=0,
                                   atol=1e-15 if dtype == "float64" else 1e-6)
