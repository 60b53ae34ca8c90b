r"""RoPE (Su et al., 2021): rotate queries and keys by angles proportional to their positions.

Split the head's channels into pairs and turn pair i at position m by the angle
m\theta_i, \theta_i = \mathrm{base}^{-2i/d}:

.. math:: \mathrm{RoPE}(x, m) = x \odot \cos(m\theta) + \mathrm{rot}(x) \odot \sin(m\theta).

Because R_m^\top R_n = R_{n-m}, the score \langle R_m q, R_n k \rangle = q^\top R_{n-m} k
depends on the positions only through n - m.

**Two pairing conventions.** The paper pairs neighbours (2i, 2i+1)
("interleaved"); GPT-NeoX and LLaMA pair the two halves (i, i + d/2) and turn
them with ``rotate_half``. They are the same rotation seen through a fixed
channel permutation P (``rope_channel_permutation``): for every x and m,
``RoPE_half(x[P], m) == RoPE_interleaved(x, m)[P]``, so a checkpoint trained in
one convention runs in the other once the query and key weights of every head
have their output channels permuted by P.

**Partial rotary.** With ``partial_rotary_factor`` f only the first
r = int(f d_head) channels of each head turn (r must be even); the rest carry
content with no position at all. \theta_i then uses d = r.

**Context extension.** The frequencies come from
``rope_scaling.rope_inv_freq``, so a Hugging Face style ``rope_scaling`` dict
works (linear, ntk, yarn, llama3, longrope, ...). Its attention factor
multiplies cos and sin, as the reference does, which scales the logits by its
square.

``GPTConfig.extra`` keys read by the ``"rope"`` scheme:

* ``rope_interleaved`` (bool, default False): pair (2i, 2i+1) instead of (i, i + d/2).
* ``partial_rotary_factor`` (float in (0, 1], default 1.0): the fraction of each head that turns.
"""
import contextlib
from dataclasses import asdict, dataclass

from ..engine.autograd import Tensor, raw, op
from ..engine import kernels
from ..engine.backend import xp
from ..engine.validate import check_int, check_rotary_width
from .base import PositionalScheme, setting
from .rope_scaling import check_rope_theta, rope_inv_freq

#: rope types whose frequencies depend on the current sequence length, so they are recomputed per call
_LENGTH_DEPENDENT = ("dynamic", "longrope")


# ---------------------------------------------------------------------------
# The rotation the model runs: frequencies, tables, the quarter turn, the op and its backward
# ---------------------------------------------------------------------------

class RotaryEmbedding:
    r"""``RotaryEmbedding(d_head, base)(T, offset)`` gives ``(cos, sin)``, each ``(T, rotary_dim)``.

    rotary_dim r = int(d_head \cdot partial_rotary_factor), d_head unless you ask
    for partial rotary. The angle m\theta_i of pair i goes into channels i and
    i + r/2 (rotate-half) or 2i and 2i+1 (interleaved). A ``rope_scaling`` dict
    (as in a config.json), or the chapter's ``scaling="linear"`` / ``"ntk"`` with
    ``factor=s``, changes the frequencies (``rope_scaling.rope_inv_freq``) and
    multiplies cos and sin by the method's attention factor; ``dynamic`` and
    ``longrope`` pick theirs from the current length, the largest position asked
    for plus one.
    """

    def __init__(self, d_head, base=10000.0, scaling=None, factor=1.0, rope_scaling=None,
                 partial_rotary_factor=1.0, interleaved=False, max_position_embeddings=None):
        self.d_head, self.base, self.rotary_dim = d_head, base, _rotary_dim(d_head, partial_rotary_factor)
        self.partial_rotary_factor, self.interleaved = partial_rotary_factor, interleaved
        self.rope_scaling = _scaling_dict(scaling, factor, rope_scaling)
        self.max_position_embeddings = max_position_embeddings
        rope_type = (self.rope_scaling or {}).get("rope_type", (self.rope_scaling or {}).get("type", "default"))
        if rope_type == "proportional":   # p-RoPE turns the whole head, the pairs past the factor at frequency 0
            self.rotary_dim = d_head
        self.length_dependent = rope_type in _LENGTH_DEPENDENT
        self.fixed_length = None  # when set, length-dependent methods use it instead of the positions asked for
        if not self.length_dependent:
            self.inv_freq, self.attention_factor = self.frequencies()     # (r/2,) theta_i, and the factor

    def frequencies(self, seq_len=None):
        r"""(\theta_0 .. \theta_{r/2-1}, attention factor): the paper's \theta_i = base^{-2i/r}, or a scaled set."""
        if self.rope_scaling is None:
            check_rope_theta(self.base)
            r = self.rotary_dim
            return self.base ** (-xp.arange(0, r, 2, dtype="float64") / r), 1.0
        return rope_inv_freq(self.d_head, self.base, self.rope_scaling, seq_len=seq_len,
                             partial_rotary_factor=self.partial_rotary_factor,
                             max_position_embeddings=self.max_position_embeddings)

    def at(self, pos):
        """(cos, sin) for an integer array of positions, each ``(len(pos), rotary_dim)``, float64
        (``(B, T, rotary_dim)`` for per-row positions ``(B, T)``)."""
        if self.length_dependent:
            inv_freq, attention_factor = self.frequencies(self.fixed_length or (int(pos.max()) + 1 if pos.size else 1))
        else:
            inv_freq, attention_factor = self.inv_freq, self.attention_factor
        angles = pos.astype("float64")[..., None] * inv_freq                   # ([B,] T, r/2) m theta_i
        if self.interleaved:
            angles = xp.repeat(angles, 2, axis=-1)                             # (T, r) channels 2i, 2i+1
        else:
            angles = xp.concatenate([angles, angles], axis=-1)                 # (T, r) channels i, i + r/2
        return xp.cos(angles) * attention_factor, xp.sin(angles) * attention_factor

    def __call__(self, T, offset=0):
        return self.at(xp.arange(offset, offset + T))


