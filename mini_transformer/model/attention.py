r"""Multi-head attention with the three places position can enter (four hooks).

Layout throughout: ``(B, H, T, d_head)``. The positional scheme is asked, in
order, to rotate q and k (``rotate``), to add to the scores (``score_bias``),
and, for schemes that need it, to add to the output (``output_term``); the
input hook ``embed`` is called once by the model, before the first block.
Attention never asks which scheme it has.
"""
from ..engine import functional as F, kernels
from ..engine.backend import xp
from ..engine.nn import Linear, Module, Parameter


class MultiHeadAttention(Module):
    r"""y = \mathrm{softmax}(Q K^\top / \sqrt{d_{head}} + \text{bias}) V, per head, then W_o."""

    def __init__(self, d_model, n_heads, rng, layer, out_std=0.02, sinks=False):
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}; each head needs "
                             f"d_model / n_heads channels.")
        self.n_heads, self.d_head, self.layer = n_heads, d_model // n_heads, layer
        self.W_qkv = Linear(d_model, 3 * d_model, rng)
        self.W_o = Linear(d_model, d_model, rng, std=out_std)
        # GPT-OSS's learned sink: one logit per head in every row's softmax, taking no value. At 0 a row of n
        # keys starts by giving the sink 1 / (n + 1) of its weight; training moves it.
        self.sinks = Parameter(xp.zeros(n_heads, dtype="float32")) if sinks else None   # (H,)
        self.record_attention = False   # set True to keep the last attention probabilities
        self.last_attention = None      # (B, H, T_q, T_k) backend array when recorded

    def forward(self, x, scheme, q_pos, k_pos, mask=None, cache=None):
        B, T, D = x.shape
        H, d_head = self.n_heads, self.d_head
        q, k, v = (a.reshape(B, T, H, d_head).transpose(0, 2, 1, 3)       # each (B, H, T, d_head)
                   for a in kernels.active().qkv_projection(x, self.W_qkv.weight, self.W_qkv.bias))
        q = scheme.rotate(q, q_pos, self.layer)
        if cache is not None and cache.keeps_raw_keys(scheme):
            k, v = cache.update(self.layer, k, v)               # (B, H, T_k, d_head), stored unrotated
            k = scheme.rotate(k, k_pos, self.layer)             # every key turned for where it sits now
        else:
            k = scheme.rotate(k, q_pos, self.layer)             # new keys sit where the new queries do
            if cache is not None:
                k, v = cache.update(self.layer, k, v)           # (B, H, T_k, d_head), rotated once, here
        bias = scheme.score_bias(q, k, q_pos, k_pos, self.layer)  # (B or 1, H, T, T_k) or None
        if scheme.needs_probs:
            y = self._attend_with_output_term(q, k, v, bias, mask, scheme, q_pos, k_pos)
        else:
            sinks = {"sinks": self.sinks} if self.sinks is not None else {}   # a kernel set without sinks still runs
            y = kernels.active().attention(q, k, v, bias=bias, mask=mask, return_weights=self.record_attention,
                                           **sinks)
            if self.record_attention:
                y, self.last_attention = y
        y = y.transpose(0, 2, 1, 3).reshape(B, T, D)            # (B, T, d_model)
        return self.W_o(y)

    def _attend_with_output_term(self, q, k, v, bias, mask, scheme, q_pos, k_pos):
        """The reference attention with its probabilities kept, for a term computed from them (Shaw's values)."""
        probs = F.attention_weights(q, k, bias, mask, sinks=self.sinks)   # (B, H, T, T_k)
        if self.record_attention:
            self.last_attention = probs.data
        y = probs @ v                                           # (B, H, T, d_head)
        extra = scheme.output_term(probs, q_pos, k_pos, self.layer)
        return y if extra is None else y + extra
