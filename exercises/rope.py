# Generated from solutions/rope.py by `python -m exercises generate`; do not edit by hand
# except inside the function bodies, which are yours. Grade with `python -m pytest`.
r"""Rotary position embedding (RoPE): the functions of chapter 6's exercises.

Layout, everywhere in the book: queries and keys are ``(B, H, T, d_head)``. The
rotate-half convention (GPT-NeoX, LLaMA in Hugging Face form) pairs channel ``i``
with channel ``i + d_head/2`` and rotates pair ``i`` at position ``m`` by the angle
``m * theta_i`` with

.. math:: \theta_i = \mathrm{base}^{-2i/d_{head}}, \quad i = 0, \dots, d_{head}/2 - 1.

The cos and sin tables are ``(T, d_head)``: the angle of pair ``i`` sits in column
``i`` and again in column ``i + d_head/2``. They broadcast against ``(..., T, d_head)``.

The interleaved convention (the RoFormer paper, Meta's original LLaMA code) pairs
channel ``2i`` with ``2i + 1``. Its tables use the repeat-interleave layout: the
angle of pair ``i`` sits in columns ``2i`` and ``2i + 1``.
"""
import math

from mini_transformer.engine.backend import xp


def rotate_half(x):
    r"""Rotate every pair a quarter turn: ``[x1, x2] -> [-x2, x1]``.

    ``x1`` is the first half of the last axis and ``x2`` the second half, so channel
    ``i`` is paired with channel ``i + d/2``. Worked example:
    ``rotate_half([1, 2, 3, 4]) == [-3, -4, 1, 2]``.

    Args:
        x: array ``(..., d)`` with ``d`` even.

    Returns:
        array ``(..., d)``, same dtype as ``x``. ``x`` itself is left unchanged.
    """
    # TODO: Exercise 6.1
    raise NotImplementedError("Exercise 6.1")


def apply_rotary(x, cos, sin):
    r"""Rotate every rotate-half pair of ``x`` by its position's angle.

    For the pair ``(a, b) = (x_i, x_{i + d/2})`` at angle ``t``:

    .. math:: (a, b) \mapsto (a\cos t - b\sin t,\; b\cos t + a\sin t),

    with ``t`` the angle of the token's row of the tables, which hold it in columns ``i`` and
    ``i + d/2`` alike.

    Args:
        x: queries or keys ``(..., T, d_head)``, usually ``(B, H, T, d_head)``.
        cos: ``(T, d_head)``, the table from ``RotaryEmbedding``.
        sin: ``(T, d_head)``, the table from ``RotaryEmbedding``.

    Returns:
        array with the shape and dtype of ``x`` (a float32 ``x`` stays float32 even
        though the tables are float64). ``x`` itself is left unchanged.
    """
    # TODO: Exercise 6.2
    raise NotImplementedError("Exercise 6.2")


class RotaryEmbedding:
    r"""The cos and sin tables of RoPE.

    ``theta_i = base ** (-2i / d_head)`` for pair ``i``, and position ``m`` rotates pair
    ``i`` by ``m * theta_i``.

    Example::

        rope = RotaryEmbedding(64)
        cos, sin = rope(T=16, offset=0)   # each (16, 64), float64
        q = apply_rotary(q, cos, sin)      # q: (B, H, 16, 64)
    """

    def __init__(self, d_head, base=10000.0):
        r"""Store the settings and the frequencies.

        Args:
            d_head: even head dimension.
            base: the base of the geometric frequency ladder.

        Sets ``self.d_head``, ``self.base`` and ``self.inv_freq``, the ``(d_head/2,)`` float64
        array of ``theta_i``.
        """
        # TODO: Exercise 6.3
        raise NotImplementedError("Exercise 6.3")

    def __call__(self, T, offset=0):
        r"""The tables for positions ``offset, ..., offset + T - 1``.

        ``offset`` is the absolute position of the first row: during cached decoding it
        is the number of tokens already in the cache.

        Returns:
            ``(cos, sin)``, a tuple of two float64 arrays, each ``(T, d_head)``. Row ``t``,
            columns ``i`` and ``i + d_head/2`` hold the angle ``(offset + t) * theta_i``.
        """
        # TODO: Exercise 6.3
        raise NotImplementedError("Exercise 6.3")


