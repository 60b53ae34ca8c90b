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

    The steps, with ``n = query_pos - key_pos`` (positive for keys in the past):

    1. bidirectional: halve ``num_buckets``; keys in the future (``n < 0``) use the upper
       half (add the halved ``num_buckets``); continue with ``|n|``.
       Causal (``bidirectional=False``): future keys collapse to ``n = 0``.
    2. ``max_exact = num_buckets // 2``: distances below it are their own bucket.
    3. larger distances get
       :math:`\mathrm{max\_exact} + \lfloor \frac{\log(n / \mathrm{max\_exact})}
       {\log(\mathrm{max\_distance} / \mathrm{max\_exact})} (\mathrm{num\_buckets} - \mathrm{max\_exact}) \rfloor`,
       capped at ``num_buckets - 1``. A ``1e-6`` added inside the logarithm keeps a distance
       that sits exactly on a boundary in the bucket exact arithmetic gives it.

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
    Exercises 5.1 and 5.2) and raise ``AssertionError`` (a plain ``assert``) when either is
    wrong. Check, on numbers, for a few settings of ``bidirectional``, ``num_buckets`` and
    ``max_distance``:

    * bucket ids are integers in ``0 .. num_buckets - 1``; the first ``max_exact`` distances get
      a bucket each; the bucket never decreases as the distance grows; every distance from
      ``max_distance`` on shares the last bucket of its direction;
    * bidirectional: keys in the past (and the query itself) use the lower half, keys in the
      future the upper half; causal: every future key falls into bucket 0;
    * a few buckets worked by hand (the docstring's ``-1 -> 1``, ``+1 -> 17``, ``-16 -> 10``,
      ``-200 -> 15``), since a property alone cannot tell past from future;
    * the Swin index: integers, one row per offset and every one of the ``(2w - 1)^2`` rows
      used, the same row for every pair with the same offset (translation invariance inside
      the window), and the worked example of ``window = 2`` by hand.

    The grader runs your test on the reference, where it must pass, and on mutants, each wrong
    in one way a reader's code can be; a good test fails on every one of them.

    Args:
        relative_position_bucket: a function ``(relative_position, bidirectional, num_buckets,
            max_distance) -> bucket ids``, as in Exercise 5.1.
        swin_relative_index: a function ``window -> (w^2, w^2) rows``, as in Exercise 5.2.
    """
    # TODO: Exercise 5.3
    raise NotImplementedError("Exercise 5.3")
