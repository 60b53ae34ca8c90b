r"""Transformer-XL (Dai et al., 2019): relative attention and a memory of the previous segment.

The unscaled score of query i and key j splits into four terms,

.. math::
    A_{ij} = \underbrace{q_i^\top k_j}_{(a)}
           + \underbrace{q_i^\top W_{k,R} R_{i-j}}_{(b)}
           + \underbrace{u^\top k_j}_{(c)}
           + \underbrace{v^\top W_{k,R} R_{i-j}}_{(d)},

content-content, content-position, a global content bias and a global
position bias. R_{i-j} is the sinusoidal table at the distance i - j (no
parameters), W_{k,R} ``(d_model, d_model)`` is learned per layer, and u, v
``(H, d_head)`` are learned once for the whole model. Attention computes (a);
this scheme adds [(b) + (c) + (d)] / \sqrt{d_{head}}. Nothing is added to the
input: a token carries no absolute position.

(b) + (d) = (q_i + v)^\top W_{k,R} R_{i-j} is first computed for every query and
every distance ``(B, H, T_q, L)``, one product, and then moved to its key
column by the relative shift (``F.relative_shift``), which needs no index array.

**Segment-level recurrence.** Carry a ``KVCache(window=mem_len)`` from one
segment to the next (``model.new_cache(window=mem_len)``, then
``model(segment, cache=cache)`` for each segment). The cache stores the keys and
values of the last ``mem_len`` tokens as plain arrays, so the gradient of a
segment never flows into the memory: Transformer-XL's stop-gradient. Because
the scores use only distances, positions in the memory need no renumbering.
One difference from the paper: the paper caches each layer's input and
recomputes its keys and values with the current weights; the cache keeps the
keys and values themselves. The two agree whenever the weights did not change
between segments (always at evaluation).

``GPTConfig.extra`` keys read by the ``"transformer_xl"`` scheme:

* ``mem_len`` (int, default ``max_len``): how many past tokens the memory keeps;
  read it back as ``scheme.mem_len`` when you build the cache.

R uses ``GPTConfig.sinusoidal_base``.
"""
from dataclasses import dataclass

from ..engine import functional as F
from ..engine.backend import rng as make_rng
from ..engine.backend import xp
from ..engine.nn import Linear, Module, Parameter, init_normal
from ..engine.validate import check_int
from .base import PositionalScheme, key_minus_query, setting
from .sinusoidal import sinusoidal_table


class TransformerXLLayer(Module):
    """One layer's W_{k,R}: maps R_{i-j} ``(d_model,)`` to a key-like vector per head."""

    def __init__(self, d_model, rng):
        self.W_kR = Linear(d_model, d_model, rng, bias=False)


@dataclass(frozen=True)
class TransformerXLSettings:
    """The ``GPTConfig.extra`` key of the ``"transformer_xl"`` scheme (None: the model decides)."""
    mem_len: int = setting(None, "past tokens the segment memory keeps; default max_len")