def rotate_half(x):
    r"""[x_1, x_2] \mapsto [-x_2, x_1] on the last axis: the quarter turn of every pair (i, i + d/2)."""
    h = x.shape[-1] // 2
    return xp.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def rotate_interleaved(x):
    r"""(x_0, x_1, x_2, x_3, \dots) \mapsto (-x_1, x_0, -x_3, x_2, \dots): the quarter turn of every pair (2i, 2i+1)."""
    pairs = x.reshape(x.shape[:-1] + (x.shape[-1] // 2, 2))                   # (..., d/2, 2)
    return xp.stack([-pairs[..., 1], pairs[..., 0]], axis=-1).reshape(x.shape)


def apply_rotary(x, cos, sin, interleaved=False):
    r"""RoPE as one op: y = x \odot \cos + \mathrm{rot}(x) \odot \sin on the first r channels (r = the tables' width).

    ``rot`` is ``rotate_half`` (pairs i, i + d/2) or, with ``interleaved=True``,
    ``rotate_interleaved`` (the paper's pairs 2i, 2i+1). ``x`` is ``(..., T, d)``,
    a Tensor (the model) or a plain array (the chapters); ``cos`` and ``sin``
    broadcast against ``(..., T, r)``, and channels r..d-1 pass through
    (partial rotary). Backward: a rotation's transpose is the rotation by the
    opposite angle, so gx = gy \odot \cos - \mathrm{rot}(gy) \odot \sin, the same
    turn with -\sin (an attention factor \alpha in both tables scales both ways alike).
    """
    cos, sin = raw(cos), raw(sin)
    r = check_rotary_width(raw(x), cos)
    rot = rotate_interleaved if interleaved else rotate_half

    def turn(a, sin):
        y = a[..., :r] * cos + rot(a[..., :r]) * sin
        if y.dtype != a.dtype:
            y = y.astype(a.dtype)                                              # float64 tables leave a float32 x float32
        return y if r == a.shape[-1] else xp.concatenate([y, a[..., r:]], axis=-1)

    if not isinstance(x, Tensor):
        return turn(x, sin)

    def backward(gy):
        return (turn(gy, -sin),)
    return op(turn(x.data, sin), (x,), backward)


# ---------------------------------------------------------------------------
# The scheme
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class RoPESettings:
    """The ``GPTConfig.extra`` keys of the ``"rope"`` scheme."""
    rope_interleaved: bool = setting(False, "pair channels (2i, 2i+1) instead of (i, i + d/2)")
    partial_rotary_factor: float = setting(1.0, "the fraction of each head that turns, in (0, 1]")


class RoPE(PositionalScheme):
    """Rotates q and k in every layer (keys once, before the cache); adds nothing to the input or the scores."""

    Settings = RoPESettings
    config_fields = ("rope_base", "rope_scaling", "max_len")
    per_row_positions = True

    def __init__(self, d_head, base=10000.0, rope_scaling=None, partial_rotary_factor=1.0, interleaved=False,
                 max_position_embeddings=None):
        self.rotary = RotaryEmbedding(d_head, base, rope_scaling=rope_scaling,
                                      partial_rotary_factor=partial_rotary_factor, interleaved=interleaved,
                                      max_position_embeddings=max_position_embeddings)
        self.settings = RoPESettings(rope_interleaved=interleaved, partial_rotary_factor=partial_rotary_factor)
        # dynamic NTK / LongRoPE change every angle as the sequence grows, so cached keys must be re-turned
        self.rerotate_keys = self.rotary.length_dependent

    @classmethod
    def from_config(cls, cfg, rng=None, causal=True):
        s = cls.read_settings(cfg)
        return cls(cfg.d_head, cfg.rope_base, rope_scaling=cfg.rope_scaling,
                   partial_rotary_factor=s.partial_rotary_factor, interleaved=s.rope_interleaved,
                   max_position_embeddings=cfg.max_len)

    def signature(self):
        """The settings, and what they mean: change any of these and the weights mean something else."""
        r = self.rotary
        scaling = r.rope_scaling or {}
        original = scaling.get("original_max_position_embeddings", r.max_position_embeddings)
        factor = scaling.get("factor", 1.0)
        return {**asdict(self.settings), "rope_base": r.base, "rope_scaling": r.rope_scaling,
                "max_len": r.max_position_embeddings, "rope_theta": r.base, "rotary_dim": r.rotary_dim,
                "pairing": "interleaved (2i, 2i+1)" if r.interleaved else "rotate-half (i, i + d/2)",
                "rope_type": scaling.get("rope_type", scaling.get("type", "default")),
                "original_max_position_embeddings": original,
                "target_max_position_embeddings": None if original is None else int(original * factor)}

    @contextlib.contextmanager
    def planned_length(self, n):
        r"""Fix the length that dynamic NTK and LongRoPE read to ``n`` for this block.

        Without it, a cached generation turns each new key with the scale of the
        length so far, and keys written earlier keep older scales: the cache goes
        stale. With the length fixed at the final one, every step uses the scale
        that a full forward pass over all ``n`` tokens uses.
        """
        previous, self.rotary.fixed_length = self.rotary.fixed_length, n
        try:
            yield
        finally:
            self.rotary.fixed_length = previous

    def rotate(self, x, pos, layer):
        cos, sin = self.rotary.at(pos)                                         # (T, rotary_dim) each, float64
        if pos.ndim == 2:                                                      # per-row positions: (B, 1, T, r)
            cos, sin = cos[:, None], sin[:, None]
        rotary = kernels.active().apply_rotary or apply_rotary                 # the fast kernel, or the op above
        return rotary(x, cos.astype(x.dtype), sin.astype(x.dtype), interleaved=self.rotary.interleaved)


# ---------------------------------------------------------------------------
# Checks, and the two conventions side by side
# ---------------------------------------------------------------------------

def _rotary_dim(d_head, partial_rotary_factor):
    """The rotary width int(d_head * partial_rotary_factor), after checking it is an even count of at least 2."""
    check_int("RotaryEmbedding: d_head", d_head, minimum=2, even=True, why="RoPE turns pairs of channels")
    if not 0 < partial_rotary_factor <= 1:
        raise ValueError(f"RotaryEmbedding: partial_rotary_factor={partial_rotary_factor!r} must lie in (0, 1].")
    rotary_dim = int(d_head * partial_rotary_factor)
    if rotary_dim < 2 or rotary_dim % 2:
        raise ValueError(f"RotaryEmbedding: partial_rotary_factor={partial_rotary_factor} of d_head={d_head} "
                         f"leaves rotary_dim={rotary_dim} channels, which must be even and at least 2 "
                         f"(RoPE turns pairs); choose a factor that gives an even count.")
    return rotary_dim


def _scaling_dict(scaling, factor, rope_scaling):
    """The ``rope_scaling`` dict: as given, or built from the chapter's ``scaling="linear"``/``"ntk"`` and ``factor``."""
    if scaling in ("none", None):
        return rope_scaling
    if scaling in ("linear", "ntk"):
        if rope_scaling is not None:
            raise ValueError(f"RotaryEmbedding got scaling={scaling!r} and rope_scaling={rope_scaling!r}; "
                             f"give one of the two.")
        return {"rope_type": scaling, "factor": factor}   # linear and NTK live once, in rope_scaling.py
    raise ValueError(f"RotaryEmbedding: scaling={scaling!r} must be None, 'linear' or 'ntk'; for other "
                     f"methods pass a rope_scaling dict.")


def rope_channel_permutation(d_head, rotary_dim=None):
    r"""The channel order P that turns the interleaved convention into the rotate-half one.

    P = (0, 2, 4, \dots, r-2, 1, 3, \dots, r-1) followed by the channels r..d_head-1
    unchanged, so channel 2i moves to i and 2i+1 to i + r/2:
    ``RoPE_half(x[..., P]) == RoPE_interleaved(x)[..., P]``. Its inverse
    (``argsort``) goes back. For a weight W_q ``(d_model, H d_head)`` apply P
    to each head's block of output columns.
    """
    r = d_head if rotary_dim is None else rotary_dim
    if r % 2 or not 0 < r <= d_head:
        raise ValueError(f"rope_channel_permutation: rotary_dim={r} must be even and in (0, d_head={d_head}].")
    return xp.concatenate([xp.arange(0, r, 2), xp.arange(1, r, 2), xp.arange(r, d_head)])


def apply_rotary_complex(x, pos, inv_freq):
    r"""The reference form, for tests: read pair (x_{2i}, x_{2i+1}) as z_i = x_{2i} + \mathrm{i} x_{2i+1}
    and multiply by e^{\mathrm{i} m \theta_i}.

    ``x`` is an array ``(..., T, d)`` in the interleaved convention, ``pos`` the
    T integer positions, ``inv_freq`` the d/2 frequencies \theta_i. Plain
    arrays only; it exists to check the real-arithmetic rotation.
    """
    z = x[..., 0::2] + 1j * x[..., 1::2]                                        # (..., T, d/2)
    z = z * xp.exp(1j * pos.astype("float64")[:, None] * inv_freq[None, :])     # turn pair i by m theta_i
    return xp.stack([z.real, z.imag], axis=-1).reshape(x.shape)
