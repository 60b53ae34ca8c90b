r"""The positional-scheme protocol: the three places position can enter a Transformer, through four hooks.

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

**Per-row positions.** A padded or packed batch (``TinyGPT.forward`` with
``position_ids``) gives every row its own positions: ``q_pos`` ``(B, T_q)``,
``k_pos`` ``(B, T_k)``, and ``embed`` gets a ``(B, T)`` array in place of the
integer ``offset``. A scheme whose hooks take these sets ``per_row_positions =
True`` in its own class body; the flag is not inherited (``takes_row_positions``),
so a subclass that overrides a hook for 1-D positions only is refused by the
model with a sentence instead of computing nonsense. A scheme with
``position_axes = 3`` (M-RoPE) also takes ids ``(3, B, T)``, one row per axis,
and then gets ``q_pos`` ``(3, B, T_q)`` and ``k_pos`` ``(3, B, T_k)``.

A scheme is one object per model, shared by all layers, so it can keep state
that spans layers (one bias table for the whole stack) or per-layer state
indexed by ``layer``.

**Settings.** Each scheme lists the ``GPTConfig.extra`` keys it reads in a small
frozen dataclass, ``Settings`` (one typed field a key, its default and its
meaning), and the ``GPTConfig`` fields it reads in ``config_fields``.
``check_config`` refuses an unknown or mistyped key when the config is made;
``from_config(cfg, rng, causal)`` builds the scheme, ``causal`` saying whether
the model masks the future (``TinyGPT``) or not (``TinyEncoder``), and
``read_settings`` fills a default that depends on the model (a field whose
default is None). The built scheme keeps its settings as ``self.settings``;
``signature()``, which is what a checkpoint binds, is
``dataclasses.asdict(self.settings)`` plus the config fields as the scheme
uses them.
"""
import contextlib
from dataclasses import asdict, dataclass, field, fields

from ..engine.nn import Module


def setting(default, doc):
    """A field of a scheme's ``Settings``: its default (None: the model decides it) and what it means."""
    return field(default=default, metadata={"doc": doc})


def check_setting(scheme_name, f, value):
    """Refuse ``value`` for the settings field ``f`` unless it has the field's type (bool, int or float)."""
    ok = {bool: lambda v: isinstance(v, bool),
          int: lambda v: isinstance(v, int) and not isinstance(v, bool),
          float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)}[f.type](value)
    if not ok:
        raise ValueError(f"GPTConfig.extra[{f.name!r}]={value!r} for the {scheme_name!r} scheme must be a "
                         f"{f.type.__name__} ({f.metadata['doc']}).")


@dataclass(frozen=True)
class NoSettings:
    """The settings of a scheme that reads no ``GPTConfig.extra`` key."""


class PositionalScheme(Module):
    """Base class: no positional information at all unless a subclass adds it."""

    #: the GPTConfig.extra keys this scheme reads: a frozen dataclass, one typed ``setting`` field a key
    Settings = NoSettings
    #: the settings this scheme was built with, a ``Settings`` instance
    settings = NoSettings()
    #: the GPTConfig fields this scheme reads beyond the model's sizes; ``signature()`` reports each
    config_fields = ()
    #: positions at or past this cannot be encoded (a learned table's size); None means unbounded
    max_positions = None
    #: True if ``output_term`` is defined, so attention must keep its probabilities in the graph
    needs_probs = False
    #: True if a key's rotation depends on more than its own position (dynamic NTK: the current length),
    #: so a KV cache must store keys unrotated and rotate them afresh at every step
    rerotate_keys = False
    #: True (in the class's own body) if every hook also takes per-row positions (B, T); see the docstring
    per_row_positions = False
    #: position ids per token: 1, or 3 for M-RoPE's (time, height, width), whose rows arrive as (3, B, T)
    position_axes = 1
    #: True if the scheme only has a causal form, so ``TinyEncoder`` refuses it (FIRE)
    causal_only = False

    @classmethod
    def takes_row_positions(cls):
        """True if this very class declares ``per_row_positions`` (a subclass must declare it again)."""
        return bool(cls.__dict__.get("per_row_positions", False))

    # -- building from a config ------------------------------------------------
    @classmethod
    def check_config(cls, cfg, name):
        """Refuse an ``extra`` key this scheme does not read, a mistyped value, or a field it ignores."""
        declared = {f.name: f for f in fields(cls.Settings)}
        for key, value in cfg.extra.items():
            if key not in declared:
                valid = ", ".join(repr(k) for k in declared) or "none"
                raise ValueError(f"GPTConfig.extra has the key {key!r}, which the {name!r} scheme does not read; "
                                 f"its keys are: {valid}.")
            check_setting(name, declared[key], value)
        if cfg.rope_scaling is not None and "rope_scaling" not in cls.config_fields:
            raise ValueError(f"GPTConfig.rope_scaling={cfg.rope_scaling!r} is set, but the {name!r} scheme does not "
                             "rotate queries and keys, so it would be ignored; use positional='rope' (or "
                             "'decoupled_rope'), or leave rope_scaling=None.")

    @classmethod
    def read_settings(cls, cfg, **from_model):
        """``cls.Settings`` for ``cfg``: each key as ``cfg.extra`` gives it (type-checked), else as the model
        decides it (``from_model``, e.g. ``bidirectional=not causal``), else the field's default."""
        values = {}
        for f in fields(cls.Settings):
            if f.name in cfg.extra:
                check_setting(cls.__name__, f, cfg.extra[f.name])
                values[f.name] = cfg.extra[f.name]
            elif f.name in from_model:
                values[f.name] = from_model[f.name]
        return cls.Settings(**values)

    @classmethod
    def declared(cls):
        """The ``extra`` keys, then the config fields, this scheme reads: the names its signature must hold."""
        return [f.name for f in fields(cls.Settings)] + list(cls.config_fields)

    @classmethod
    def from_config(cls, cfg, rng=None, causal=True):
        """Build the scheme for ``cfg``; each scheme with parameters or settings overrides this."""
        return cls()

    def signature(self):
        """Every setting as this scheme uses it: what a checkpoint must match. Schemes that read config
        fields add them."""
        return asdict(self.settings)

    # -- the hooks ---------------------------------------------------------------
    def embed(self, x, offset):
        """Add position to the token embeddings ``x`` ``(B, T, d_model)`` at positions ``offset ..
        offset+T-1`` (or, with per-row positions, at the ``(B, T)`` array ``offset``); default: unchanged."""
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


def key_minus_query(q_pos, k_pos):
    """j - i for every (query, key): ``(T_q, T_k)`` from shared positions, ``(B, T_q, T_k)`` from per-row ones."""
    return k_pos[..., None, :] - q_pos[..., :, None]


def per_head(a):
    """A ``(T_q, T_k)`` or ``(B, T_q, T_k)`` array as ``(1 or B, 1, T_q, T_k)``: a head axis to broadcast over."""
    return a[None, None] if a.ndim == 2 else a[:, None]
