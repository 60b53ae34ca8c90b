"""Wrong relative_score, wavelength_table and interleaved_to_half_permutation."""
import math

from mini_transformer.engine.backend import xp


# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("relative_score_swapped", "rope.relative_score", "misconception", "positions_swapped"),
    ("relative_score_query_only", "rope.relative_score", "misconception", "only_query_rotated"),
    ("relative_score_unrotated", "rope.relative_score", "misconception", "unrotated"),
    ("relative_score_array", "rope.relative_score", "type", None),
    ("wavelength_frequencies", "rope.wavelength_table", "misconception", "frequencies"),
    ("wavelength_missing_two_pi", "rope.wavelength_table", "misconception", "missing_two_pi"),
    ("wavelength_list", "rope.wavelength_table", "type", None),
    ("wavelength_per_channel", "rope.wavelength_table", "shape", "one_per_channel"),
    ("permutation_inverse", "rope.interleaved_to_half_permutation", "misconception", "inverse"),
    ("permutation_identity", "rope.interleaved_to_half_permutation", "misconception", "identity"),
    ("permutation_pair_order", "rope.interleaved_to_half_permutation", "misconception", "pair_order"),
    ("permutation_float", "rope.interleaved_to_half_permutation", "dtype", None),
]


def _rot(x, rotary, p):
    cos, sin = rotary(1, offset=p)
    h = x.shape[-1] // 2
    x = x[None, :]
    return (x * cos + xp.concatenate([-x[..., h:], x[..., :h]], axis=-1) * sin)[0]


def relative_score_swapped(q, k, m, n, rotary):
    return float(xp.sum(_rot(q, rotary, n) * _rot(k, rotary, m)))


def relative_score_query_only(q, k, m, n, rotary):
    return float(xp.sum(_rot(q, rotary, m) * k))


def relative_score_unrotated(q, k, m, n, rotary):
    return float(xp.dot(q, k))


def relative_score_array(q, k, m, n, rotary):
    return (_rot(q, rotary, m) * _rot(k, rotary, n)).sum(keepdims=True)  # a (1,) array, not a float


def wavelength_frequencies(d_head, base=10000.0):
    return base ** (-2 * xp.arange(d_head // 2, dtype=xp.float64) / d_head)


def wavelength_missing_two_pi(d_head, base=10000.0):
    return base ** (2 * xp.arange(d_head // 2, dtype=xp.float64) / d_head)


def wavelength_list(d_head, base=10000.0):
    return [2 * math.pi * base ** (2 * i / d_head) for i in range(d_head // 2)]


def wavelength_per_channel(d_head, base=10000.0):
    return 2 * math.pi * base ** (xp.arange(d_head, dtype=xp.float64) / d_head)


def permutation_inverse(d_head):
    i = xp.arange(d_head // 2)
    return xp.stack([i, i + d_head // 2], axis=-1).reshape(d_head)  # 0, d/2, 1, d/2+1: half -> interleaved


def permutation_identity(d_head):
    return xp.arange(d_head)


def permutation_float(d_head):
    return xp.concatenate([xp.arange(0, d_head, 2, dtype=xp.float64), xp.arange(1, d_head, 2, dtype=xp.float64)])


def permutation_pair_order(d_head):
    return xp.concatenate([xp.arange(1, d_head, 2), xp.arange(0, d_head, 2)])
