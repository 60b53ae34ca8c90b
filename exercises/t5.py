# Generated from solutions/t5.py by `python -m exercises generate`; do not edit by hand
# except inside the function bodies, which are yours. Grade with `python -m pytest`.
r"""Buckets (chapter 5): T5's relative position buckets and Swin's 2-D table index.

T5 (Raffel et al., 2020): the score of query ``i`` against key ``j`` gets a learned scalar
``b[h, bucket(j - i)]``. Small distances get a bucket each; larger ones share logarithmically
wider buckets up to ``max_distance``, and everything beyond shares the last bucket.

Swin (Liu et al., 2021): inside a ``w x w`` window the score gets ``B[h, row(dy, dx)]``, one
learned scalar per head and 2-D offset, ``(2w - 1)^2`` of them.
"""
import math

from mini_transformer.engine.backend import xp


def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    r"""Map ``relative_position = key_pos - query_pos`` to T5's bucket ids.

    With ``n = query_pos - key_pos`` (positive for keys in the past) and ``N`` buckets per
    direction (bidirectional: half of ``num_buckets`` for the past, the other half, above them,
    for the future; causal: all ``num_buckets`` for the past, and every future key in bucket 0),
    the distances :math:`n < N/2` get a bucket each, and a larger ``n`` gets

    .. math:: \frac{N}{2} + \Big\lfloor \frac{\log(2n/N)}{\log(2\,\mathrm{max\_distance}/N)}\,\frac{N}{2} \Big\rfloor,

    at most ``N - 1`` (every distance from ``max_distance`` on shares the last bucket of its
    direction). A distance that sits exactly on a boundary (8 with 18 buckets) belongs to the
    bucket exact arithmetic gives it, not the one below.

    With the defaults: ``-1 -> 1``, ``+1 -> 17``, ``-16 -> 10``, ``-200 -> 15``.

    Args:
        relative_position: integer array of any shape, e.g. ``(T_q, T_k)``.
        bidirectional: encoder-style (both directions) or causal.
        num_buckets: total number of buckets.
        max_distance: distances from here on share the last bucket.

    Returns:
        int64 array of the same shape, values in ``0 .. num_buckets - 1``.
    """
    # TODO: Exercise 5.1
    raise NotImplementedError("Exercise 5.1")


def swin_relative_index(window):
    r"""Swin's table row for every pair of tokens in one ``window x window`` window.

    Token ``p`` sits at row ``y = p // window`` and column ``x = p % window`` (raster order).
    Entry ``(i, j)`` is the row of the offset :math:`(\Delta y, \Delta x) = (y_i - y_j, x_i - x_j)`
    in a table of :math:`(2w - 1)^2` rows, in Swin's order (the row offset first):

    .. math:: (\Delta y + w - 1)(2w - 1) + (\Delta x + w - 1).

    Worked example, ``window = 2``: ``[[4, 3, 1, 0], [5, 4, 2, 1], [7, 6, 4, 3], [8, 7, 5, 4]]``.

    Args:
        window: the side ``w`` of the window, at least 1.

    Returns:
        integer array ``(w * w, w * w)`` with entries in ``0 .. (2w - 1)^2 - 1``.
    """
    # TODO: Exercise 5.2
    raise NotImplementedError("Exercise 5.2")


def test_buckets(relative_position_bucket, swin_relative_index):
    r"""A test that fails on wrong T5 buckets or a wrong Swin index: the properties that define them.

    You receive a ``relative_position_bucket`` and a ``swin_relative_index`` (the signatures of
    Exercises 5.1 and 5.2) and raise ``AssertionError`` (a plain ``assert``) when either is wrong:
    buckets that differ from T5's map for any setting of ``bidirectional``, ``num_buckets`` and
    ``max_distance``, or a Swin index that differs from Swin's for any window.

    The grader runs your test on the reference, where it must pass, and on mutants, each wrong
    in one way a reader's code can be; a good test fails on every one of them.

    Args:
        relative_position_bucket: a function ``(relative_position, bidirectional, num_buckets,
            max_distance) -> bucket ids``, as in Exercise 5.1.
        swin_relative_index: a function ``window -> (w^2, w^2) rows``, as in Exercise 5.2.
    """
    # TODO: Exercise 5.3
    raise NotImplementedError("Exercise 5.3")