def relative_score(q, k, m, n, rotary):
    r"""The RoPE score of query ``q`` at position ``m`` against key ``k`` at position ``n``.

    .. math:: s(m, n) = \langle R_m q, R_n k \rangle = q^\top R_{n-m} k

    It depends on ``m`` and ``n`` only through ``n - m``: ``s(3, 1) == s(103, 101)``.

    Args:
        q: ``(d_head,)`` query.
        k: ``(d_head,)`` key.
        m: position of the query (an int).
        n: position of the key (an int).
        rotary: a ``RotaryEmbedding``; ``rotary(1, offset=p)`` gives the tables of position ``p``.

    Returns:
        the score as a Python ``float``. ``q`` and ``k`` are left unchanged.
    """
    # TODO: Exercise 6.4
    raise NotImplementedError("Exercise 6.4")


def test_rope_properties(apply_rotary, RotaryEmbedding):
    r"""A test that fails on a wrong RoPE: it checks the properties that define it.

    You receive an ``apply_rotary`` and a ``RotaryEmbedding`` (the signatures of Exercises 6.2 and
    6.3) and raise ``AssertionError`` (a plain ``assert``) when they are not RoPE: tables and a
    rotation that do not turn pair ``i`` (channels ``i`` and ``i + d_head/2``) by
    :math:`m\,\theta_i` at position ``m``, counter-clockwise, with
    :math:`\theta_i = \mathrm{base}^{-2i/d_{head}}`.

    The grader runs your test on the reference, where it must pass, and on mutants, each wrong
    in one way a reader's code can be (a sign, an offset, a layout); a good test fails on every
    one of them.

    Args:
        apply_rotary: a function ``(x, cos, sin) -> rotated x``, as in Exercise 6.2.
        RotaryEmbedding: a class ``(d_head, base=10000.0, ...)`` whose instances return
            ``(cos, sin)`` tables, as in Exercise 6.3.
    """
    # TODO: Exercise 6.5
    raise NotImplementedError("Exercise 6.5")


def wavelength_table(d_head, base=10000.0):
    r"""The wavelength of every pair, in tokens: :math:`2\pi / \theta_i = 2\pi \cdot \mathrm{base}^{2i/d_{head}}`.

    Pair 0 turns once every ``2 * pi`` (about 6.3) tokens; the last pair of ``d_head = 128``
    at base 10000 needs about 54 000 tokens.

    Args:
        d_head: even head dimension.
        base: the RoPE base.

    Returns:
        float64 array ``(d_head/2,)``, entry ``i`` for pair ``i``.
    """
    # TODO: Exercise 6.6
    raise NotImplementedError("Exercise 6.6")


def rotate_interleaved(x):
    r"""The interleaved quarter turn: pair channel ``2i`` with ``2i + 1``.

    ``[x0, x1, x2, x3, ...] -> [-x1, x0, -x3, x2, ...]``. Read each pair as the complex
    number ``x_{2i} + i x_{2i+1}``: this is multiplication by ``i``.

    Args:
        x: array ``(..., d)`` with ``d`` even.

    Returns:
        array ``(..., d)``, same dtype as ``x``. ``x`` itself is left unchanged.
    """
    # TODO: Exercise 6.7
    raise NotImplementedError("Exercise 6.7")