class TransformerXLRelative(PositionalScheme):
    """Adds (b) + (c) + (d) of the score decomposition, scaled like the content term."""

    Settings = TransformerXLSettings
    config_fields = ("sinusoidal_base",)
    per_row_positions = True

    def __init__(self, d_model, n_heads, n_layers, causal=True, base=10000.0, mem_len=None, rng=None, std=0.02):
        if mem_len is not None:
            check_int("transformer_xl: mem_len", mem_len, minimum=1)
        rng = rng or make_rng(0)
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.settings = TransformerXLSettings(mem_len)
        self.causal, self.base, self.mem_len = causal, base, mem_len
        self.u = Parameter(init_normal(rng, (n_heads, self.d_head), std))   # (H, d_head) global content bias
        self.v = Parameter(init_normal(rng, (n_heads, self.d_head), std))   # (H, d_head) global position bias
        self.layers = [TransformerXLLayer(d_model, rng) for _ in range(n_layers)]

    @classmethod
    def from_config(cls, cfg, rng=None, causal=True):
        return cls(cfg.d_model, cfg.n_heads, cfg.n_layers, causal, cfg.sinusoidal_base,
                   cls.read_settings(cfg, mem_len=cfg.max_len).mem_len, rng)

    def signature(self):
        return {**super().signature(), "sinusoidal_base": self.base, "causal": self.causal}

    def distances(self, q_pos, k_pos):
        r"""The distances d_{hi}, d_{hi} - 1, ..., d_{lo} for terms (b) and (d), in ``relative_shift``'s order.

        d_{hi} = last query - first key. The causal form stops at 0 (future keys
        are masked); the bidirectional one goes down to first query - last key.
        """
        _check_consecutive("q_pos", q_pos)
        _check_consecutive("k_pos", k_pos)
        d_hi = int(q_pos[-1]) - int(k_pos[0])
        d_lo = 0 if self.causal else int(q_pos[0]) - int(k_pos[-1])
        if self.causal and int(q_pos[-1]) != int(k_pos[-1]):
            raise ValueError(f"transformer_xl: in the causal form the last query (position {int(q_pos[-1])}) must "
                             f"also be the last key (position {int(k_pos[-1])}).")
        return xp.arange(d_hi, d_lo - 1, -1)                                 # (L,) descending

    def score_bias(self, q, k, q_pos, k_pos, layer):
        B, H, T_q, d_head = q.shape
        T_k = k.shape[2]
        if q_pos.ndim == 2:                                                  # per-row positions (B, T)
            return self._score_bias_rows(q, k, q_pos, k_pos, layer)
        dist = self.distances(q_pos, k_pos)                                  # (L,)
        R = F.as_tensor(sinusoidal_table(dist, self.d_model, self.base).astype(q.dtype))  # (L, d_model)
        r = self.layers[layer].W_kR(R)                                       # (L, d_model) W_{k,R} R_{i-j}
        r = r.reshape(-1, H, d_head).transpose(1, 2, 0)                      # (H, d_head, L)
        s = 1.0 / d_head ** 0.5                                              # scale the small operands, not T x T
        bd = ((q + self.v[None, :, None, :]) * s) @ r                        # (B, H, T_q, L) terms (b) + (d)
        bd = self.shift(bd, T_k)                                             # (B, H, T_q, T_k) column j = key j
        c = (self.u[None, :, None, :] * s) @ k.transpose(0, 1, 3, 2)         # (B, H, 1, T_k) term (c)
        return bd + c

    def _score_bias_rows(self, q, k, q_pos, k_pos, layer):
        r"""``score_bias`` for per-row positions: no relative shift (a packed row's positions restart), so each
        key's column of (b) + (d) is picked by its distance i - j with ``F.gather_distance``, row by row."""
        H, d_head = q.shape[1], q.shape[3]
        dist = -key_minus_query(q_pos, k_pos)                                # (B, T_q, T_k) i - j
        hi, lo = int(dist.max()), int(dist.min())
        R = F.as_tensor(sinusoidal_table(xp.arange(hi, lo - 1, -1), self.d_model, self.base).astype(q.dtype))
        r = self.layers[layer].W_kR(R).reshape(-1, H, d_head).transpose(1, 2, 0)   # (H, d_head, L)
        s = 1.0 / d_head ** 0.5
        bd = ((q + self.v[None, :, None, :]) * s) @ r                        # (B, H, T_q, L) column c: distance hi - c
        column = hi - dist                                                   # (B, T_q, T_k) in [0, L)
        bd = F.concat([F.gather_distance(bd[b:b + 1], column[b]) for b in range(q.shape[0])], axis=0)
        c = (self.u[None, :, None, :] * s) @ k.transpose(0, 1, 3, 2)         # (B, H, 1, T_k) term (c)
        return bd + c

    def shift(self, bd, T_k):
        """Move each query's per-distance scores ``(B, H, T_q, L)`` to their keys: ``(B, H, T_q, T_k)``."""
        return F.relative_shift(bd)[:, :, :, :T_k]

def _check_consecutive(name, pos):
    if pos.shape[0] == 0 or (pos.shape[0] > 1 and not bool(xp.all(pos[1:] - pos[:-1] == 1))):
        raise ValueError(f"transformer_xl: {name} must be consecutive integer positions for the relative shift; "
                         f"got {pos.shape[0]} positions from {int(pos.min()) if pos.size else None} to "
                         f"{int(pos.max()) if pos.size else None} with gaps.")
