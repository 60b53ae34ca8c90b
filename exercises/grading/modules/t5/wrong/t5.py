"""Wrong relative_position_bucket and swin_relative_index, as readers write them."""
import math

from mini_transformer.engine.backend import xp

# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("bucket_flipped", "t5.relative_position_bucket", "misconception", "direction_flipped"),
    ("bucket_not_halved", "t5.relative_position_bucket", "misconception", "not_halved"),
    ("bucket_causal_abs", "t5.relative_position_bucket", "misconception", "causal_abs"),
    ("bucket_float", "t5.relative_position_bucket", "dtype", None),
    ("swin_x_first", "t5.swin_relative_index", "misconception", "x_first"),
    ("swin_key_minus_query", "t5.swin_relative_index", "misconception", "sign_reversed"),
    ("swin_stride_w", "t5.swin_relative_index", "misconception", "stride_w"),
    ("swin_float_rows", "t5.swin_relative_index", "dtype", None),
]


def _log_buckets(n, num_buckets, max_distance):
    max_exact = num_buckets // 2
    large = max_exact + (xp.log(xp.maximum(n, max_exact) / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).astype(xp.int64)
    return xp.where(n < max_exact, n, xp.minimum(large, num_buckets - 1))


def bucket_flipped(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = relative_position.astype(xp.int64)  # forgot the minus: future keys count as past
    ret = xp.zeros_like(n)
    if bidirectional:
        num_buckets //= 2
        ret = ret + (n < 0) * num_buckets
        n = xp.abs(n)
    else:
        n = xp.maximum(n, 0)
    return ret + _log_buckets(n, num_buckets, max_distance)


def bucket_not_halved(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = -relative_position.astype(xp.int64)
    if not bidirectional:
        return _log_buckets(xp.maximum(n, 0), num_buckets, max_distance)
    future = (n < 0) * num_buckets  # forgot num_buckets //= 2
    return future + _log_buckets(xp.abs(n), num_buckets, max_distance)


def bucket_causal_abs(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = -relative_position.astype(xp.int64)
    if bidirectional:
        num_buckets //= 2
        return (n < 0) * num_buckets + _log_buckets(xp.abs(n), num_buckets, max_distance)
    return _log_buckets(xp.abs(n), num_buckets, max_distance)  # abs keeps the future keys' distances


def bucket_float(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = -relative_position.astype(xp.float64)  # float64 bucket ids all the way through
    if bidirectional:
        num_buckets //= 2
        return (n < 0) * num_buckets + _log_buckets(xp.abs(n), num_buckets, max_distance)
    return _log_buckets(xp.maximum(n, 0), num_buckets, max_distance)


def swin_x_first(window):
    p = xp.arange(window * window)
    y, x = p // window, p % window
    dy, dx = y[:, None] - y[None, :], x[:, None] - x[None, :]
    return (dx + window - 1) * (2 * window - 1) + (dy + window - 1)  # columns first


def swin_key_minus_query(window):
    p = xp.arange(window * window)
    y, x = p // window, p % window
    dy, dx = y[None, :] - y[:, None], x[None, :] - x[:, None]  # key minus query
    return (dy + window - 1) * (2 * window - 1) + (dx + window - 1)


def swin_stride_w(window):
    p = xp.arange(window * window)
    y, x = p // window, p % window
    dy, dx = y[:, None] - y[None, :], x[:, None] - x[None, :]
    return (dy + window - 1) * window + (dx + window - 1)  # one row per w: offsets collide


def swin_float_rows(window):
    p = xp.arange(window * window)
    y = xp.floor(p / window)  # float division, floored: float rows
    x = p - y * window
    dy, dx = y[:, None] - y[None, :], x[:, None] - x[None, :]
    return (dy + window - 1) * (2 * window - 1) + (dx + window - 1)
