r"""ALiBi, attention with linear biases (Press et al., 2022): the functions of chapter 7's exercises.

No position vectors at all: head ``h`` subtracts ``m_h * (i - j)`` from the score of query
``i`` against key ``j``, with a fixed slope ``m_h``. A causal model penalises the past keys
(``j <= i``) and leaves the future ones to the mask; a bidirectional encoder penalises the
distance either way, ``-m_h * |i - j|``. Biases are ``(1, H, T_q, T_k)`` and broadcast against
scores ``(B, H, T_q, T_k)``.
"""
from mini_transformer.engine.backend import xp


def alibi_slopes(n_heads):
    r"""The fixed per-head slopes ``m_h``.

    For ``H`` a power of two they are the geometric sequence :math:`2^{-8h/H}`,
    ``h = 1 .. H``: for 8 heads, ``1/2, 1/4, ..., 1/256``.

    For other ``H`` the authors' reference code (a workaround: the paper trains only powers of
    two): take the ``c`` slopes of the largest power of two
    ``c < H``, then append every other slope of the ``2c`` sequence (its 1st, 3rd, 5th,
    ...) until there are ``H``. For 6 heads: ``1/4, 1/16, 1/64, 1/256, 1/2, 1/8``.

    Args:
        n_heads: number of heads, at least 1.

    Returns:
        float64 array ``(n_heads,)``.
    """
    # BEGIN SOLUTION Exercise 7.1
    if n_heads < 1:
        raise ValueError(f"n_heads must be at least 1, got {n_heads}.")
    c = 1 << (n_heads.bit_length() - 1)  # largest power of two <= n_heads
    h = xp.arange(1, c + 1, dtype=xp.float64)  # (c,)
    slopes = 2.0 ** (-8.0 * h / c)  # (c,) 2^(-8h/c)
    if c == n_heads:
        return slopes
    odd = xp.arange(1, 2 * c + 1, 2, dtype=xp.float64)  # (c,) 1, 3, 5, ... of the 2c sequence
    extra = 2.0 ** (-8.0 * odd / (2 * c))  # (c,) every other slope of the 2c heads
    return xp.concatenate([slopes, extra[: n_heads - c]])  # (n_heads,)
    # END SOLUTION


def alibi_bias(n_heads, T_q, T_k):
    r"""The causal ALiBi bias ``-m_h * (i - j)``, zero for future keys (``j > i``).

    The queries are the *last* ``T_q`` of the ``T_k`` positions (during cached decoding
    ``T_q = 1`` and the query sits at position ``T_k - 1``). Future keys get bias 0, not a
    bonus; the causal mask removes them anyway.

    Args:
        n_heads: number of heads ``H``.
        T_q: number of queries, ``T_q <= T_k``.
        T_k: number of keys.

    Returns:
        float64 array ``(1, H, T_q, T_k)``, to add to scores ``(B, H, T_q, T_k)``.
    """
    # BEGIN SOLUTION Exercise 7.2
    if T_q > T_k:
        raise ValueError(f"T_q ({T_q}) must not exceed T_k ({T_k}): queries are the last T_q keys.")
    q_pos = xp.arange(T_k - T_q, T_k)[:, None]  # (T_q, 1) absolute query positions
    k_pos = xp.arange(T_k)[None, :]  # (1, T_k)
    distance = xp.maximum(q_pos - k_pos, 0).astype(xp.float64)  # (T_q, T_k) i - j, 0 for the future
    slopes = alibi_slopes(n_heads)  # (H,)
    return -slopes[None, :, None, None] * distance[None, None, :, :]  # (1, H, T_q, T_k)
    # END SOLUTION


def alibi_bias_symmetric(n_heads, T):
    r"""The encoder's ALiBi bias ``-m_h * |i - j|``: every key, past or future, pays for its distance.

    A bidirectional encoder has no causal mask, so the future keys are real keys and cannot be
    left at bias 0: they would all look as close as the query itself. Worked example, one head
    of 2 (slope 1/16) and ``T = 3``: ``[[0, -1, -2], [-1, 0, -1], [-2, -1, 0]] / 16``.

    Args:
        n_heads: number of heads ``H``; the slopes are ``alibi_slopes(n_heads)``.
        T: sequence length (queries and keys are the same ``T`` positions).

    Returns:
        float64 array ``(1, H, T, T)``, symmetric in its last two axes.
    """
    # BEGIN SOLUTION Exercise 7.3
    pos = xp.arange(T)
    distance = xp.abs(pos[:, None] - pos[None, :]).astype(xp.float64)  # (T, T) |i - j|
    return -alibi_slopes(n_heads)[None, :, None, None] * distance[None, None, :, :]  # (1, H, T, T)
    # END SOLUTION


def test_alibi(alibi_slopes, alibi_bias):
    r"""A test that fails on a wrong ALiBi: it checks the properties that define it.

    You receive an ``alibi_slopes`` and an ``alibi_bias`` (the signatures of Exercises 7.1 and 7.2)
    and raise ``AssertionError`` (a plain ``assert``) when they are not ALiBi: slopes other than the
    paper's for any head count, or a bias other than :math:`-m_h \max(i - j, 0)` for the last
    ``T_q`` of ``T_k`` positions, in shape ``(1, H, T_q, T_k)``.

    The grader runs your test on the reference, where it must pass, and on mutants, each wrong
    in one way a reader's code can be; a good test fails on every one of them.

    Args:
        alibi_slopes: a function ``n_heads -> (H,) slopes``, as in Exercise 7.1.
        alibi_bias: a function ``(n_heads, T_q, T_k) -> (1, H, T_q, T_k) bias``, as in Exercise 7.2.
    """
    # BEGIN SOLUTION Exercise 7.4
    assert xp.allclose(alibi_slopes(8), 2.0 ** -xp.arange(1.0, 9.0), rtol=1e-12, atol=0)  # 1/2 .. 1/256
    six = 2.0 ** -xp.asarray([2.0, 4, 6, 8, 1, 3])  # the 4 slopes of H = 4, then the 1st and 3rd of H = 8
    assert xp.allclose(alibi_slopes(6), six, rtol=1e-12, atol=0)

    H, T = 4, 7
    slopes = 2.0 ** -xp.asarray([2.0, 4, 6, 8])  # 2^(-8h/4), by hand
    b = alibi_bias(H, T, T)  # (1, H, T, T)
    assert b.shape == (1, H, T, T)
    assert xp.allclose(b[..., 1:, 1:], b[..., :-1, :-1], atol=1e-15)  # only i - j counts
    i, j = xp.arange(T)[:, None], xp.arange(T)[None, :]
    expected = -slopes[:, None, None] * xp.maximum(i - j, 0)  # (H, T, T): -m_h (i - j), 0 in the future
    assert xp.allclose(b[0], expected, rtol=1e-12, atol=1e-15)

    step = alibi_bias(H, 1, T)  # one decode step: the query at position T - 1
    assert step.shape == (1, H, 1, T) and xp.allclose(step[0, :, 0], b[0, :, -1], atol=1e-15)
    two = alibi_bias(H, 2, 5)  # two queries at positions 3 and 4 of 5 keys
    assert xp.allclose(two[0], expected[:, 3:5, :5], rtol=1e-12, atol=1e-15)
    # END SOLUTION
