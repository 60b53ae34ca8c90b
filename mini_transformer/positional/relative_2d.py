r"""2-D relative position bias for windowed image attention (Swin Transformer, Liu et al., 2021).

The tokens of a w x w window sit in raster order: token p is at row
y = p // w, column x = p mod w. Between two tokens the offset
(\Delta y, \Delta x) = (y_i - y_j, x_i - x_j) takes (2w - 1)^2 values, and each head
learns one scalar per value:

.. math:: S_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_{head}}} + B_{h}[(\Delta y + w - 1)(2w - 1) + (\Delta x + w - 1)]

with the table ``((2w - 1)^2, H)``. The bias depends on the offset only, so it
is translation-invariant inside the window, in both directions at once.

As a scheme the sequence positions 0 .. w^2 - 1 are read as the tokens of one
window (``max_positions`` = w^2), which makes ``TinyEncoder`` a one-window
vision Transformer over w x w patch ids. ``GPTConfig.extra`` key read by the
``"relative_2d"`` scheme:

* ``window_size`` (int, default: the smallest w with w^2 >= ``max_len``).
"""
import math
from dataclasses import dataclass

from ..engine.backend import rng as make_rng
from ..engine.backend import xp
from ..engine.nn import Parameter, init_normal
from ..engine.validate import check_int
from .base import PositionalScheme, setting


def relative_2d_index(window_size, q_pos=None, k_pos=None):
    r"""The table row of each (query, key) pair: ``(T_q, T_k)`` integers in [0, (2w-1)^2).

    Positions default to the whole window, 0 .. w^2 - 1, in raster order; per-row
    positions ``(B, T_q)`` and ``(B, T_k)`` give ``(B, T_q, T_k)``.
    """
    w = window_size
    q_pos = xp.arange(w * w) if q_pos is None else q_pos
    k_pos = xp.arange(w * w) if k_pos is None else k_pos
    dy = (q_pos // w)[..., :, None] - (k_pos // w)[..., None, :]       # ([B,] T_q, T_k) in [-(w-1), w-1]
    dx = (q_pos % w)[..., :, None] - (k_pos % w)[..., None, :]         # ([B,] T_q, T_k)
    return (dy + w - 1) * (2 * w - 1) + (dx + w - 1)


@dataclass(frozen=True)
class Relative2DSettings:
    """The ``GPTConfig.extra`` key of the ``"relative_2d"`` scheme (None: the model decides)."""
    window_size: int = setting(None, "the window's side w; default the smallest w with w^2 >= max_len")


class RelativePositionBias2D(PositionalScheme):
    r"""A ``((2w-1)^2, H)`` table; ``bias(T)`` gives the ``(1, H, T, T)`` bias of a window's T = w^2 tokens."""

    Settings = Relative2DSettings
    per_row_positions = True     # each row's positions are raster positions in its own window

    def __init__(self, n_heads, window_size, rng=None, std=0.02, table=None):
        check_int("RelativePositionBias2D: window_size", window_size, minimum=1)
        self.settings = Relative2DSettings(window_size)
        self.n_heads, self.window_size = n_heads, window_size
        self.max_positions = window_size * window_size
        rows = (2 * window_size - 1) ** 2
        if table is not None and tuple(table.shape) != (rows, n_heads):
            raise ValueError(f"RelativePositionBias2D: a table of shape {tuple(table.shape)} does not fit "
                             f"window_size={window_size} and n_heads={n_heads}, which need "
                             f"((2*{window_size}-1)^2, {n_heads}) = ({rows}, {n_heads}).")
        data = table if table is not None else init_normal(rng or make_rng(0), (rows, n_heads), std)
        self.table = Parameter(data)                                    # ((2w-1)^2, H)

    @classmethod
    def from_config(cls, cfg, rng=None, causal=True):
        s = cls.read_settings(cfg, window_size=math.isqrt(cfg.max_len - 1) + 1)
        return cls(cfg.n_heads, s.window_size, rng)

    def bias(self, T):
        """The bias ``(1, H, T, T)`` of one whole window, T = w^2 tokens in raster order."""
        w = self.window_size
        if T != w * w:
            raise ValueError(f"RelativePositionBias2D: got T={T} tokens, but window_size={w} holds "
                             f"w*w={w * w} tokens; the table only fits windows of that size.")
        return self.bias_at(xp.arange(T), xp.arange(T))

    def bias_at(self, q_pos, k_pos):
        """The bias ``(1, H, T_q, T_k)`` (a Tensor) for tokens at raster positions ``q_pos`` and ``k_pos``."""
        index = self.index(q_pos, k_pos)                                 # ([B,] T_q, T_k)
        if index.ndim == 3:                                              # per-row positions
            return self.table[index].transpose(0, 3, 1, 2)               # (B, H, T_q, T_k)
        return self.table[index].transpose(2, 0, 1)[None]                # (1, H, T_q, T_k)

    def index(self, q_pos, k_pos):
        """The table row of each (query, key) pair, ``(T_q, T_k)``."""
        return relative_2d_index(self.window_size, q_pos, k_pos)

    def check_positions(self, last_position):
        if last_position >= self.max_positions:
            w = self.window_size
            raise ValueError(f"RelativePositionBias2D: position {last_position} lies outside a window of "
                             f"window_size={w}, which holds positions 0..{w * w - 1} in raster order.")

    def score_bias(self, q, k, q_pos, k_pos, layer):
        return self.bias_at(q_pos, k_pos)                                # (1, H, T_q, T_k)
