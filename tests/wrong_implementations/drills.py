"""Wrong drill functions: sinusoidal, ALiBi, T5."""
import math

from mini_transformer.backend import xp


def _angles(T, d_model, base, exponent):
    pos = xp.arange(T, dtype=xp.float64)[:, None]
    return pos * base ** (-exponent(xp.arange(d_model // 2, dtype=xp.float64)) / d_model)[None, :]


def sinusoidal_swapped(T, d_model, base=10000.0):
    a = _angles(T, d_model, base, lambda i: 2 * i)
    return xp.stack([xp.cos(a), xp.sin(a)], axis=-1).reshape(T, d_model)


def sinusoidal_halves(T, d_model, base=10000.0):
    a = _angles(T, d_model, base, lambda i: 2 * i)
    return xp.concatenate([xp.sin(a), xp.cos(a)], axis=-1)


def sinusoidal_exponent(T, d_model, base=10000.0):
    j = xp.arange(0, d_model, 2, dtype=xp.float64)  # the even columns 2i ...
    a = xp.arange(T, dtype=xp.float64)[:, None] * base ** (-2 * j / d_model)[None, :]  # ... doubled again
    return xp.stack([xp.sin(a), xp.cos(a)], axis=-1).reshape(T, d_model)


def sinusoidal_half_width(T, d_model, base=10000.0):
    return xp.sin(_angles(T, d_model, base, lambda i: 2 * i))  # (T, d_model/2): forgot the cosines


def slopes_naive(n_heads):
    return 2.0 ** (-8.0 * xp.arange(1, n_heads + 1, dtype=xp.float64) / n_heads)


def slopes_from_one(n_heads):
    def pow2(c):
        return 2.0 ** (-8.0 * xp.arange(0, c, dtype=xp.float64) / c)
    c = 2 ** int(math.log2(n_heads))
    if c == n_heads:
        return pow2(c)
    return xp.concatenate([pow2(c), pow2(2 * c)[0::2][: n_heads - c]])


def slopes_duplicates(n_heads):
    def pow2(c):
        return 2.0 ** (-8.0 * xp.arange(1, c + 1, dtype=xp.float64) / c)
    c = 2 ** int(math.log2(n_heads))
    if c == n_heads:
        return pow2(c)
    return xp.concatenate([pow2(c), pow2(2 * c)[1::2][: n_heads - c]])


def _slopes(n_heads):
    def pow2(c):
        return 2.0 ** (-8.0 * xp.arange(1, c + 1, dtype=xp.float64) / c)
    c = 2 ** int(math.log2(n_heads))
    return pow2(c) if c == n_heads else xp.concatenate([pow2(c), pow2(2 * c)[0::2][: n_heads - c]])


def bias_positive(n_heads, T_q, T_k):
    q = xp.arange(T_k - T_q, T_k)[:, None]
    d = xp.maximum(q - xp.arange(T_k)[None, :], 0).astype(xp.float64)
    return _slopes(n_heads)[None, :, None, None] * d[None, None]


def bias_queries_first(n_heads, T_q, T_k):
    q = xp.arange(T_q)[:, None]
    d = xp.maximum(q - xp.arange(T_k)[None, :], 0).astype(xp.float64)
    return -_slopes(n_heads)[None, :, None, None] * d[None, None]


def bias_future_bonus(n_heads, T_q, T_k):
    q = xp.arange(T_k - T_q, T_k)[:, None]
    d = (q - xp.arange(T_k)[None, :]).astype(xp.float64)
    return -_slopes(n_heads)[None, :, None, None] * d[None, None]


def bias_no_batch_axis(n_heads, T_q, T_k):
    q = xp.arange(T_k - T_q, T_k)[:, None]
    d = xp.maximum(q - xp.arange(T_k)[None, :], 0).astype(xp.float64)
    return -_slopes(n_heads)[:, None, None] * d[None]


def _bucket(n, num_buckets, max_distance):
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
    return ret + _bucket(n, num_buckets, max_distance)


def bucket_not_halved(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = -relative_position.astype(xp.int64)
    ret = xp.zeros_like(n)
    if bidirectional:  # forgot num_buckets //= 2
        ret = ret + (n < 0) * num_buckets
        n = xp.abs(n)
    else:
        n = xp.maximum(n, 0)
    return ret + _bucket(n, num_buckets, max_distance)


def bucket_causal_abs(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = -relative_position.astype(xp.int64)
    ret = xp.zeros_like(n)
    if bidirectional:
        num_buckets //= 2
        ret = ret + (n < 0) * num_buckets
    n = xp.abs(n)
    return ret + _bucket(n, num_buckets, max_distance)


def bucket_float(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = -relative_position.astype(xp.float64)
    ret = xp.zeros_like(n)
    if bidirectional:
        num_buckets //= 2
        ret = ret + (n < 0) * num_buckets
        n = xp.abs(n)
    else:
        n = xp.maximum(n, 0)
    return ret + _bucket(n, num_buckets, max_distance)  # float64 bucket ids
