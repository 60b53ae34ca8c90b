r"""Learned absolute positions (GPT-2, BERT): a table of ``T_max`` vectors, one per position.

It knows nothing about positions it never saw in training, and it cannot
express a position past ``T_max`` at all: asking for one is an error.
"""
from ..engine.backend import rng as make_rng
from ..engine.nn import Parameter, init_normal
from .base import PositionalScheme


class LearnedPositionalEmbedding(PositionalScheme):
    """A ``(T_max, d_model)`` table; ``rows(T, offset)`` gives the ``(1, T, d_model)`` rows of those positions."""

    config_fields = ("max_len",)
    per_row_positions = True

    def __init__(self, T_max, d_model, rng=None, std=0.02):
        self.T_max = self.max_positions = T_max
        self.weight = Parameter(init_normal(rng or make_rng(0), (T_max, d_model), std))

    @classmethod
    def from_config(cls, cfg, rng=None, causal=True):
        return cls(cfg.max_len, cfg.d_model, rng)

    def signature(self):
        return {"max_len": self.T_max}

    def rows(self, T, offset=0):
        if offset < 0 or offset + T > self.T_max:
            raise ValueError(f"LearnedPositionalEmbedding has T_max={self.T_max} positions, but positions "
                             f"{offset}..{offset + T - 1} were asked for (position {offset + T - 1} is at or "
                             f"past T_max={self.T_max}).")
        return self.weight[None, offset:offset + T]   # (1, T, d_model)

    def rows_at(self, pos):
        """The rows ``(B, T, d_model)`` of the per-row positions ``pos`` ``(B, T)``."""
        lo, hi = int(pos.min()), int(pos.max())
        if lo < 0 or hi >= self.T_max:
            raise ValueError(f"LearnedPositionalEmbedding has T_max={self.T_max} positions, but position_ids run "
                             f"from {lo} to {hi}; every position id must lie in [0, {self.T_max}).")
        return self.weight[pos]                       # (B, T, d_model)

    def embed(self, x, offset):
        if not isinstance(offset, int) and getattr(offset, "ndim", 0) == 2:   # per-row positions (B, T)
            return x + self.rows_at(offset)
        return x + self.rows(x.shape[1], offset)
