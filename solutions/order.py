r"""Attention is order-blind: the functions of chapter 1's exercises.

Sequences are ``(B, T, ...)``: axis 0 is the batch, axis 1 the position. A permutation
``perm`` of ``0 .. T-1`` shuffles a sequence as ``x[:, perm]``: the token now at position
``t`` is the one that sat at position ``perm[t]``. A function ``f`` is *permutation-equivariant*
when shuffling its input shuffles its output the same way and changes nothing else:

.. math:: f(x[:, \mathrm{perm}]) = f(x)[:, \mathrm{perm}] \quad \text{for every perm.}

Self-attention without position is such a function; with a causal mask it is not.
"""
import math

from mini_transformer.engine.backend import xp


def permutation_gap(y, y_perm, perm):
    r"""How far one shuffle is from permutation equivariance: :math:`\max |f(x_\pi) - f(x)_\pi|`.

    ``y = f(x)`` and ``y_perm = f(x[:, perm])`` are the outputs for a sequence and for its
    shuffle. Shuffle ``y`` the way the input was shuffled and compare: the result is the largest
    absolute difference between ``y_perm`` and that shuffled ``y``, 0 (to rounding) for an
    equivariant ``f`` and larger than rounding for an ``f`` that knows where its tokens are.

    Worked example: with ``y = [[1, 2, 3]]`` and ``perm = [2, 0, 1]``, an equivariant ``f`` gives
    ``y_perm = [[3, 1, 2]]`` and the gap is 0.

    Args:
        y: ``f(x)``, an array ``(B, T, ...)``.
        y_perm: ``f(x[:, perm])``, the same shape.
        perm: integer array ``(T,)``, a permutation of ``0 .. T-1``.

    Returns:
        a Python float, at least 0.
    """
    # BEGIN SOLUTION Exercise 1.1
    return float(xp.abs(y_perm - y[:, perm]).max())  # the token at t came from perm[t]
    # END SOLUTION


def self_attention(x, W_q, W_k, W_v, causal=False):
    r"""One head of self-attention with no position: :math:`\mathrm{softmax}(Q K^\top / \sqrt{d_k})\, V`.

    .. math:: Q = x W_q,\quad K = x W_k,\quad V = x W_v,\qquad
              y = \mathrm{softmax}\!\Big(\frac{Q K^\top}{\sqrt{d_k}}\Big) V,

    the softmax over the keys (the last axis of the ``(T, T)`` scores). With ``causal=True``,
    query ``i`` may look only at keys ``j <= i``: the scores of later keys are ``-inf``
    before the softmax, so they get weight 0.

    Args:
        x: the token vectors ``(B, T, d_model)``.
        W_q, W_k: ``(d_model, d_k)``.
        W_v: ``(d_model, d_v)``.
        causal: mask the future (a decoder) or not (an encoder).

    Returns:
        array ``(B, T, d_v)`` with the dtype of ``x``. ``x`` itself is left unchanged.
    """
    # BEGIN SOLUTION Exercise 1.2
    q, k, v = x @ W_q, x @ W_k, x @ W_v  # (B, T, d_k), (B, T, d_k), (B, T, d_v)
    scores = q @ xp.swapaxes(k, -1, -2) / math.sqrt(W_k.shape[-1])  # (B, T_q, T_k)
    if causal:
        T = x.shape[-2]
        sees = xp.arange(T)[None, :] <= xp.arange(T)[:, None]  # (T, T) key j <= query i
        scores = xp.where(sees, scores, -xp.inf)
    weights = xp.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)  # (B, T_q, T_k) each row sums to 1
    return weights @ v  # (B, T, d_v)
    # END SOLUTION


def uniform_causal_attention(v):
    r"""What a causal head whose scores are all equal outputs: token ``i`` averages tokens ``0 .. i``.

    With equal scores the softmax spreads its weight evenly over the keys a query may see,
    and under a causal mask query ``i`` sees exactly ``i + 1`` of them:

    .. math:: y_i = \frac{1}{i + 1} \sum_{j=0}^{i} v_j.

    Worked example: for the values ``[1, 0, 0, 0]`` (a marker on the first token, one
    channel) the outputs are ``[1, 1/2, 1/3, 1/4]``: the head has counted the tokens.

    Args:
        v: the values ``(..., T, d)``.

    Returns:
        array ``(..., T, d)`` with the dtype of ``v``.
    """
    # BEGIN SOLUTION Exercise 1.3
    T = v.shape[-2]
    seen = xp.arange(1, T + 1, dtype=v.dtype)[:, None]  # (T, 1) query i sees i + 1 keys
    return xp.cumsum(v, axis=-2) / seen
    # END SOLUTION


def test_self_attention_is_permutation_equivariant(self_attention, permutation_gap):
    r"""A test that fails on any self-attention that secretly knows where its tokens are.

    You receive a ``self_attention`` and a ``permutation_gap`` (the signatures of Exercises
    1.2 and 1.1) and raise ``AssertionError`` (a plain ``assert``) when ``self_attention``
    with ``causal=False`` is not permutation-equivariant: when shuffling its input does
    anything but shuffle its output the same way.

    Equivariance is exact, so the gap must be at the level of rounding, not merely small.
    The grader runs your test on the reference, where it must pass, and on mutants: attention
    functions that are order-aware in one hidden way each (a mask, a window, a signal at some
    positions, a signal a reversal cannot see, a faint signal). A good test fails on every one.

    Args:
        self_attention: a function ``(x, W_q, W_k, W_v, causal=False) -> y``, as in Exercise 1.2.
        permutation_gap: a function ``(y, y_perm, perm) -> float``, as in Exercise 1.1.
    """
    # BEGIN SOLUTION Exercise 1.4
    g = xp.random.default_rng(0)
    B, T, d = 2, 12, 6  # longer than any window a mutant could hide behind
    x = g.standard_normal((B, T, d))
    W_q, W_k, W_v = (g.standard_normal((d, d)) for _ in range(3))
    y = self_attention(x, W_q, W_k, W_v)
    rounding = 1e-12 * float(xp.abs(y).max())  # equivariance is exact: allow rounding, nothing more
    shuffles = [g.permutation(T) for _ in range(4)] + [xp.arange(T)[::-1]]  # random ones, not only reversal
    for perm in shuffles:
        assert (perm != xp.arange(T)).any()  # a shuffle that moves nothing tests nothing
        gap = permutation_gap(y, self_attention(x[:, perm], W_q, W_k, W_v), perm)
        assert gap <= rounding, f"shuffle {perm.tolist()} changes the output by {gap:.3g}"
    # END SOLUTION
