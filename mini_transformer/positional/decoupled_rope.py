r"""Decoupled RoPE, as in Multi-head Latent Attention (DeepSeek-V2): position in a small separate subspace.

Each head's score is the sum of a content part, which never sees a position,
and a rotary part of width d_rope:

.. math::
    s_{ij} = \frac{q_i^{C\top} k_j^{C} + (R_i q_i^{R})^\top (R_j k_j^{R})}{\sqrt{d_{head}}},
    \qquad q^R_{i,h} = W^{QR}_h\,[q_i],\quad k^R_j = W^{KR}\,[k_j].

q^C, k^C are attention's own per-head queries and keys, left unrotated. The
rotary query q^R has its own d_rope channels per head; the rotary key k^R is
**one vector shared by all heads**, as in MLA, which is what lets MLA cache
the content part compressed and add only d_rope numbers per token for
position. In MLA q^R comes from the compressed query latent and k^R from the
layer input; here both come from a linear map of the concatenated content
queries [q_i] and keys [k_j] ``(d_model,)``, which are themselves linear in the
layer input, so the hooks see everything they need. Only q^R and k^R are
rotated (rotate-half, frequencies from ``rope_scaling.rope_inv_freq`` for a
d_rope-wide head).

Two honest differences from MLA. The content term keeps attention's own
1/\sqrt{d_{head}} and the rotary term uses the same factor (MLA divides their
sum by \sqrt{d_{head} + d_{rope}}; a constant that the weights absorb). And
the cache stores the content keys only: k^R is recomputed from them at each
step (a ``(T_k, d_model) @ (d_model, d_rope)`` product per layer) instead of being
cached once; the scores are the same.

``GPTConfig.extra`` key read by the ``"decoupled_rope"`` scheme:

* ``d_rope`` (even int, default d_head / 2 rounded down to even, at least 2): the rotary width.

It also reads ``rope_base`` and ``rope_scaling`` like ``"rope"``.
"""
from dataclasses import asdict, dataclass

from ..engine import kernels
from ..engine.backend import rng as make_rng
from ..engine.nn import Linear, Module
from ..engine.validate import check_int
from .base import PositionalScheme, setting
from .rope import RotaryEmbedding, apply_rotary


class DecoupledRoPELayer(Module):
    """One layer's W^{QR} ``(d_model, H d_rope)`` and shared-key W^{KR} ``(d_model, d_rope)``."""

    def __init__(self, d_model, n_heads, d_rope, rng, std):
        self.W_QR = Linear(d_model, n_heads * d_rope, rng, bias=False, std=std)
        self.W_KR = Linear(d_model, d_rope, rng, bias=False, std=std)


@dataclass(frozen=True)
class DecoupledRoPESettings:
    """The ``GPTConfig.extra`` key of the ``"decoupled_rope"`` scheme (None: the model decides)."""
    d_rope: int = setting(None, "the rotary width; default d_head / 2 rounded down to even, at least 2")


