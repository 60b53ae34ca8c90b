"""Wrong rotate_half and rotate_interleaved."""
from mini_transformer.engine.backend import xp


# (name in this file, target, expected kind, expected misconception[, file holding it]): tests/grading/test_grader.py
# reads this table. A file that must not parse is kept as .txt, so that no tool tries to compile it.
KNOWN_WRONG = [
    ("rotate_half_sign_error", "rope.rotate_half", "misconception", "sign_error"),
    ("rotate_half_interleaved", "rope.rotate_half", "misconception", "interleaved_pairing"),
    ("rotate_half_missing_minus", "rope.rotate_half", "misconception", "missing_minus"),
    ("rotate_half_raises", "rope.rotate_half", "raised", None),
    ("rotate_half_in_place", "rope.rotate_half", "mutated", None),
    ("rotate_half_extra_argument", "rope.rotate_half", "signature", None),
    ("rotate_half", "rope.rotate_half", "import", None, "broken_syntax.py.txt"),
    ("rotate_interleaved_sign_error", "rope.rotate_interleaved", "misconception", "sign_error"),
    ("rotate_interleaved_as_half", "rope.rotate_interleaved", "misconception", "rotate_half_pairing"),
    ("rotate_interleaved_missing_minus", "rope.rotate_interleaved", "misconception", "missing_minus"),
    ("rotate_interleaved_in_place", "rope.rotate_interleaved", "mutated", None),
]


def rotate_half_sign_error(x):
    h = x.shape[-1] // 2
    return xp.concatenate([x[..., h:], -x[..., :h]], axis=-1)


def rotate_half_interleaved(x):
    return xp.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)


def rotate_half_missing_minus(x):
    h = x.shape[-1] // 2
    return xp.concatenate([x[..., h:], x[..., :h]], axis=-1)


def rotate_half_raises(x):
    h = x.shape[-1] / 2  # a float index: slicing raises TypeError
    return xp.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def rotate_half_in_place(x):
    h = x.shape[-1] // 2
    first = x[..., :h].copy()
    x[..., :h] = -x[..., h:]
    x[..., h:] = first
    return x


def rotate_half_extra_argument(x, axis=-1):
    h = x.shape[axis] // 2
    return xp.concatenate([-x[..., h:], x[..., :h]], axis=axis)


def rotate_interleaved_sign_error(x):
    return xp.stack([x[..., 1::2], -x[..., 0::2]], axis=-1).reshape(x.shape)


def rotate_interleaved_as_half(x):
    h = x.shape[-1] // 2
    return xp.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def rotate_interleaved_missing_minus(x):
    return xp.stack([x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)


def rotate_interleaved_in_place(x):
    even = x[..., 0::2].copy()
    x[..., 0::2] = -x[..., 1::2]
    x[..., 1::2] = even
    return x
