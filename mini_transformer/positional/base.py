r"""The positional-scheme protocol: the three places position can enter a Transformer.

1. **Input**: ``embed(x, offset)`` adds something to the token embeddings
   ``x`` ``(B, T, d_model)`` of the tokens at positions ``offset .. offset+T-1``
   (sinusoidal, learned).
2. **Scores**: ``score_bias(q, k, q_pos, k_pos, layer)`` returns a term added to
   the attention scores ``(B or 1, H, T_q, T_k)``, or ``None`` (T5, ALiBi,
   Shaw, Transformer-XL). It sees ``q`` and ``k`` so that a content-dependent
   term (Shaw's q·a_{j-i}) fits too, and returns a term on the scale of the
   final scores.
3. **Rotation**: ``rotate(x, pos, layer)`` turns queries or keys ``(B, H, T, d_head)``
   by angles that depend on their positions ``pos`` (RoPE).

Schemes whose term is computed from the attention probabilities (Shaw's
values) also define ``output_term`` and set ``needs_probs``. A scheme overrides
only the hooks it uses; the defaults do nothing. Attention calls all of them
and never asks a scheme its name. Positions are explicit integer arrays:
``q_pos`` ``(T_q,)`` for the new tokens and ``k_pos`` ``(T_k,)`` for every key in
view (cached ones included), so decoding with a cache, a memory or an
evicting window gets the right positions without special cases.

A scheme is one object per model, shared by all layers, so it can keep state
that spans layers (one bias table for the whole stack) or per-layer state
indexed by ``layer``.

**Settings.** Each scheme declares the ``GPTConfig.extra`` keys it reads in
``settings`` (name, type, default, meaning) and the ``GPTConfig`` fields it
reads in ``config_fields``, each with the attribute where the built scheme
keeps it. ``check_config`` refuses an unknown or mistyped key
when the config is made; ``from_config(cfg, rng, causal)`` builds the scheme,
``causal`` saying whether the model masks the future (``TinyGPT``) or not
(``TinyEncoder``); ``signature()`` lists every setting as the scheme uses it,
which is what a checkpoint binds.
"""
import contextlib
from dataclasses import dataclass

from ..engine.nn import Module


@dataclass(frozen=True)
class Setting:
    r"""One ``GPTConfig.extra`` key a scheme reads."""
    type: type          # bool, int or float
    default: object     # the value, or a function (cfg, causal) -> value where it depends on the model
    doc: str            # what it means, in a few words
    attr: str           # where the built scheme keeps it (dotted), for ``signature()``

    def value(self, scheme_name, key, cfg, causal):
        """The setting's value for ``cfg``: the one given in ``cfg.extra`` (type-checked) or the default."""
        if key not in cfg.extra:
            return self.default(cfg, causal) if callable(self.default) else self.default
        self.check(scheme_name, key, cfg.extra[key])
        return cfg.extra[key]

    def check(self, scheme_name, key, value):
        ok = {bool: lambda v: isinstance(v, bool),
              int: lambda v: isinstance(v, int) and not isinstance(v, bool),
              float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)}[self.type](value)
        if not ok:
            raise ValueError(f"GPTConfig.extra[{key!r}]={value!r} for the {scheme_name!r} scheme must be a "
                             f"{self.type.__name__} ({self.doc}).")


class PositionalScheme(Module):
    """Base class: no positional information at all unless a subclass adds it."""

    #: the GPTConfig.extra keys this scheme reads, {name: Setting}
    settings = {}
    #: the GPTConfig fields this scheme reads beyond the model's sizes, {field: where the built scheme keeps it}
    config_fields = {}
    #: positions at or past this cannot be encoded (a learned table's size); None means unbounded
    max_positions = None
    #: True if ``output_term`` is defined, so attention must keep its probabilities in the graph
    needs_probs = False
    #: True if a key's rotation depends on more than its own position (dynamic NTK: the current length),
    #: so a KV cache must store keys unrotated and rotate them afresh at every step
    rerotate_keys = False
    #: for a scheme made by ``from_functions``: the attribute that holds the reader's function
    made_from = None

    # -- building from a config ------------------------------------------------
    @classmethod
    def check_config(cls, cfg, name):
        """Refuse an ``extra`` key this scheme does not read, a mistyped value, or a field it ignores."""
        for key, value in cfg.extra.items():
            if key not in cls.settings:
                valid = ", ".join(repr(k) for k in cls.settings) or "none"
                raise ValueError(f"GPTConfig.extra has the key {key!r}, which the {name!r} scheme does not read; "
                                 f"its keys are: {valid}.")
            cls.settings[key].check(name, key, value)
        if cfg.rope_scaling is not None and "rope_scaling" not in cls.config_fields:
            raise ValueError(f"GPTConfig.rope_scaling={cfg.rope_scaling!r} is set, but the {name!r} scheme does not "
                             "rotate queries and keys, so it would be ignored; use positional='rope' (or "
                             "'decoupled_rope'), or leave rope_scaling=None.")

    @classmethod
    def setting_values(cls, cfg, causal=True):
        """``{key: value}`` for every declared setting: the config's value, else the default."""
        return {key: s.value(cls.__name__, key, cfg, causal) for key, s in cls.settings.items()}

    @classmethod
    def from_config(cls, cfg, rng=None, causal=True):
        """Build the scheme for ``cfg``; each scheme with parameters or settings overrides this."""
        return cls()

    def signature(self):
        """Every declared setting and config field as this scheme uses it: what a checkpoint must match."""
        where = {**{key: s.attr for key, s in self.settings.items()}, **self.config_fields}
        out = {}
        for key, attr in where.items():
            value = self
            for part in attr.split("."):
                value = getattr(value, part)
            out[key] = value
        if self.made_from is not None:       # a checkpoint of a model that ran a reader's function names it
            fn = getattr(self, self.made_from)
            out["from_functions"] = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__name__', '?')}"
        return out

    # -- the hooks ---------------------------------------------------------------
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
