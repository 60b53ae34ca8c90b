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
    """x + PE[offset : offset + T]; no parameters."""

    config_fields = {"sinusoidal_base": "base"}

    def __init__(self, d_model, base=10000.0):
        self.d_model, self.base = d_model, base

    @classmethod
    def from_config(cls, cfg, rng=None, causal=True):
        return cls(cfg.d_model, cfg.sinusoidal_base)

    def embed(self, x, offset):
        pe = sinusoidal_positional_encoding(x.shape[1], self.d_model, self.base, offset)  # (T, d_model)
        return x + pe.astype(x.dtype)

    @classmethod
    def from_functions(cls, sinusoidal_positional_encoding, base=10000.0):
        r"""The sinusoidal scheme computed by a function you wrote, so a model trains on your code.

        ``sinusoidal_positional_encoding(T, d_model, base)`` returns the ``(T, d_model)``
        table of the positions ``0 .. T-1`` (the signature of chapter 2's exercise). The
        scheme asks it for ``offset + T`` rows and adds the last ``T`` to the token
        embeddings, so a cached decoding step gets the rows of its own positions; the
        width is the model's, read from the embeddings.
        """
        return _FunctionSinusoidal(sinusoidal_positional_encoding, base)


class _FunctionSinusoidal(SinusoidalPositionalEncoding):
    """``SinusoidalPositionalEncoding.from_functions``: the table comes from the function it was given."""

    config_fields = {"sinusoidal_base": "base"}
    made_from = "encoding"

    def __init__(self, encoding, base):
        self.encoding, self.base = encoding, base

    def embed(self, x, offset):
        T, d_model = x.shape[1], x.shape[2]
        pe = xp.asarray(self.encoding(offset + T, d_model, self.base))  # (offset + T, d_model)
        if tuple(pe.shape) != (offset + T, d_model):
            raise ValueError(f"SinusoidalPositionalEncoding.from_functions: the function was asked for "
                             f"T={offset + T} positions of width d_model={d_model} and returned shape "
                             f"{tuple(pe.shape)}; it must return (T, d_model).")
        return x + pe[offset:].astype(x.dtype)
