r"""The positional-scheme protocol: the three places position can enter a Transformer.

1. **Input**: ``embed(x, offset)`` adds something to the token embeddings
   ``x`` ``(B, T, d_model)`` of the tokens at positions ``offset .. offset+T-1``
   (sinusoidal, learned).
2. **Scores**: ``score_bias(q, k, q_pos, k_pos, layer)`` returns a term added to
   the attention scores ``(B or 1, H, T_q, T_k)``, or ``None`` (T5, ALiBi,
   Shaw, Transformer-XL). It sees ``q`` and ``k`` so that a content-dependent
   term (Shaw's q·a_{j-i}) fits too; it is called after scaling is decided,
   so it returns a term on the scale of the final scores.
3. **Rotation**: ``rotate(x, pos, layer)`` turns queries or keys ``(B, H, T, d_head)``
   by angles that depend on their positions ``pos`` (RoPE).

A scheme overrides only the hooks it uses; the defaults do nothing. Attention
calls all three and never asks a scheme its name. Positions are explicit
integer arrays: ``q_pos`` ``(T_q,)`` for the new tokens and ``k_pos`` ``(T_k,)``
for every key in view (cached ones included), so decoding with a cache, a
memory or an evicting window gets the right positions without special cases.

A scheme is one object per model, shared by all layers, so it can keep state
that spans layers (one bias table for the whole stack) or per-layer state
indexed by ``layer``.

Each scheme is built by ``from_config(cfg, rng=None, causal=True)``. ``causal``
says whether the model masks the future (``TinyGPT``) or not (``TinyEncoder``);
schemes whose form differs between the two (T5's buckets, ALiBi's distance)
read it, the others ignore it. Settings of one scheme only live in
``GPTConfig.extra``; each scheme's module docstring lists the keys it reads.
"""
import contextlib

from ..nn import Module


class PositionalScheme(Module):
    """Base class: no positional information at all unless a subclass adds it."""

    #: positions at or past this cannot be encoded (a learned table's size); None means unbounded
    max_positions = None
    #: True if ``output_term`` is defined, so attention must keep its probabilities in the graph
    needs_probs = False
    #: True if a key's rotation depends on more than its own position (dynamic NTK: the current length),
    #: so a KV cache must store keys unrotated and rotate them afresh at every step
    rerotate_keys = False

    def embed(self, x, offset):
        """Add position to the token embeddings ``x`` ``(B, T, d_model)``; default: unchanged."""
        return x

    def score_bias(self, q, k, q_pos, k_pos, layer):
        """A term added to the attention scores ``(B or 1, H, T_q, T_k)``; default: none."""
        return None

    def rotate(self, x, pos, layer):
        """Rotate queries or keys ``(B, H, T, d_head)`` at positions ``pos``; default: unchanged."""
        return x

    def output_term(self, probs, q_pos, k_pos, layer):
        """A term added to the attention output from its probabilities (Shaw's values); default: none."""
        return None

    def signature(self):
        """Settings a checkpoint must match beyond the config's fields; default: none."""
        return {}

    @contextlib.contextmanager
    def planned_length(self, n):
        """Within this block the sequence will grow to ``n`` tokens; default: nothing to plan.

        A scheme whose encoding depends on the current length (dynamic NTK) fixes
        it here for a whole generation, so every step uses the one scale a full
        forward pass over all ``n`` tokens would use.
        """
        yield

    def check_positions(self, last_position):
        """Raise if a position this large cannot be encoded."""
        if self.max_positions is not None and last_position >= self.max_positions:
            raise ValueError(
                f"{type(self).__name__} encodes positions 0..{self.max_positions - 1}, but position "
                f"{last_position} was asked for (offset plus sequence length must stay at or below "
                f"max_len={self.max_positions}).")
