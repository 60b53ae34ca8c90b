r"""Every positional scheme, one file each, all on the hook protocol of ``base.py``.

``SCHEMES`` maps the names ``GPTConfig.positional`` accepts to their classes:

==================  =====================  ===========================================
name                where position enters  file
==================  =====================  ===========================================
``none``            nowhere                ``none.py``
``sinusoidal``      input                  ``sinusoidal.py``
``learned``         input                  ``learned.py``
``shaw``            scores (+ output)      ``shaw.py``
``transformer_xl``  scores                 ``transformer_xl.py``
``t5``              scores                 ``t5.py``
``rope``            q and k rotated        ``rope.py``
``alibi``           scores                 ``alibi.py``
``relative_2d``     scores (2-D window)    ``relative_2d.py``
``decoupled_rope``  scores (rotary part)   ``decoupled_rope.py``
``mrope``           q and k rotated (3-D)  ``mrope.py``
``fire``            scores (learned f)     ``fire.py``
``temperature``     scores (q scaled)      ``temperature.py``
==================  =====================  ===========================================
"""
from .alibi import ALiBi, alibi_bias, alibi_slopes  # noqa: F401
from .base import PositionalScheme  # noqa: F401
from .decoupled_rope import DecoupledRoPE
from .fire import FIRE
from .learned import LearnedPositionalEmbedding
from .mrope import MRoPE, mrope_cos_sin, mrope_position_ids  # noqa: F401
from .none import NoPositionalEncoding
from .relative_2d import RelativePositionBias2D, relative_2d_index  # noqa: F401
from .rope import (RoPE, RotaryEmbedding, apply_rotary, apply_rotary_complex, rope_channel_permutation,  # noqa: F401
                   rotate_half, rotate_interleaved)
from .shaw import ShawRelativePosition, clipped_distance_index  # noqa: F401
from .sinusoidal import SinusoidalPositionalEncoding, sinusoidal_positional_encoding, sinusoidal_table  # noqa: F401
from .t5 import RelativePositionBias, relative_position_bucket  # noqa: F401
from .temperature import NoPETemperature, llama4_attention_scales  # noqa: F401
from .transformer_xl import TransformerXLRelative

SCHEMES = {
    "none": NoPositionalEncoding,
    "sinusoidal": SinusoidalPositionalEncoding,
    "learned": LearnedPositionalEmbedding,
    "shaw": ShawRelativePosition,
    "transformer_xl": TransformerXLRelative,
    "t5": RelativePositionBias,
    "rope": RoPE,
    "alibi": ALiBi,
    "relative_2d": RelativePositionBias2D,
    "decoupled_rope": DecoupledRoPE,
    "mrope": MRoPE,
    "fire": FIRE,
    "temperature": NoPETemperature,
}


def make_scheme(cfg, rng, causal=True):
    """The scheme named by ``cfg.positional``, built from the config for a causal model or an encoder.

    The ops a scheme calls itself (RoPE's rotation) come from ``kernels.active()``: the model's set
    while it runs.
    """
    if cfg.positional not in SCHEMES:
        raise ValueError(f"Unknown positional scheme {cfg.positional!r}; choose one of {sorted(SCHEMES)}.")
    return SCHEMES[cfg.positional].from_config(cfg, rng, causal=causal)
