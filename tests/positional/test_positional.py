r"""Every positional scheme, tested by the property that defines it.

Expected numbers are worked by hand from the papers' formulas (the working sits
next to each number), never produced by the code under test. The chapter's
test names are kept. Everything runs on NumPy and on the strict CuPy stand-in.
"""
import math

import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.positional import (
    LearnedPositionalEmbedding, RelativePositionBias, RelativePositionBias2D, RotaryEmbedding, alibi_bias,
    alibi_slopes, apply_rotary, apply_rotary_complex, clipped_distance_index, relative_2d_index,
    relative_position_bucket, rope_channel_permutation, rotate_half, rotate_interleaved, sinusoidal_positional_encoding,
)

pytestmark = pytest.mark.usefixtures("each_backend")


def A(x, dtype=None):
    """Host data onto the active backend."""
    return backend.asarray(np.asarray(x), dtype=dtype)


def N(x):
    """Back to host NumPy (accepts a Tensor)."""
    return backend.to_numpy(x)


def randn(*shape, seed=0):
    return A(np.random.default_rng(seed).normal(size=shape))


# ---------------------------------------------------------------------------
# Sinusoidal and learned absolute positions
# ---------------------------------------------------------------------------

def test_sinusoidal_values_and_linear_offset_property():
    # d_model 4, base 10000: omega = (1, 10000^(-2/4) = 0.01); PE(t) = (sin t, cos t, sin .01t, cos .01t)
    pe = N(sinusoidal_positional_encoding(3, 4))
    assert pe.shape == (3, 4)
    np.testing.assert_allclose(pe[0], [0.0, 1.0, 0.0, 1.0], atol=1e-15)
    np.testing.assert_allclose(pe[1], [0.8414709848078965, 0.5403023058681398, 0.009999833334166664,
                                       0.9999500004166653], atol=1e-15)
    np.testing.assert_allclose(pe[2], [0.9092974268256817, -0.4161468365471424, 0.01999866669333308,
                                       0.9998000066665778], atol=1e-15)
    # PE(t + k) = R(k omega_i) PE(t) in each (sin, cos) pair, R(phi) = [[cos, sin], [-sin, cos]], same R for every t
    d, k = 8, 3
    pe = N(sinusoidal_positional_encoding(20, d))
    for i in range(d // 2):
        phi = k * 10000.0 ** (-2 * i / d)
        R = np.array([[math.cos(phi), math.sin(phi)], [-math.sin(phi), math.cos(phi)]])
        np.testing.assert_allclose(pe[k:, 2 * i:2 * i + 2], pe[:-k, 2 * i:2 * i + 2] @ R.T, atol=1e-12)


def test_sinusoidal_dot_product_depends_only_on_the_offset():
    # PE(m) . PE(n) = sum_i [sin(m w) sin(n w) + cos(m w) cos(n w)] = sum_i cos((m - n) w_i)
    d = 16
    pe = N(sinusoidal_positional_encoding(40, d))
    for m, n in [(7, 3), (3, 7), (30, 5), (12, 12)]:
        expected = sum(math.cos((m - n) * 10000.0 ** (-2 * i / d)) for i in range(d // 2))
        assert pe[m] @ pe[n] == pytest.approx(expected, abs=1e-12)


def test_learned_positional_embedding_offset():
    emb = LearnedPositionalEmbedding(8, 4, backend.rng(0))
    out = emb.rows(3, offset=5)
    assert out.shape == (1, 3, 4)
    np.testing.assert_array_equal(N(out)[0], N(emb.weight)[5:8])
    with pytest.raises(ValueError, match=r"T_max=8.*position 8 is at or past T_max=8"):
        emb.rows(3, offset=6)


# ---------------------------------------------------------------------------
# RoPE
# ---------------------------------------------------------------------------

def test_rotate_half():
    np.testing.assert_array_equal(N(rotate_half(A([1.0, 2.0, 3.0, 4.0]))), [-3.0, -4.0, 1.0, 2.0])
    np.testing.assert_array_equal(N(rotate_interleaved(A([1.0, 2.0, 3.0, 4.0]))), [-2.0, 1.0, -4.0, 3.0])


def _score(rope, q, k, m, n, interleaved=False):
    cos_m, sin_m = rope(1, offset=m)
    cos_n, sin_n = rope(1, offset=n)
    return float((apply_rotary(q, cos_m, sin_m, interleaved) * apply_rotary(k, cos_n, sin_n, interleaved)).sum())


@pytest.mark.parametrize("interleaved", [False, True])
def test_rope_relative_position_property(interleaved):
    rope = RotaryEmbedding(16, interleaved=interleaved)
    q, k = randn(1, 16, seed=1), randn(1, 16, seed=2)
    assert math.isclose(_score(rope, q, k, 3, 1, interleaved), _score(rope, q, k, 103, 101, interleaved),
                        rel_tol=1e-12)
    assert not math.isclose(_score(rope, q, k, 3, 1, interleaved), _score(rope, q, k, 3, 2, interleaved),
                            rel_tol=1e-3)


def test_rope_matches_complex_multiplication():
    # by hand: d 2, theta_0 = 1; (1, 0) at position 1 turns to (cos 1, sin 1); (0, 1) to (-sin 1, cos 1)
    rope = RotaryEmbedding(2, interleaved=True)
    cos, sin = rope(1, offset=1)
    np.testing.assert_allclose(N(apply_rotary(A([[1.0, 0.0], [0.0, 1.0]])[:, None, :], cos, sin, True))[:, 0],
                               [[0.5403023058681398, 0.8414709848078965], [-0.8414709848078965, 0.5403023058681398]],
                               atol=1e-15)
    d, T, offset = 8, 5, 7
    x = randn(2, 3, T, d, seed=3)
    pos = backend.asarray(np.arange(offset, offset + T))
    inv_freq = A([10000.0 ** (-2 * i / d) for i in range(d // 2)])
    reference = N(apply_rotary_complex(x, pos, inv_freq))
    cos, sin = RotaryEmbedding(d, interleaved=True)(T, offset)
    np.testing.assert_allclose(N(apply_rotary(x, cos, sin, interleaved=True)), reference, atol=1e-12)
    # the rotate-half convention is the same rotation after the channel permutation P
    P = rope_channel_permutation(d)
    cos, sin = RotaryEmbedding(d)(T, offset)
    np.testing.assert_allclose(N(apply_rotary(x[..., P], cos, sin)), reference[..., N(P)], atol=1e-12)


def test_rope_conventions_give_identical_scores_after_the_channel_permutation():
    d = 16
    # P by hand for d 8: even channels first, then odd ones
    np.testing.assert_array_equal(N(rope_channel_permutation(8)), [0, 2, 4, 6, 1, 3, 5, 7])
    np.testing.assert_array_equal(N(rope_channel_permutation(8, rotary_dim=4)), [0, 2, 1, 3, 4, 5, 6, 7])
    q, k = randn(1, d, seed=4), randn(1, d, seed=5)
    P = rope_channel_permutation(d)
    half, inter = RotaryEmbedding(d), RotaryEmbedding(d, interleaved=True)
    for m, n in [(0, 0), (5, 2), (40, 41)]:
        assert _score(half, q[..., P], k[..., P], m, n) == pytest.approx(_score(inter, q, k, m, n, True), abs=1e-12)
    # without the permutation the two conventions are different models
    assert abs(_score(half, q, k, 5, 2) - _score(inter, q, k, 5, 2, True)) > 1e-3


@pytest.mark.parametrize("interleaved", [False, True])
def test_rope_preserves_norms(interleaved):
    x = randn(2, 4, 9, 16, seed=6)
    cos, sin = RotaryEmbedding(16, interleaved=interleaved)(9, offset=1000)
    np.testing.assert_allclose(np.linalg.norm(N(apply_rotary(x, cos, sin, interleaved)), axis=-1),
                               np.linalg.norm(N(x), axis=-1), rtol=1e-12)


def test_rope_scores_are_not_monotone_in_distance():
    # q = k = all ones, d 8, rotate-half: pair (i, i+4) is (1, 1), so score(delta) = sum_i 2 cos(delta theta_i),
    # theta = (1, .1, .01, .001).  delta 3: 2(cos 3 + cos .3 + cos .03 + cos .003) = 2(-.98999 + .95534 + .99955
    # + 1.00000) = 3.9298;  delta 6: 2(cos 6 + cos .6 + cos .06 + cos .006) = 2(.96017 + .82534 + .99820 + .99998)
    # = 7.5674. The farther key scores higher.
    rope = RotaryEmbedding(8)
    ones = A(np.ones((1, 8)))
    s3, s6 = _score(rope, ones, ones, 3, 0), _score(rope, ones, ones, 6, 0)
    assert s3 == pytest.approx(2 * (math.cos(3) + math.cos(0.3) + math.cos(0.03) + math.cos(0.003)), abs=1e-13)
    assert s6 == pytest.approx(2 * (math.cos(6) + math.cos(0.6) + math.cos(0.06) + math.cos(0.006)), abs=1e-13)
    assert s6 > s3


def test_partial_rotary_turns_only_the_first_channels():
    d = 8
    rope = RotaryEmbedding(d, partial_rotary_factor=0.5)
    cos, sin = rope(6, offset=2)
    assert cos.shape == (6, 4)
    # theta over the rotary width r = 4: (1, 10000^(-2/4) = 0.01); position 2, pair 1 -> cos(0.02)
    assert float(cos[0, 1]) == pytest.approx(math.cos(0.02), abs=1e-15)
    x = randn(1, 1, 6, d, seed=7)
    y = N(apply_rotary(x, cos, sin))
    np.testing.assert_array_equal(y[..., 4:], N(x)[..., 4:])
    assert np.abs(y[..., :4] - N(x)[..., :4]).max() > 1e-2
    q, k = randn(1, d, seed=8), randn(1, d, seed=9)
    assert _score(rope, q, k, 9, 4) == pytest.approx(_score(rope, q, k, 25, 20), abs=1e-12)


def test_rope_scaling_modes():
    d = 8
    # linear by 2: angle (m / 2) theta_i, so position 8 sees what position 4 saw without scaling
    lin, plain = RotaryEmbedding(d, scaling="linear", factor=2.0), RotaryEmbedding(d)
    for a, b in zip(lin(1, offset=8), plain(1, offset=4)):
        np.testing.assert_allclose(N(a), N(b), atol=1e-15)
    # NTK by 2: base' = 10000 * 2^(8/6), theta_i' = base'^(-2i/8): theta_0 = 1 unchanged, and
    # theta_3' = 10000^(-3/4) * 2^(-1) = 0.001 / 2 = 0.0005 (the last pair slowed by exactly s)
    ntk = RotaryEmbedding(d, scaling="ntk", factor=2.0)
    assert float(ntk.inv_freq[0]) == 1.0
    assert float(ntk.inv_freq[-1]) == pytest.approx(0.0005, rel=1e-12)
    assert float(ntk.inv_freq[-1]) < float(plain.inv_freq[-1])
    # the seed-style front is only a way to write the dict
    as_dict = RotaryEmbedding(d, rope_scaling={"rope_type": "ntk", "factor": 2.0})
    np.testing.assert_array_equal(N(ntk.inv_freq), N(as_dict.inv_freq))
    # YaRN's attention factor multiplies cos and sin: 0.1 ln 4 + 1 = 1.1386294361 at position 0
    yarn = RotaryEmbedding(d, rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                            "original_max_position_embeddings": 2048})
    cos, sin = yarn(1, offset=0)
    np.testing.assert_allclose(N(cos), 1.138629436111989, rtol=1e-14)
    np.testing.assert_array_equal(N(sin), 0.0)


# ---------------------------------------------------------------------------
# T5 buckets
# ---------------------------------------------------------------------------

def _bucket(rel, bidirectional, **kw):
    return N(relative_position_bucket(A(np.array(rel)), bidirectional, **kw)).tolist()


def test_relative_position_bucket_properties():
    # bidirectional, 32 buckets, max_distance 128: 16 per direction, n_e = 8 exact.
    # n >= 8: 8 + floor(ln(n/8) / ln 16 * 8):  n 12 -> 8 + floor(1.170) = 9;  16 -> 8 + 2 = 10;
    # 20 -> 8 + floor(2.644) = 10;  64 -> 8 + 6 = 14;  100 -> 8 + floor(7.288) = 15;  1000 -> capped at 15.
    past = [0, -1, -7, -8, -12, -16, -20, -64, -100, -127, -128, -1000]   # key - query < 0: key in the past
    assert _bucket(past, True) == [0, 1, 7, 8, 9, 10, 10, 14, 15, 15, 15, 15]
    # keys in the future take the same buckets plus 16
    future = [1, 3, 8, 20, 1000]
    assert _bucket(future, True) == [17, 19, 24, 26, 31]
    # causal: all 32 for the past, n_e = 16: n 20 -> 16 + floor(ln 1.25 / ln 8 * 16) = 16 + floor(1.717) = 17;
    # 64 -> 16 + floor(10.67) = 26;  1000 -> capped at 31;  every future key -> 0
    assert _bucket([0, -15, -16, -20, -64, -1000, 1, 50], False) == [0, 15, 16, 17, 26, 31, 0, 0]
    # monotone in distance, in both directions
    d = np.arange(0, 300)
    assert np.all(np.diff(_bucket(-d, True)) >= 0) and np.all(np.diff(_bucket(d, True)) >= 0)
    assert np.all(np.diff(_bucket(-d, False)) >= 0)


def test_t5_bias_is_translation_invariant_and_queries_are_the_last_positions():
    bias = RelativePositionBias(3, num_buckets=8, max_distance=16, rng=backend.rng(1))
    full = N(bias.bias(12, 12))
    assert full.shape == (1, 3, 12, 12)
    np.testing.assert_array_equal(full[0, :, 2, 5], full[0, :, 6, 9])      # both have key - query = 3
    np.testing.assert_array_equal(full[0, :, 9, 1], full[0, :, 11, 3])     # both -8
    np.testing.assert_array_equal(N(bias.bias(4, 12)), full[:, :, 8:, :])
    # 8 buckets, max_distance 16, both directions: 4 a side, n_e = 2 exact; for n = i - j >= 2 the bucket is
    # 2 + floor(ln(n/2) / ln 8 * 2), capped at 3: n 2..5 -> 2 (5 gives floor(0.881)), n >= 6 -> 3 (floor(1.057));
    # a key ahead (n < 0) takes the bucket of |n| plus 4
    n = np.arange(12)[:, None] - np.arange(12)[None, :]
    by_hand = np.select([n == 0, n == 1, n <= 5, True], [0, 1, 2, 3], 0)
    by_hand = np.where(n < 0, np.select([-n == 1, -n <= 5, True], [1, 2, 3], 0) + 4, by_hand)
    np.testing.assert_array_equal(full[0], N(bias.table)[by_hand].transpose(2, 0, 1))


# ---------------------------------------------------------------------------
# ALiBi
# ---------------------------------------------------------------------------

def test_alibi_slopes_and_bias():
    # powers of two: 2^(-8h/H); H 8 -> 1/2 .. 1/256
    np.testing.assert_array_equal(N(alibi_slopes(8)), [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256])
    # H 6: the 4 slopes of H 4 (2^-2, 2^-4, 2^-6, 2^-8), then every other slope of H 8
    # (1/2, 1/8, 1/32, 1/128), the first 6 - 4 = 2 of them
    np.testing.assert_array_equal(N(alibi_slopes(6)), [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8])
    # H 12: the 8 slopes of H 8, then every other of H 16 (2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5)
    np.testing.assert_allclose(N(alibi_slopes(12)), [2.0 ** -h for h in range(1, 9)]
                               + [0.7071067811865476, 0.3535533905932738, 0.1767766952966369,
                                  0.08838834764831845], rtol=1e-15)
    # H 2 -> slopes 1/16, 1/256. T_q 2 queries at positions 1, 2 over keys 0, 1, 2; -m (i - j), 0 for the future
    np.testing.assert_allclose(N(alibi_bias(2, 2, 3)), [[[[-1 / 16, 0, 0], [-2 / 16, -1 / 16, 0]],
                                                         [[-1 / 256, 0, 0], [-2 / 256, -1 / 256, 0]]]])
    sym = N(alibi_bias(2, 3, 3, bidirectional=True))
    np.testing.assert_array_equal(sym, sym.transpose(0, 1, 3, 2))
    assert sym[0, 0, 0, 2] == -2 / 16


# ---------------------------------------------------------------------------
# Shaw and the 2-D window bias
# ---------------------------------------------------------------------------

def test_shaw_distance_is_clipped_to_k():
    # j - i clipped to [-2, 2], shifted by k = 2 into a row of a^K
    idx = N(clipped_distance_index(A(np.arange(5, 8)), A(np.arange(0, 8)), 2))
    assert idx.tolist() == [[0, 0, 0, 0, 1, 2, 3, 4], [0, 0, 0, 0, 0, 1, 2, 3], [0, 0, 0, 0, 0, 0, 1, 2]]


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


# ---------------------------------------------------------------------------
# Bad input: a sentence naming the argument, its value and the limit
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("make,message", [
    (lambda: RotaryEmbedding(7), r"d_head must be an integer >= 2 and even, got 7 \(RoPE turns pairs"),
    (lambda: RotaryEmbedding(10, partial_rotary_factor=0.5),
     r"partial_rotary_factor=0.5 of d_head=10 leaves rotary_dim=5 channels, which must be even"),
    (lambda: RotaryEmbedding(8, scaling="yarn"), r"scaling='yarn' must be None, 'linear' or 'ntk'"),
    (lambda: relative_position_bucket(A(np.arange(3)), True, num_buckets=31),
     r"num_buckets=31 is odd, but bidirectional=True"),
    (lambda: RelativePositionBias(4, num_buckets=31, bidirectional=True), r"num_buckets=31 is odd"),
    (lambda: RelativePositionBias(4).bias(5, 3), r"T_q=5 queries cannot be the last positions of T_k=3 keys"),
    (lambda: alibi_bias(4, 5, 3), r"T_q=5 queries cannot be the last positions of T_k=3 keys"),
    (lambda: RelativePositionBias2D(2, 4).bias(9), r"got T=9 tokens, but window_size=4 holds w\*w=16 tokens"),
    (lambda: RelativePositionBias2D(2, 4, table=A(np.zeros((25, 2)))),
     r"a table of shape \(25, 2\) does not fit window_size=4 and n_heads=2, which need .*\(49, 2\)"),
])
def test_bad_input_is_a_sentence_naming_the_argument(make, message):
    with pytest.raises(ValueError, match=message):
        make()
