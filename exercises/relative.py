# Generated from solutions/relative.py by `python -m exercises generate`; do not edit by hand
# except inside the function bodies, which are yours. Grade with `python -m pytest`.
r"""Relative positions as vectors (chapter 4): Shaw's clipped index and Transformer-XL's relative shift.

Shaw et al. (2018) learn a key vector :math:`a^K_r` and a value vector :math:`a^V_r` for each
clipped distance :math:`r = \mathrm{clip}(j - i, -k, k)`; Transformer-XL (Dai et al., 2019)
computes one score per query and distance and moves each to its key with the relative shift.
Positions are integer arrays; the layout elsewhere is ``(B, H, T, d_head)``.
"""
from mini_transformer.engine.backend import xp


def clipped_relative_index(q_pos, k_pos, k):
    r"""Shaw's row of :math:`a^K` and :math:`a^V` for every (query, key) pair.

    The distance from query ``i`` to key ``j`` is ``k_pos[j] - q_pos[i]`` (negative for a key
    in the past). Clip it to ``[-k, k]`` and add ``k``, so that the ``2k + 1`` rows of the
    tables are numbered ``0 .. 2k``: row ``0`` is "``k`` or more back", row ``k`` is "here",
    row ``2k`` is "``k`` or more ahead".

    Worked example: ``q_pos = [5]``, ``k_pos = [0, 1, ..., 7]``, ``k = 2`` gives
    ``[[0, 0, 0, 0, 1, 2, 3, 4]]``.

    Args:
        q_pos: integer array ``(T_q,)``, the positions of the queries.
        k_pos: integer array ``(T_k,)``, the positions of the keys.
        k: the clipping distance, at least 1.

    Returns:
        integer array ``(T_q, T_k)`` with entries in ``0 .. 2k``.
    """
    # TODO: Exercise 4.1
    raise NotImplementedError("Exercise 4.1")


def relative_shift(x):
    r"""Transformer-XL's relative shift: from one score per distance to one score per key.

    Row ``i`` of ``x`` holds query ``i``'s scores against the distances
    :math:`d_{hi}, d_{hi} - 1, \dots`, one column each, where :math:`d_{hi}` is the distance
    from the last query to the first key. For ``T_q`` queries and ``T_k`` keys at
    consecutive positions, ``L = T_q + T_k - 1`` columns cover every pair, and the distance
    from query ``i`` to key ``j`` sits in column ``j + T_q - 1 - i``:

    .. math:: y_{\dots, i, j} = x_{\dots, i,\, j + T_q - 1 - i}, \qquad j = 0, \dots, T_k - 1,\ T_k = L - T_q + 1.

    ``x`` is left unchanged; ``L < T_q`` (no key at all) is refused with a ``ValueError``.

    Worked example: ``x = [[0, 1, 2], [3, 4, 5]]`` (``T_q = 2``, ``L = 3``, so ``T_k = 2``)
    gives ``[[1, 2], [3, 4]]``.

    Args:
        x: float array ``(..., T_q, L)`` with ``L >= T_q``, any number of leading axes.

    Returns:
        array ``(..., T_q, L - T_q + 1)``, the dtype of ``x``.
    """
    # TODO: Exercise 4.2
    raise NotImplementedError("Exercise 4.2")


def test_relative_positions(clipped_relative_index, relative_shift):
    r"""A test that fails on a wrong Shaw index or a wrong relative shift: the properties that define them.

    You receive a ``clipped_relative_index`` and a ``relative_shift`` (the signatures of Exercises
    4.1 and 4.2) and raise ``AssertionError`` (a plain ``assert``) when either is wrong: an index
    that is not Shaw's clipped row for every (query, key) pair of any positions, or a shift whose
    result differs from Exercise 4.2's :math:`y_{\dots, i, j}` on any shape, or that changes ``x``.

    The grader runs your test on the reference, where it must pass, and on mutants, each wrong
    in one way a reader's code can be; a good test fails on every one of them.

    Args:
        clipped_relative_index: a function ``(q_pos, k_pos, k) -> (T_q, T_k) rows``, as in Exercise 4.1.
        relative_shift: a function ``x (..., T_q, L) -> (..., T_q, L - T_q + 1)``, as in Exercise 4.2.
    """
    # TODO: Exercise 4.3
    raise NotImplementedError("Exercise 4.3")
