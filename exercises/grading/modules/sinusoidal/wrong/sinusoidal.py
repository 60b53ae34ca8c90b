"""Wrong sinusoidal_positional_encoding, as readers write them."""
from mini_transformer.engine.backend import xp

# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("sinusoidal_swapped", "sinusoidal.sinusoidal_positional_encoding", "misconception", "sin_cos_swapped"),
    ("sinusoidal_halves", "sinusoidal.sinusoidal_positional_encoding", "misconception", "halves_layout"),
    ("sinusoidal_exponent", "sinusoidal.sinusoidal_positional_encoding", "misconception", "frequency_exponent"),
    ("sinusoidal_half_width", "sinusoidal.sinusoidal_positional_encoding", "shape", None),
    ("sinusoidal_fixed_base", "sinusoidal.sinusoidal_positional_encoding", "misconception", "base_ignored"),
]


def _angles(T, d_model, base):
    pos = xp.arange(T, dtype=xp.float64)[:, None]
    return pos * base ** (-2 * xp.arange(d_model // 2, dtype=xp.float64) / d_model)[None, :]


def sinusoidal_swapped(T, d_model, base=10000.0):
    a = _angles(T, d_model, base)
    return xp.stack([xp.cos(a), xp.sin(a)], axis=-1).reshape(T, d_model)


def sinusoidal_halves(T, d_model, base=10000.0):
    a = _angles(T, d_model, base)
    return xp.concatenate([xp.sin(a), xp.cos(a)], axis=-1)


def sinusoidal_exponent(T, d_model, base=10000.0):
    j = xp.arange(0, d_model, 2, dtype=xp.float64)  # the even columns 2i ...
    a = xp.arange(T, dtype=xp.float64)[:, None] * base ** (-2 * j / d_model)[None, :]  # ... doubled again
    return xp.stack([xp.sin(a), xp.cos(a)], axis=-1).reshape(T, d_model)


def sinusoidal_half_width(T, d_model, base=10000.0):
    return xp.sin(_angles(T, d_model, base))  # (T, d_model/2): forgot the cosines


def sinusoidal_fixed_base(T, d_model, base=10000.0):
    a = _angles(T, d_model, 10000.0)  # the paper's constant, whatever base says
    return xp.stack([xp.sin(a), xp.cos(a)], axis=-1).reshape(T, d_model)
