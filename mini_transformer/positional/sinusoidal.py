r"""Sinusoidal absolute positions (Vaswani et al., 2017), added to the input.

.. math::
    PE(t, 2i) = \sin(t\, \omega_i), \quad PE(t, 2i+1) = \cos(t\, \omega_i), \quad
    \omega_i = \mathrm{base}^{-2i/d_{model}}.

Each pair (sin, cos) at frequency \omega_i is a point on a circle, so PE(t + k)
is PE(t) turned by the fixed angle k\omega_i in each pair: a linear map that
depends on k only.
"""
from ..engine.backend import xp
from .base import PositionalScheme


def sinusoidal_positional_encoding(T, d_model, base=10000.0, offset=0):
    r"""The table ``(T, d_model)`` for positions ``offset .. offset+T-1`` (float64)."""
    return sinusoidal_table(xp.arange(offset, offset + T), d_model, base)


def sinusoidal_table(pos, d_model, base=10000.0):
    r"""PE for any integer array of positions ``pos`` (T,), negative ones included: ``(T, d_model)``, float64.

    Transformer-XL feeds it relative distances i - j instead of absolute positions.
    """
    if d_model % 2:
        raise ValueError(f"sinusoidal_positional_encoding needs an even d_model, got d_model={d_model}.")
    pos = pos.astype("float64")[:, None]                                     # (T, 1)
    omega = base ** (-xp.arange(0, d_model, 2, dtype="float64") / d_model)  # (d_model/2,)
    pe = xp.zeros((pos.shape[0], d_model), dtype="float64")
    pe[:, 0::2] = xp.sin(pos * omega)
    pe[:, 1::2] = xp.cos(pos * omega)
    return pe


class SinusoidalPositionalEncoding(PositionalScheme):
    """x + PE[offset : offset + T] (or PE at each token's own position, per row); no parameters."""

    config_fields = ("sinusoidal_base",)
    per_row_positions = True

    def __init__(self, d_model, base=10000.0):
        self.d_model, self.base = d_model, base

    @classmethod
    def from_config(cls, cfg, rng=None, causal=True):
        return cls(cfg.d_model, cfg.sinusoidal_base)

    def signature(self):
        return {"sinusoidal_base": self.base}

    def embed(self, x, offset):
        if not isinstance(offset, int) and getattr(offset, "ndim", 0) == 2:       # per-row positions (B, T)
            B, T = offset.shape
            pe = sinusoidal_table(offset.reshape(-1), self.d_model, self.base).reshape(B, T, self.d_model)
            return x + pe.astype(x.dtype)
        pe = sinusoidal_positional_encoding(x.shape[1], self.d_model, self.base, offset)  # (T, d_model)
        return x + pe.astype(x.dtype)
