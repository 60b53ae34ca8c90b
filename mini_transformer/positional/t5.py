r"""T5's bucketed relative position bias (Raffel et al., 2020): one learned scalar per head and distance bucket.

.. math:: S_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_{head}}} + b_{h,\,\mathrm{bucket}(j - i)}

Small distances get a bucket each; larger ones share logarithmically wider
buckets up to ``max_distance``, and everything beyond shares the last one. The
table ``(num_buckets, H)`` is one per model, shared by every layer of the stack.

``GPTConfig.extra`` keys read by the ``"t5"`` scheme:

* ``num_buckets`` (int, default 32);
* ``max_distance`` (int, default 128);
* ``bidirectional`` (bool, default: True in ``TinyEncoder``, False in ``TinyGPT``):
  split the buckets between past and future keys, or spend them all on the past.
"""
import math
from dataclasses import dataclass

from ..engine.backend import rng as make_rng
from ..engine.backend import xp
from ..engine.nn import Parameter, init_normal
from ..engine.validate import check_int
from .base import PositionalScheme, key_minus_query, setting


def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    r"""T5's bucket of each relative position ``key_pos - query_pos`` (an integer array; same shape back).

    Bidirectional: half the buckets for keys in the past or here, half for keys
    in the future (those add ``num_buckets / 2``). Causal: all of them for the
    past, and a future key falls into bucket 0 (the mask hides it anyway).
    Within one direction, with n = |distance| and n_b buckets there, the first
    n_e = n_b / 2 distances are exact and the rest are log-spaced:

    .. math:: \mathrm{bucket}(n) = n \ (n < n_e), \qquad
              n_e + \left\lfloor \frac{\ln(n / n_e)}{\ln(\mathrm{max\_distance} / n_e)} (n_b - n_e) \right\rfloor
              \ \text{capped at}\ n_b - 1.

    A 1e-6 inside the logarithm (as the book's reference has it) keeps a
    distance that sits exactly on a boundary (16, 32, 64 for the defaults) in
    the bucket exact arithmetic gives it, instead of one lower by rounding.
    """
    _check_buckets(bidirectional, num_buckets, max_distance)
    n = -relative_position                                  # positive when the key is in the past
    ret = xp.zeros(n.shape, dtype="int64")
    if bidirectional:
        num_buckets //= 2
        ret = ret + (n < 0).astype("int64") * num_buckets   # future keys use the upper half
        n = xp.abs(n)
    else:
        n = xp.maximum(n, 0)                                # causal: the future collapses into bucket 0
    max_exact = num_buckets // 2
    is_small = n < max_exact
    ratio = xp.maximum(n, max_exact).astype("float64") / max_exact   # >= 1, so the log is defined everywhere
    log_bucket = xp.log(ratio + 1e-6) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    large = xp.minimum(max_exact + log_bucket.astype("int64"), num_buckets - 1)
    return ret + xp.where(is_small, n, large).astype("int64")


def _check_buckets(bidirectional, num_buckets, max_distance):
    check_int("relative_position_bucket: num_buckets", num_buckets, minimum=2)
    if bidirectional and num_buckets % 2:
        raise ValueError(f"relative_position_bucket: num_buckets={num_buckets} is odd, but bidirectional=True "
                         f"splits the buckets into two equal halves (past and future); use an even count such "
                         f"as {num_buckets + 1}.")
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    if per_direction < 2:
        raise ValueError(f"relative_position_bucket: num_buckets={num_buckets} leaves {per_direction} bucket per "
                         f"direction; T5's rule needs at least 2 (exact ones and log-spaced ones).")
    if not max_distance > per_direction // 2:
        raise ValueError(f"relative_position_bucket: max_distance={max_distance} must exceed the {per_direction // 2} "
                         f"exact distances, or the log-spaced buckets have no range to cover.")


@dataclass(frozen=True)
class T5Settings:
    """The ``GPTConfig.extra`` keys of the ``"t5"`` scheme (None: the model decides)."""
    num_buckets: int = setting(32, "distance buckets per head")
    max_distance: int = setting(128, "where the last, shared bucket begins")
    bidirectional: bool = setting(None, "buckets for future keys too; default: True in TinyEncoder, False in TinyGPT")


class RelativePositionBias(PositionalScheme):
    r"""A ``(num_buckets, H)`` table; ``bias(T_q, T_k)`` gives the ``(1, H, T_q, T_k)`` bias it adds to the scores.

    The queries are the last T_q of the T_k positions (as when decoding with a
    cache). As a scheme it adds the same bias in every layer, from the explicit
    positions it is given.
    """

    Settings = T5Settings
    per_row_positions = True

    def __init__(self, n_heads, num_buckets=32, max_distance=128, bidirectional=True, rng=None, std=0.02):
        _check_buckets(bidirectional, num_buckets, max_distance)
        self.settings = T5Settings(num_buckets, max_distance, bidirectional)
        self.n_heads, self.num_buckets = n_heads, num_buckets
        self.max_distance, self.bidirectional = max_distance, bidirectional
        self.table = Parameter(init_normal(rng or make_rng(0), (num_buckets, n_heads), std))  # (num_buckets, H)

    @classmethod
    def from_config(cls, cfg, rng=None, causal=True):
        s = cls.read_settings(cfg, bidirectional=not causal)
        return cls(cfg.n_heads, s.num_buckets, s.max_distance, s.bidirectional, rng)

    def bias(self, T_q, T_k):
        """The bias ``(1, H, T_q, T_k)`` for T_q queries that are the last of T_k positions."""
        if T_q > T_k:
            raise ValueError(f"RelativePositionBias: T_q={T_q} queries cannot be the last positions of T_k={T_k} "
                             f"keys; T_q must be at most T_k.")
        return self.bias_at(xp.arange(T_k - T_q, T_k), xp.arange(T_k))

    def bias_at(self, q_pos, k_pos):
        """The bias ``(1, H, T_q, T_k)`` (a Tensor) for queries at ``q_pos`` and keys at ``k_pos``
        (``(B, H, T_q, T_k)`` for per-row positions ``(B, T)``).

        Every layer calls this and gets the same numbers from the one table, so
        the gradients of all layers add up in it. (T5 itself computes the bias
        once in the first layer and hands it on; the hooks have no "start of a
        forward", so here each layer rebuilds it, one ``(1, H, T_q, T_k)`` array.)
        """
        distance = key_minus_query(q_pos, k_pos)                                 # ([B,] T_q, T_k) key - query
        lo = int(k_pos.min()) - int(q_pos.max())
        # the bucket depends on the distance only: bucket the T_q + T_k - 1 distances, then look them up
        buckets = self.bucket(xp.arange(lo, int(k_pos.max()) - int(q_pos.min()) + 1))  # (L,)
        if distance.ndim == 3:                                                    # per-row positions
            return self.table[buckets[distance - lo]].transpose(0, 3, 1, 2)      # (B, H, T_q, T_k)
        return self.table[buckets[distance - lo]].transpose(2, 0, 1)[None]       # (1, H, T_q, T_k)

    def bucket(self, relative_position):
        """The bucket of each relative position ``key_pos - query_pos`` under this scheme's settings."""
        return relative_position_bucket(relative_position, self.bidirectional, self.num_buckets, self.max_distance)

    def score_bias(self, q, k, q_pos, k_pos, layer):
        return self.bias_at(q_pos, k_pos)                                         # (1, H, T_q, T_k)