class DecoupledRoPE(PositionalScheme):
    """Adds the rotary part of MLA's score; the content q and k stay position-free."""

    Settings = DecoupledRoPESettings
    config_fields = ("rope_base", "rope_scaling", "max_len")
    per_row_positions = True

    def __init__(self, d_model, n_heads, n_layers, d_rope=None, base=10000.0, rope_scaling=None,
                 max_position_embeddings=None, rng=None, std=0.02):
        d_head = d_model // n_heads
        d_rope = _default_d_rope(d_head) if d_rope is None else d_rope
        check_int("DecoupledRoPE: d_rope", d_rope, minimum=2, even=True, why="RoPE turns pairs of channels")
        rng = rng or make_rng(0)
        self.settings = DecoupledRoPESettings(d_rope)
        self.n_heads, self.d_head, self.d_rope = n_heads, d_head, d_rope
        self.rotary = RotaryEmbedding(d_rope, base, rope_scaling=rope_scaling,
                                      max_position_embeddings=max_position_embeddings)
        self.layers = [DecoupledRoPELayer(d_model, n_heads, d_rope, rng, std) for _ in range(n_layers)]

    @classmethod
    def from_config(cls, cfg, rng=None, causal=True):
        s = cls.read_settings(cfg, d_rope=_default_d_rope(cfg.d_head))
        return cls(cfg.d_model, cfg.n_heads, cfg.n_layers, s.d_rope, cfg.rope_base, cfg.rope_scaling, cfg.max_len, rng)

    def signature(self):
        r = self.rotary
        return {**asdict(self.settings), "rope_base": r.base, "rope_scaling": r.rope_scaling,
                "max_len": r.max_position_embeddings}

    def score_bias(self, q, k, q_pos, k_pos, layer):
        B, H, T_q, d_head = q.shape
        T_k = k.shape[2]
        lay = self.layers[layer]
        q_cat = q.transpose(0, 2, 1, 3).reshape(B, T_q, H * d_head)               # (B, T_q, d_model)
        k_cat = k.transpose(0, 2, 1, 3).reshape(B, T_k, H * d_head)               # (B, T_k, d_model)
        q_R = lay.W_QR(q_cat).reshape(B, T_q, H, self.d_rope).transpose(0, 2, 1, 3)  # (B, H, T_q, d_rope)
        k_R = lay.W_KR(k_cat).reshape(B, 1, T_k, self.d_rope)                     # (B, 1, T_k, d_rope) all heads
        q_R = self.turn(q_R, q_pos) * (1.0 / d_head ** 0.5)                      # (B, H, T_q, d_rope) R_i q^R_i
        k_R = self.turn(k_R, k_pos)                                               # (B, 1, T_k, d_rope) R_j k^R_j
        return q_R @ k_R.transpose(0, 1, 3, 2)                                    # (B, H, T_q, T_k)

    def turn(self, x, pos):
        """Rotate the rotary part ``x`` ``(B, H or 1, T, d_rope)`` at positions ``pos``."""
        cos, sin = self.rotary.at(pos)                                            # (T, d_rope) each, float64
        if pos.ndim == 2:                                                         # per-row positions: (B, 1, T, d_rope)
            cos, sin = cos[:, None], sin[:, None]
        rotary = kernels.active().apply_rotary or apply_rotary                    # the fast kernel, or RoPE's op
        return rotary(x, cos.astype(x.dtype), sin.astype(x.dtype))

    # -- the two rotary parts on their own, for looking at what MLA would cache -------------
    def rotary_query(self, q, q_pos, layer):
        r"""R_i q^R_i / \sqrt{d_{head}} for attention's content queries ``q`` ``(B, H, T_q, d_head)``: ``(B, H, T_q, d_rope)``.

        With ``rotary_key``, ``rotary_query(q, ...) @ rotary_key(k, ...)^T`` is ``score_bias``.
        """
        B, H, T_q, d_head = q.shape
        q_R = self.layers[layer].W_QR(q.transpose(0, 2, 1, 3).reshape(B, T_q, H * d_head))
        q_R = q_R.reshape(B, T_q, H, self.d_rope).transpose(0, 2, 1, 3)         # (B, H, T_q, d_rope)
        return self.turn(q_R, q_pos) * (1.0 / d_head ** 0.5)

    def rotary_key(self, k, k_pos, layer):
        r"""R_j k^R_j for attention's content keys ``k`` ``(B, H, T_k, d_head)``: ``(B, 1, T_k, d_rope)``.

        One vector per token, shared by every head, and a function of that token alone: MLA
        rotates it once and caches it beside the compressed latent (d_rope numbers a token).
        """
        B, H, T_k, d_head = k.shape
        k_R = self.layers[layer].W_KR(k.transpose(0, 2, 1, 3).reshape(B, T_k, H * d_head))
        k_R = k_R.reshape(B, 1, T_k, self.d_rope)                                 # (B, 1, T_k, d_rope) all heads
        return self.turn(k_R, k_pos)


def _default_d_rope(d_head):
    """Half the head, rounded down to an even number, and at least one pair."""
    return max(2, (d_head // 2) // 2 * 2)