def apply_rotary_interleaved(x, cos, sin):
    r"""RoPE in the interleaved convention: every pair of channels ``(2i, 2i + 1)`` turned by its angle.

    For the pair ``(a, b) = (x_{2i}, x_{2i+1})`` at angle ``t``:
    :math:`(a\cos t - b\sin t,\; b\cos t + a\sin t)`.

    Args:
        x: ``(..., T, d_head)``.
        cos: ``(T, d_head)`` in the repeat-interleave layout: the angle of pair ``i`` sits in
            columns ``2i`` and ``2i + 1``. From rotate-half tables, take
            ``cos[:, argsort(interleaved_to_half_permutation(d_head))]``.
        sin: ``(T, d_head)``, same layout as ``cos``.

    Returns:
        array with the shape and dtype of ``x``. ``x`` itself is left unchanged.
    """
    # TODO: Exercise 6.8
    raise NotImplementedError("Exercise 6.8")


def interleaved_to_half_permutation(d_head):
    r"""The channel order that carries interleaved channels into rotate-half slots.

    ``perm[j]`` is the interleaved channel whose value belongs at rotate-half channel ``j``:
    interleaved pair ``(2i, 2i + 1)`` lands on rotate-half pair ``(i, i + d_head/2)``, in that
    order (for ``d_head = 4`` the answer is ``[0, 2, 1, 3]``). So

    * ``x[..., perm]`` rewrites interleaved-layout data in rotate-half order, and rotate-half
      RoPE on ``(q[..., perm], k[..., perm])`` gives exactly the scores interleaved RoPE gives
      on ``(q, k)``;
    * porting weights from an interleaved checkpoint to rotate-half code permutes each head's
      output columns of ``W_q`` and ``W_k`` by ``perm`` (in this book's ``x @ W`` layout);
    * the inverse permutation, ``argsort(perm)``, goes the other way.

    Args:
        d_head: even head dimension.

    Returns:
        integer array ``(d_head,)``, a permutation of ``0 .. d_head - 1``.
    """
    # TODO: Exercise 6.9
    raise NotImplementedError("Exercise 6.9")


def causal_attention(q, k, v, q_pos, k_pos):
    r"""Softmax attention in which each query sees only the keys at or before its own position.

    Not an exercise: the attention that Exercise 6.10 decodes through, in plain arrays.
    :math:`\mathrm{softmax}(q k^\top / \sqrt{d_{head}})\, v`, with the score of key ``j``
    for query ``i`` set to :math:`-\infty` where ``k_pos[j] > q_pos[i]``.

    Args:
        q: ``(..., T_q, d_head)`` queries (already rotated, for RoPE).
        k: ``(..., T_k, d_head)`` keys (already rotated).
        v: ``(..., T_k, d_head)`` values.
        q_pos, k_pos: integer arrays ``(T_q,)`` and ``(T_k,)``, the positions of the queries and keys.

    Returns:
        ``(..., T_q, d_head)``.
    """
    scores = q @ xp.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])  # (..., T_q, T_k)
    scores = xp.where(k_pos[None, :] <= q_pos[:, None], scores, -xp.inf)  # no peeking at the future
    weights = xp.exp(scores - scores.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)) @ v  # (..., T_q, d_head)


def decode(q, k, v, prefill, rotary):
    r"""Causal attention with RoPE computed as generation computes it: the prompt at once, then one token at a time.

    The first ``prefill`` tokens are rotated to positions ``0 .. prefill - 1`` and attend to
    each other together; every later token ``t`` is rotated to its own position ``t`` and
    attends to the cache, which holds the keys and values of every token before it, each key
    rotated once, when its token arrived. Use ``rotary(T_new, offset=...)`` for the tables,
    ``apply_rotary`` to rotate and ``causal_attention`` to attend.

    Args:
        q, k, v: ``(B, H, T, d_head)``, the unrotated queries, keys and values of every token.
        prefill: how many tokens the first step takes, ``1 <= prefill <= T``.
        rotary: a ``RotaryEmbedding(d_head)``.

    Returns:
        ``(B, H, T, d_head)``: the output at every position, equal to the full causal attention
        of the rotated ``q`` and ``k`` over all ``T`` positions.
    """
    # TODO: Exercise 6.10
    raise NotImplementedError("Exercise 6.10")
