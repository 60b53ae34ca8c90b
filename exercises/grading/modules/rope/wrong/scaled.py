"""Wrong scaled_inv_freq functions (Exercise 6.7), each written the way a reader might."""
from mini_transformer.engine.backend import xp

# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("ntk_divides_the_frequencies", "rope.scaled_inv_freq", "misconception", "ntk_as_linear"),
    ("linear_raises_the_base", "rope.scaled_inv_freq", "misconception", "linear_as_ntk"),
    ("ntk_base_times_factor", "rope.scaled_inv_freq", "misconception", "ntk_exponent_missing"),
    ("linear_stretches_positions_the_wrong_way", "rope.scaled_inv_freq", "misconception", "linear_multiplies"),
    ("one_frequency_per_channel", "rope.scaled_inv_freq", "shape", None),
]


def _plain(d_head, base):
    return base ** (-xp.arange(0, d_head, 2, dtype=xp.float64) / d_head)


def ntk_divides_the_frequencies(d_head, base=10000.0, scaling=None, factor=1.0):
    if scaling in ("linear", "ntk"):      # "both just stretch by the factor"
        return _plain(d_head, base) / factor
    return _plain(d_head, base)


def linear_raises_the_base(d_head, base=10000.0, scaling=None, factor=1.0):
    if scaling in ("linear", "ntk"):
        return _plain(d_head, base * factor ** (d_head / (d_head - 2)))
    return _plain(d_head, base)


def ntk_base_times_factor(d_head, base=10000.0, scaling=None, factor=1.0):
    if scaling == "ntk":
        return _plain(d_head, base * factor)   # the exponent d / (d - 2) forgotten
    if scaling == "linear":
        return _plain(d_head, base) / factor
    return _plain(d_head, base)


def linear_stretches_positions_the_wrong_way(d_head, base=10000.0, scaling=None, factor=1.0):
    if scaling == "linear":
        return _plain(d_head, base) * factor   # positions m * s instead of m / s
    if scaling == "ntk":
        return _plain(d_head, base * factor ** (d_head / (d_head - 2)))
    return _plain(d_head, base)


def one_frequency_per_channel(d_head, base=10000.0, scaling=None, factor=1.0):
    theta = base ** (-xp.arange(d_head, dtype=xp.float64) / d_head)   # d_head values, not d_head / 2
    return theta / factor if scaling == "linear" else theta
