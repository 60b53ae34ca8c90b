"""Wrong shift_rotation (Exercise 2.2), as readers write them."""
from mini_transformer.engine.backend import xp

# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("shift_textbook_rotation", "sinusoidal.shift_rotation", "misconception", "rotates_backwards"),
    ("shift_rotate_half_blocks", "sinusoidal.shift_rotation", "misconception", "halves_pairing"),
    ("shift_one_step", "sinusoidal.shift_rotation", "misconception", "angle_not_scaled_by_k"),
    ("shift_pair_exponent", "sinusoidal.shift_rotation", "misconception", "frequency_exponent"),
    ("shift_blocks_only", "sinusoidal.shift_rotation", "shape", None),
]


def _omega(d_model, base):
    return base ** (-xp.arange(0, d_model, 2, dtype=xp.float64) / d_model)


def shift_textbook_rotation(k, d_model, base=10000.0):
    M = xp.zeros((d_model, d_model))
    for i, w in enumerate(_omega(d_model, base)):
        c, s = float(xp.cos(k * w)), float(xp.sin(k * w))
        M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = xp.asarray([[c, -s], [s, c]])  # R(phi) from chapter 6
    return M


def shift_rotate_half_blocks(k, d_model, base=10000.0):
    M = xp.zeros((d_model, d_model))
    h = d_model // 2
    for i, w in enumerate(_omega(d_model, base)):
        c, s = float(xp.cos(k * w)), float(xp.sin(k * w))
        M[i, i], M[i, i + h], M[i + h, i], M[i + h, i + h] = c, s, -s, c  # pairs (i, i + d/2)
    return M


def shift_one_step(k, d_model, base=10000.0):
    M = xp.zeros((d_model, d_model))
    for i, w in enumerate(_omega(d_model, base)):
        c, s = float(xp.cos(w)), float(xp.sin(w))  # forgot the k
        M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = xp.asarray([[c, s], [-s, c]])
    return M


def shift_pair_exponent(k, d_model, base=10000.0):
    M = xp.zeros((d_model, d_model))
    for i in range(d_model // 2):
        w = base ** (-i / d_model)  # i instead of 2i
        c, s = xp.cos(k * w), xp.sin(k * w)
        M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = xp.asarray([[c, s], [-s, c]])
    return M


def shift_blocks_only(k, d_model, base=10000.0):
    a = k * _omega(d_model, base)  # (d_model/2,)
    c, s = xp.cos(a), xp.sin(a)
    return xp.stack([xp.stack([c, s], -1), xp.stack([-s, c], -1)], -2)  # (d_model/2, 2, 2): the blocks, unplaced
