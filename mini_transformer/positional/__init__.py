r"""Every positional scheme, one file each, all on the three-hook protocol of ``base.py``.

``SCHEMES`` maps the names ``GPTConfig.positional`` accepts to their classes.
"""
from .base import PositionalScheme  # noqa: F401
from .learned import LearnedPositionalEmbedding
from .none import NoPositionalEncoding
from .rope import RoPE, RotaryEmbedding, apply_rotary, rotate_half  # noqa: F401
from .sinusoidal import SinusoidalPositionalEncoding, sinusoidal_positional_encoding  # noqa: F401

SCHEMES = {
    "none": NoPositionalEncoding,
    "sinusoidal": SinusoidalPositionalEncoding,
    "learned": LearnedPositionalEmbedding,
    "rope": RoPE,
}


def make_scheme(cfg, rng):
    """The scheme named by ``cfg.positional``, built from the config."""
    if cfg.positional not in SCHEMES:
        raise ValueError(f"Unknown positional scheme {cfg.positional!r}; choose one of {sorted(SCHEMES)}.")
    return SCHEMES[cfg.positional].from_config(cfg, rng)
