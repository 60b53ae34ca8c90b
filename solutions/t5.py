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
    # BEGIN SOLUTION Exercise 5.1
    n = -relative_position.astype(xp.int64)  # (...) positive when the key is in the past
    bucket = xp.zeros_like(n)  # (...)
    if bidirectional:
        num_buckets //= 2
        bucket = bucket + (n < 0).astype(xp.int64) * num_buckets  # future keys: upper half
        n = xp.abs(n)
    else:
        n = xp.maximum(n, 0)  # causal: the future is masked anyway, park it in bucket 0
    max_exact = num_buckets // 2
    is_small = n < max_exact  # (...) these distances get a bucket each
    n_large = xp.maximum(n, max_exact).astype(xp.float64)  # keeps log away from 0 where unused
    # the 1e-6 (the book's; T5X adds float32's eps, Mesh TensorFlow and Hugging Face nothing) keeps a distance
    # that sits exactly on a bucket boundary, such as 8 with 18 buckets and max_distance 128, from rounding
    # down into the bucket below
    log_ratio = xp.log(n_large / max_exact + 1e-6) / math.log(max_distance / max_exact)  # 0 .. 1 up to max_distance
    if_large = max_exact + (log_ratio * (num_buckets - max_exact)).astype(xp.int64)  # floor, all >= 0
    if_large = xp.minimum(if_large, num_buckets - 1)
    return bucket + xp.where(is_small, n, if_large)  # (...)
    # END SOLUTION


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
    # BEGIN SOLUTION Exercise 5.2
    p = xp.arange(window * window)  # (w^2,) the tokens in raster order
    y, x = p // window, p % window  # (w^2,) each token's row and column
    dy = y[:, None] - y[None, :]  # (w^2, w^2) in -(w - 1) .. w - 1
    dx = x[:, None] - x[None, :]  # (w^2, w^2)
    return (dy + window - 1) * (2 * window - 1) + (dx + window - 1)  # (w^2, w^2)
    # END SOLUTION


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
    # BEGIN SOLUTION Exercise 5.3
    hand = relative_position_bucket(xp.asarray([0, -1, 1, -7, -8, -16, -32, -64, -128, -1000, 128]))
    assert [int(b) for b in hand] == [0, 1, 17, 7, 8, 10, 12, 14, 15, 15, 31]  # 32 buckets, max_distance 128
    causal = relative_position_bucket(xp.asarray([5, -1, -15, -16, -32, -128]), bidirectional=False)
    assert [int(b) for b in causal] == [0, 1, 15, 16, 21, 31]  # causal: 32 buckets for the past, max_exact 16
    small = relative_position_bucket(xp.asarray([-3, -8, -64, 3, 8]), True, 16, 64)
    assert [int(b) for b in small] == [3, 5, 7, 11, 13]  # 8 a side, max_exact 4: 4 + floor(log 2 / log 16 * 4)

    rel = xp.arange(-300, 301)
    for bidirectional, num_buckets, max_distance in [(True, 32, 128), (False, 32, 128), (True, 16, 64), (False, 8, 20)]:
        b = relative_position_bucket(rel, bidirectional, num_buckets, max_distance)
        assert b.shape == rel.shape and b.dtype.kind in "iu", (b.shape, b.dtype)
        assert int(b.min()) >= 0 and int(b.max()) <= num_buckets - 1
        half = num_buckets // 2 if bidirectional else num_buckets
        past = b[rel <= 0][::-1]  # distances 0, 1, 2, ... back
        assert xp.array_equal(past[:half // 2], xp.arange(half // 2))  # exact near
        assert bool(xp.all(past[1:] >= past[:-1]))  # never decreasing with distance
        assert bool(xp.all(past[max_distance:] == half - 1))  # the last bucket from max_distance on
        future = b[rel > 0]
        if bidirectional:
            assert xp.array_equal(future[:half // 2 - 1], half + xp.arange(1, half // 2))  # upper half, exact
            assert bool(xp.all(future[1:] >= future[:-1])) and bool(xp.all(future[max_distance - 1:] == num_buckets - 1))
        else:
            assert bool(xp.all(future == 0))  # the future is masked: bucket 0

    assert xp.array_equal(swin_relative_index(2), xp.asarray([[4, 3, 1, 0], [5, 4, 2, 1], [7, 6, 4, 3], [8, 7, 5, 4]]))
    for w in (1, 3, 7):
        idx = swin_relative_index(w)
        assert idx.shape == (w * w, w * w) and idx.dtype.kind in "iu"
        assert sorted(set(int(r) for r in idx.reshape(-1))) == list(range((2 * w - 1) ** 2))  # every row used
        p = xp.arange(w * w)
        y, x = p // w, p % w
        for a in range(w * w):
            for c in range(w * w):  # the row of an offset, by hand, for every pair
                dy, dx = int(y[a] - y[c]), int(x[a] - x[c])
                assert int(idx[a, c]) == (dy + w - 1) * (2 * w - 1) + (dx + w - 1)
    # END SOLUTION
