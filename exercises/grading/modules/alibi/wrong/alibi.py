"""Wrong alibi_slopes and alibi_bias, as readers write them."""
import math

from mini_transformer.engine.backend import xp

# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("slopes_naive", "alibi.alibi_slopes", "misconception", "non_power_of_two"),
    ("slopes_from_one", "alibi.alibi_slopes", "misconception", "starts_at_one"),
    ("slopes_duplicates", "alibi.alibi_slopes", "misconception", "duplicate_slopes"),
    ("bias_positive", "alibi.alibi_bias", "misconception", "positive_sign"),
    ("bias_queries_first", "alibi.alibi_bias", "misconception", "queries_at_start"),
    ("bias_future_bonus", "alibi.alibi_bias", "misconception", "future_not_clamped"),
    ("bias_no_batch_axis", "alibi.alibi_bias", "shape", "missing_batch_axis"),
    ("slopes_rounded_up", "alibi.alibi_slopes", "misconception", "next_power_of_two"),
    ("bias_abs_distance", "alibi.alibi_bias", "misconception", "symmetric_in_causal"),
    ("symmetric_causal", "alibi.alibi_bias_symmetric", "misconception", "causal_form"),
    ("symmetric_signed", "alibi.alibi_bias_symmetric", "misconception", "signed_distance"),
    ("symmetric_plus", "alibi.alibi_bias_symmetric", "misconception", "positive_sign"),
    ("symmetric_no_batch_axis", "alibi.alibi_bias_symmetric", "shape", "missing_batch_axis"),
]


def _pow2(c, first):
    return 2.0 ** (-8.0 * xp.arange(first, first + c, dtype=xp.float64) / c)


def _slopes(n_heads, first=1, pick=0):
    c = 2 ** int(math.log2(n_heads))
    if c == n_heads:
        return _pow2(c, first)
    return xp.concatenate([_pow2(c, first), _pow2(2 * c, first)[pick::2][: n_heads - c]])


def slopes_naive(n_heads):
    return 2.0 ** (-8.0 * xp.arange(1, n_heads + 1, dtype=xp.float64) / n_heads)


def slopes_from_one(n_heads):
    return _slopes(n_heads, first=0)  # 2^0 = 1 for the first head


def slopes_duplicates(n_heads):
    return _slopes(n_heads, pick=1)  # the 2nd, 4th, ... slopes of the 2c sequence repeat the first c


def _distance(T_q, T_k, q_start, clamp=True):
    q = xp.arange(q_start, q_start + T_q)[:, None]
    d = (q - xp.arange(T_k)[None, :]).astype(xp.float64)
    return xp.maximum(d, 0.0) if clamp else d


def bias_positive(n_heads, T_q, T_k):
    return _slopes(n_heads)[None, :, None, None] * _distance(T_q, T_k, T_k - T_q)[None, None]


def bias_queries_first(n_heads, T_q, T_k):
    return -_slopes(n_heads)[None, :, None, None] * _distance(T_q, T_k, 0)[None, None]


def bias_future_bonus(n_heads, T_q, T_k):
    return -_slopes(n_heads)[None, :, None, None] * _distance(T_q, T_k, T_k - T_q, clamp=False)[None, None]


def bias_no_batch_axis(n_heads, T_q, T_k):
    return -_slopes(n_heads)[:, None, None] * _distance(T_q, T_k, T_k - T_q)[None]


def slopes_rounded_up(n_heads):
    c = 1 << (n_heads - 1).bit_length()  # the next power of two, then keep the first n_heads
    return _pow2(c, 1)[:n_heads]


def bias_abs_distance(n_heads, T_q, T_k):
    q = xp.arange(T_k - T_q, T_k)[:, None]
    d = xp.abs(q - xp.arange(T_k)[None, :]).astype(xp.float64)  # the encoder's form in a causal model
    return -_slopes(n_heads)[None, :, None, None] * d[None, None]


def _pos_diff(T):
    pos = xp.arange(T)
    return (pos[:, None] - pos[None, :]).astype(xp.float64)  # (T, T) i - j


def symmetric_causal(n_heads, T):
    return -_slopes(n_heads)[None, :, None, None] * xp.maximum(_pos_diff(T), 0.0)[None, None]


def symmetric_signed(n_heads, T):
    return -_slopes(n_heads)[None, :, None, None] * _pos_diff(T)[None, None]


def symmetric_plus(n_heads, T):
    return _slopes(n_heads)[None, :, None, None] * xp.abs(_pos_diff(T))[None, None]


def symmetric_no_batch_axis(n_heads, T):
    return -_slopes(n_heads)[:, None, None] * xp.abs(_pos_diff(T))[None]
