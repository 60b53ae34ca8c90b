r"""Attention temperature tuning (Llama 4): the queries of NoPE layers grow with their position.

Scalable-Softmax (Nakanishi, 2025) observes that a softmax over $n$ scores flattens as $n$ grows, and
scales the logits by $s \log n$ to keep it peaked. Llama 4 applies a stepped form of it to the queries of
its NoPE layers, at the query's absolute position $m$ (0-based):

$$\tau(m) = 1 + \text{attn\_scale}\cdot\log\Big(\Big\lfloor \frac{m + 1}{\text{floor\_scale}} \Big\rfloor + 1\Big),$$

so $\tau = 1$ for the first ``floor_scale`` $- 1$ positions, $m = 0, \dots, \text{floor\_scale} - 2$ (8191 positions in
Llama 4, whose ``floor_scale`` is 8192), and it rises by steps after: the first step is at $m + 1 = \text{floor\_scale}$. In
transformers' ``Llama4TextAttention`` it multiplies the query states only (never the keys), only in the
layers without RoPE and only when ``attn_temperature_tuning`` is set, before attention's $1/\sqrt{d}$,
and $m$ counts every token the cache has seen (``past_seen_tokens`` plus the index in the chunk).

``NoPETemperature`` is that layer as a scheme: no rotation, no input term, and queries scaled by $\tau$.
Attention calls ``rotate`` for queries and keys alike, so the scheme cannot scale queries there; it uses
the score hook instead, which sees $q$: $(\tau_i q_i)\cdot k_j = q_i\cdot k_j + (\tau_i - 1)\,q_i\cdot k_j$,
so adding $(\tau_i - 1)\,q_i\cdot k_j/\sqrt{d}$ to the scores is scaling query $i$ by $\tau_i$.

``GPTConfig.extra`` keys read by the ``"temperature"`` scheme:

* ``floor_scale`` (int, default 8192): tokens per step of $\tau$.
* ``attn_scale`` (float, default 0.1): how much each step adds, on a log scale.
"""
import math
from dataclasses import dataclass

from ..engine.backend import asarray, xp
from ..engine.validate import check_int
from .base import PositionalScheme, per_head, setting


def llama4_attention_scales(positions, floor_scale=8192, attn_scale=0.1):
    r"""$\tau(m) = 1 + \text{attn\_scale}\,\log(\lfloor (m + 1)/\text{floor\_scale} \rfloor + 1)$ for each position, float64.

    ``positions`` is an integer array of absolute 0-based positions, any shape; the result has its shape.
    """
    check_int("llama4_attention_scales: floor_scale", floor_scale, minimum=1, why="tokens per step")
    if isinstance(attn_scale, bool) or not isinstance(attn_scale, (int, float)) or not attn_scale >= 0:
        raise ValueError(f"llama4_attention_scales: attn_scale is {attn_scale!r}; it must be a number of at "
                         "least 0 (Llama 4 uses 0.1).")
    pos = asarray(positions)
    if pos.size and int(pos.min()) < 0:
        raise ValueError(f"llama4_attention_scales: positions include {int(pos.min())}; positions count tokens "
                         "from 0, so none may be negative.")
    steps = xp.floor((pos.astype("float64") + 1.0) / floor_scale)             # whole floor_scale blocks reached
    return 1.0 + attn_scale * xp.log(steps + 1.0)


@dataclass(frozen=True)
class NoPETemperatureSettings:
    """The ``GPTConfig.extra`` keys of the ``"temperature"`` scheme."""
    floor_scale: int = setting(8192, "tokens per step of the query scale")
    attn_scale: float = setting(0.1, "what each step adds to the query scale, on a log scale")


class NoPETemperature(PositionalScheme):
    """NoPE with Llama 4's temperature tuning: query i's scores are multiplied by tau(position of i)."""

    Settings = NoPETemperatureSettings
    per_row_positions = True

    def __init__(self, floor_scale=8192, attn_scale=0.1):
        llama4_attention_scales(xp.zeros(0, dtype="int64"), floor_scale, attn_scale)   # check the settings once
        self.settings = NoPETemperatureSettings(floor_scale=floor_scale, attn_scale=float(attn_scale))

    @classmethod
    def from_config(cls, cfg, rng=None, causal=True):
        s = cls.read_settings(cfg)
        return cls(s.floor_scale, s.attn_scale)

    def score_bias(self, q, k, q_pos, k_pos, layer):
        s = self.settings
        # q_pos is (T_q,), or (B, T_q) in a padded or packed batch: each row's scale comes from its own
        # position ids, not from its index in the row, so a padded row scales as the prompt run alone
        tau = llama4_attention_scales(q_pos, s.floor_scale, s.attn_scale)     # ([B,] T_q) one scale per query
        extra = per_head(((tau - 1.0) / math.sqrt(q.shape[-1]))[..., None])   # (1 or B, 1, T_q, 1), every key
        return (q @ k.transpose(0, 1, 3, 2)) * extra.astype(q.dtype)          # (B, H, T_q, T_k)
