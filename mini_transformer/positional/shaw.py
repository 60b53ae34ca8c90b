r"""Shaw et al. (2018), relative position representations: learned vectors for clipped distances.

Clip the distance from query i to key j, r_{ij} = \mathrm{clip}(j - i, -k, k), and
learn a key vector a^K_r and a value vector a^V_r for each of the 2k + 1 values:

.. math::
    s_{ij} = \frac{q_i^\top (k_j + a^K_{r_{ij}})}{\sqrt{d_{head}}}, \qquad
    z_i = \sum_j \alpha_{ij} (v_j + a^V_{r_{ij}}).

As in the paper the vectors are shared by the heads of a layer; each layer
has its own. Nothing ``(T, T, d_head)`` is ever built: the key term is
q @ a^{K\top}, one score per query and distance ``(B, H, T_q, 2k+1)``, then
gathered into ``(B, H, T_q, T_k)`` by ``F.gather_distance``; the value term
first adds up each query's attention per distance (``F.scatter_distance``,
``(B, H, T_q, 2k+1)``), then multiplies by a^V.

``GPTConfig.extra`` keys read by the ``"shaw"`` scheme:

* ``shaw_k`` (int, default 16): the clipping distance k (the survey's K).
* ``shaw_values`` (bool, default True): also learn a^V. This needs the attention
  probabilities in the graph (``needs_probs``), so attention takes its unfused path.
"""
from dataclasses import dataclass

from ..engine import functional as F
from ..engine.backend import rng as make_rng
from ..engine.backend import xp
from ..engine.nn import Module, Parameter, init_normal
from ..engine.validate import check_int
from .base import PositionalScheme, key_minus_query, setting


def clipped_distance_index(q_pos, k_pos, k):
    r"""r_{ij} + k = \mathrm{clip}(j - i, -k, k) + k, the row of a^K and a^V for each (query, key): ``(T_q, T_k)``
    (``(B, T_q, T_k)`` for per-row positions ``(B, T)``)."""
    return xp.clip(key_minus_query(q_pos, k_pos), -k, k) + k


def per_row(fn, x, index, *args):
    """``fn(x, index)`` for a shared index ``(T_q, T_k)``; row by row, then joined, for a per-row one ``(B, T_q, T_k)``."""
    if index.ndim == 2:
        return fn(x, index, *args)
    return F.concat([fn(x[b:b + 1], index[b], *args) for b in range(index.shape[0])], axis=0)


class ShawLayer(Module):
    """One layer's a^K and a^V, each ``(2k + 1, d_head)``."""

    def __init__(self, k, d_head, values, rng, std=0.02):
        self.a_K = Parameter(init_normal(rng, (2 * k + 1, d_head), std))
        self.a_V = Parameter(init_normal(rng, (2 * k + 1, d_head), std)) if values else None


@dataclass(frozen=True)
class ShawSettings:
    """The ``GPTConfig.extra`` keys of the ``"shaw"`` scheme."""
    shaw_k: int = setting(16, "the clipping distance k")
    shaw_values: bool = setting(True, "also learn the value vectors a^V")


class ShawRelativePosition(PositionalScheme):
    """Adds q . a^K_{r_ij} to the scores and, with values, sum_j alpha_ij a^V_{r_ij} to the output."""

    Settings = ShawSettings
    per_row_positions = True

    def __init__(self, d_head, n_layers, k=16, values=True, rng=None):
        check_int("ShawRelativePosition: shaw_k", k, minimum=1, why="the clipping distance")
        rng = rng or make_rng(0)
        self.settings = ShawSettings(shaw_k=k, shaw_values=bool(values))
        self.k, self.d_head, self.needs_probs = k, d_head, bool(values)
        self.layers = [ShawLayer(k, d_head, values, rng) for _ in range(n_layers)]

    @classmethod
    def from_config(cls, cfg, rng=None, causal=True):
        s = cls.read_settings(cfg)
        return cls(cfg.d_head, cfg.n_layers, s.shaw_k, s.shaw_values, rng)

    def index(self, q_pos, k_pos):
        """The row of a^K and a^V for each (query, key): ``(T_q, T_k)`` integers in 0 .. 2k."""
        return clipped_distance_index(q_pos, k_pos, self.k)

    def score_bias(self, q, k, q_pos, k_pos, layer):
        index = self.index(q_pos, k_pos)                                     # ([B,] T_q, T_k)
        per_distance = (q @ self.layers[layer].a_K.T) * (1.0 / self.d_head ** 0.5)   # (B, H, T_q, 2k+1)
        return per_row(F.gather_distance, per_distance, index)               # (B, H, T_q, T_k)

    def output_term(self, probs, q_pos, k_pos, layer):
        a_V = self.layers[layer].a_V
        if a_V is None:
            return None
        index = self.index(q_pos, k_pos)                                     # ([B,] T_q, T_k)
        per_distance = per_row(F.scatter_distance, probs, index, 2 * self.k + 1)   # (B, H, T_q, 2k+1)
        return per_distance @ a_V                                            # (B, H, T_q, d_head)
