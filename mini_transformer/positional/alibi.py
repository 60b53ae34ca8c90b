r"""ALiBi (Press et al., 2022): no position embedding at all, a fixed linear penalty on distance per head.

.. math:: S_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_{head}}} - m_h\,(i - j) \quad (j \le i)

For H a power of two the slopes are the geometric sequence
m_h = 2^{-8h/H}, h = 1..H (1/2, 1/4, ..., 1/256 for H = 8). For other H the
authors' reference code (``get_slopes``, a workaround: the paper trains only powers of two) takes
the slopes of the closest power of two below H, then every other slope of twice that many heads
until there are H. A bidirectional encoder
uses the symmetric form -m_h |i - j|. Nothing is learned and nothing is added
to the input. No ``GPTConfig.extra`` keys: the form (causal or symmetric)
follows the model.
"""
import math

from ..engine.backend import asarray, xp
from ..engine.validate import check_int
from .base import PositionalScheme, key_minus_query, per_head


def alibi_slopes(n_heads):
    r"""The H slopes m_h, float64 ``(H,)``: 2^{-8h/H} for H a power of two, the authors' interleave otherwise."""
    check_int("alibi_slopes: n_heads", n_heads, minimum=1)
    return asarray(_slopes(n_heads), dtype="float64")


def _slopes(n):
    """The slopes as a Python list (exact powers of two, no array arithmetic)."""
    p = 2 ** int(math.floor(math.log2(n)))                  # the closest power of two at or below n
    base = [2.0 ** (-8.0 * h / p) for h in range(1, p + 1)]
    if p == n:
        return base
    return base + _slopes(2 * p)[0::2][:n - p]              # every other slope of 2p heads fills the gap


def alibi_bias(n_heads, T_q, T_k, bidirectional=False):
    r"""The bias ``(1, H, T_q, T_k)``, float64: -m_h (i - j), zero for future keys (the mask hides them).

    The queries are the last T_q of the T_k positions. ``bidirectional=True``
    gives the symmetric -m_h |i - j| for an encoder.
    """
    if T_q > T_k:
        raise ValueError(f"alibi_bias: T_q={T_q} queries cannot be the last positions of T_k={T_k} keys; "
                         f"T_q must be at most T_k.")
    return alibi_bias_at(alibi_slopes(n_heads), xp.arange(T_k - T_q, T_k), xp.arange(T_k), bidirectional, "float64")


def alibi_bias_at(slopes, q_pos, k_pos, bidirectional, dtype):
    """-m_h (i - j) ``(1, H, T_q, T_k)``, or ``(B, H, T_q, T_k)`` for per-row positions ``(B, T)``."""
    distance = -key_minus_query(q_pos, k_pos)               # (T_q, T_k) or (B, T_q, T_k) i - j
    distance = xp.abs(distance) if bidirectional else xp.maximum(distance, 0)
    # built straight in the scores' dtype: the (1 or B, H, T_q, T_k) bias is the one big array here
    return -slopes.astype(dtype)[None, :, None, None] * per_head(distance.astype(dtype))   # (1 or B, H, T_q, T_k)


class ALiBi(PositionalScheme):
    """Adds -m_h * distance to the scores of head h, from the explicit positions (so cached decoding is right)."""

    per_row_positions = True

    def __init__(self, n_heads, bidirectional=False):
        self.n_heads, self.bidirectional = n_heads, bidirectional
        self.slopes = alibi_slopes(n_heads)                 # (H,) fixed, not a Parameter

    @classmethod
    def from_config(cls, cfg, rng=None, causal=True):
        return cls(cfg.n_heads, bidirectional=not causal)

    def signature(self):
        return {**super().signature(), "bidirectional": self.bidirectional}

    def score_bias(self, q, k, q_pos, k_pos, layer):
        return alibi_bias_at(self.slopes, q_pos, k_pos, self.bidirectional, q.dtype)   # (1 or B, H, T_q, T_k)
