"""Wrong rotate_half and rotate_interleaved."""
from mini_transformer.backend import xp


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
