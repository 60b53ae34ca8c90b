r"""T5's bucketed bias (Raffel et al., 2020): the buckets by hand, translation invariance, the encoder and decoder forms.

Expected numbers are worked by hand from the papers' formulas (the working sits next to each number),
never produced by the code under test. Everything runs on NumPy and on the strict CuPy stand-in.
"""
import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.model import GPTConfig
from mini_transformer.positional import make_scheme, relative_position_bucket, RelativePositionBias, SCHEMES

from positional_helpers import A, N, make, P, set_, qk

pytestmark = pytest.mark.usefixtures("each_backend")


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


def test_t5_causal_buckets_with_an_odd_count_by_hand():
    # causal, 5 buckets, max_distance 8: n_e = 5 // 2 = 2 exact; n >= 2: 2 + floor(ln(n/2) / ln 4 * 3), capped at 4:
    # n 3 -> floor(0.877) = 0 -> 2;  4 -> floor(1.5) -> 3;  5 -> floor(1.98) -> 3;  6 -> floor(2.38) -> 4;  8 -> 4
    from mini_transformer.positional import relative_position_bucket
    got = N(relative_position_bucket(P([0, -1, -2, -3, -4, -5, -6, -8]), False, num_buckets=5, max_distance=8))
    assert got.tolist() == [0, 1, 2, 2, 3, 3, 4, 4]


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


def test_t5_in_an_encoder_files_a_key_ahead_like_the_key_behind_plus_half_the_buckets():
    # 8 buckets split 4 and 4; a key d ahead sits in bucket(d behind) + 4. Table entry b of head h is 10 b + h.
    scheme = make("t5", {"num_buckets": 8, "max_distance": 16}, causal=False)
    set_(scheme.table, [[10 * b + h for h in range(2)] for b in range(8)])
    q, k = qk(12, 12)
    pos = P(np.arange(12))
    bias = N(scheme.score_bias(q, k, pos, pos, 0))[0]        # (H, 12, 12)
    np.testing.assert_array_equal(bias - bias.transpose(0, 2, 1),
                                  40 * np.sign(np.arange(12)[None, :] - np.arange(12)[:, None])[None] * np.ones((2, 1, 1)))


def test_a_config_s_scheme_takes_the_decoder_form_unless_told():
    cfg = GPTConfig(vocab_size=8, d_model=8, n_heads=2, n_layers=1, max_len=9, positional="t5")
    assert make_scheme(cfg, backend.rng(0)).bidirectional is False
    assert SCHEMES["t5"].from_config(cfg).bidirectional is False
