r"""RoPE (Su et al., 2021): rotate queries and keys by angles proportional to their positions.

Pair channel i with channel i + d/2 (the rotate-half convention) and turn each
pair at position m by the angle m\theta_i, \theta_i = \mathrm{base}^{-2i/d}:

.. math:: \mathrm{RoPE}(x, m) = x \odot \cos(m\theta) + \mathrm{rotate\_half}(x) \odot \sin(m\theta).

Because R_m^\top R_n = R_{n-m}, the score \langle R_m q, R_n k \rangle = q^\top R_{n-m} k
depends on the positions only through n - m.
"""
from .. import functional as F
from ..backend import xp
from .base import PositionalScheme


def rotate_half(x):
    r"""[x_1, x_2] \mapsto [-x_2, x_1] on the last axis (works on arrays)."""
    return F.rotate_half_array(x)


def apply_rotary(x, cos, sin):
    r"""x \odot \cos + \mathrm{rotate\_half}(x) \odot \sin; a Tensor gets the fused op with its backward."""
    if hasattr(x, "requires_grad"):
        return F.apply_rotary(x, cos, sin)
    return x * cos + rotate_half(x) * sin


class RotaryEmbedding:
    r"""``RotaryEmbedding(d_head, base)(T, offset)`` gives ``(cos, sin)``, each ``(T, d_head)``.

    The angle of pair i at position m is m\theta_i, written into both halves
    (channels i and i + d/2) so it lines up with ``rotate_half``.
    """

    def __init__(self, d_head, base=10000.0):
        if d_head % 2:
            raise ValueError(f"RoPE needs an even d_head to form pairs, got d_head={d_head}.")
        self.d_head, self.base = d_head, base
        self.inv_freq = base ** (-xp.arange(0, d_head, 2, dtype="float64") / d_head)  # theta_i, (d_head/2,)

    def at(self, pos):
        """(cos, sin) for an integer array of positions, each ``(len(pos), d_head)``, float64."""
        angles = pos.astype("float64")[:, None] * self.inv_freq[None, :]   # (T, d_head/2)
        angles = xp.concatenate([angles, angles], axis=-1)                 # (T, d_head)
        return xp.cos(angles), xp.sin(angles)

    def __call__(self, T, offset=0):
        return self.at(xp.arange(offset, offset + T))


class RoPE(PositionalScheme):
    """Rotates q and k in every layer; adds nothing to the input or the scores."""

    def __init__(self, d_head, base=10000.0):
        self.rotary = RotaryEmbedding(d_head, base)

    @classmethod
    def from_config(cls, cfg, rng=None):
        return cls(cfg.d_model // cfg.n_heads, cfg.rope_base)

    def rotate(self, x, pos, layer):
        cos, sin = self.rotary.at(pos)                                     # (T, d_head) each
        return apply_rotary(x, cos.astype(x.dtype), sin.astype(x.dtype))
