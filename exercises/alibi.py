# Generated from solutions/alibi.py by `python -m exercises generate`; do not edit by hand
# except inside the function bodies, which are yours. Grade with `python -m pytest`.
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
    # TODO: Exercise 7.1
    raise NotImplementedError("Exercise 7.1")


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
    # TODO: Exercise 7.2
    raise NotImplementedError("Exercise 7.2")


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
    # TODO: Exercise 7.3
    raise NotImplementedError("Exercise 7.3")


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
    # TODO: Exercise 7.4
    raise NotImplementedError("Exercise 7.4")
