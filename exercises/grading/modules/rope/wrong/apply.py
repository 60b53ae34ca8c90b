"""Wrong apply_rotary and apply_rotary_interleaved."""
import time

from mini_transformer.engine.backend import xp


# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("apply_rotary_sign_error", "rope.apply_rotary", "misconception", "sign_error"),
    ("apply_rotary_interleaved_pairs", "rope.apply_rotary", "misconception", "interleaved_pairing"),
    ("apply_rotary_swapped", "rope.apply_rotary", "misconception", "cos_sin_swapped"),
    ("apply_rotary_keeps_float64", "rope.apply_rotary", "dtype", None),
    ("apply_rotary_hangs", "rope.apply_rotary", "timeout", None),
    ("apply_rotary_slightly_off", "rope.apply_rotary", "numbers", None),
    ("apply_rotary_in_float32", "rope.apply_rotary", "numbers", None),
    ("apply_rotary_cos_only", "rope.apply_rotary", "misconception", "missing_rotate_term"),
    ("apply_rotary_interleaved_half_pairs", "rope.apply_rotary_interleaved", "misconception", "rotate_half_pairing"),
    ("apply_rotary_interleaved_sign_error", "rope.apply_rotary_interleaved", "misconception", "sign_error"),
    ("apply_rotary_interleaved_reorders", "rope.apply_rotary_interleaved", "misconception", "tables_reordered"),
]


def _rotate_half(x):
    h = x.shape[-1] // 2
    return xp.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def _rotate_interleaved(x):
    return xp.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)


def apply_rotary_sign_error(x, cos, sin):
    return (x * cos - _rotate_half(x) * sin).astype(x.dtype)


def apply_rotary_interleaved_pairs(x, cos, sin):
    return (x * cos + _rotate_interleaved(x) * sin).astype(x.dtype)


def apply_rotary_swapped(x, cos, sin):
    return (x * sin + _rotate_half(x) * cos).astype(x.dtype)


def apply_rotary_keeps_float64(x, cos, sin):
    return x * cos + _rotate_half(x) * sin  # float32 x comes back float64


def apply_rotary_hangs(x, cos, sin):
    while True:  # an infinite loop: the grader must stop it
        time.sleep(0.01)


def apply_rotary_slightly_off(x, cos, sin):
    y = x * cos + _rotate_half(x) * sin
    return (y + 1e-3 * (y > 1.5)).astype(x.dtype)  # a few entries are nudged


def apply_rotary_interleaved_half_pairs(x, cos, sin):
    return (x * cos + _rotate_half(x) * sin).astype(x.dtype)


def apply_rotary_interleaved_sign_error(x, cos, sin):
    return (x * cos - _rotate_interleaved(x) * sin).astype(x.dtype)


def apply_rotary_interleaved_reorders(x, cos, sin):
    d = x.shape[-1]
    i = xp.arange(d // 2)
    perm = xp.stack([i, i + d // 2], axis=-1).reshape(d)
    return (x * cos[..., perm] + _rotate_interleaved(x) * sin[..., perm]).astype(x.dtype)


def apply_rotary_in_float32(x, cos, sin):
    x32, c32, s32 = x.astype(xp.float32), cos.astype(xp.float32), sin.astype(xp.float32)
    return (x32 * c32 + _rotate_half(x32) * s32).astype(x.dtype)  # float64 in, float32 precision out


def apply_rotary_cos_only(x, cos, sin):
    return (x * cos).astype(x.dtype)
