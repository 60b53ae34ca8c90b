"""Wrong softmax, softmax_backward and cross_entropy, as readers write them (chapter 0)."""
import math

from mini_transformer.engine.backend import xp

# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("softmax_unstable", "engine.softmax", "nan", None),
    ("softmax_columns", "engine.softmax", "misconception", "wrong_axis"),
    ("softmax_zero_fill", "engine.softmax", "misconception", "mask_zero_filled"),
    ("softmax_mask_after", "engine.softmax", "misconception", "masked_after_normalising"),
    ("softmax_always_float64", "engine.softmax", "dtype", None),
    ("backward_diagonal", "engine.softmax_backward", "misconception", "diagonal_only"),
    ("backward_without_y", "engine.softmax_backward", "misconception", "missing_output_factor"),
    ("backward_one_sum", "engine.softmax_backward", "misconception", "sum_over_everything"),
    ("backward_in_place", "engine.softmax_backward", "mutated", None),
    ("cross_entropy_bits", "engine.cross_entropy", "misconception", "bits"),
    ("cross_entropy_log_of_softmax", "engine.cross_entropy", "nan", None),
    ("cross_entropy_summed", "engine.cross_entropy", "misconception", "sum_not_mean"),
    ("cross_entropy_per_token", "engine.cross_entropy", "type", None),
    ("cross_entropy_raw_logit", "engine.cross_entropy", "misconception", "unnormalised"),
]


def softmax_unstable(x, mask=None):
    e = xp.exp(x)  # e^1000 is inf, and inf / inf is NaN
    if mask is not None:
        e = xp.where(mask, e, 0.0)
    return e / e.sum(axis=-1, keepdims=True)


def softmax_columns(x, mask=None):
    if mask is not None:
        x = xp.where(mask, x, -xp.inf)
    e = xp.exp(x - x.max(axis=0 if x.ndim == 1 else -2, keepdims=True))
    return e / e.sum(axis=0 if x.ndim == 1 else -2, keepdims=True)


def softmax_zero_fill(x, mask=None):
    if mask is not None:
        x = xp.where(mask, x, 0.0)
    e = xp.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_mask_after(x, mask=None):
    e = xp.exp(x - x.max(axis=-1, keepdims=True))
    y = e / e.sum(axis=-1, keepdims=True)
    return y if mask is None else y * mask


def softmax_always_float64(x, mask=None):
    x = xp.asarray(x, dtype=xp.float64)
    if mask is not None:
        x = xp.where(mask, x, -xp.inf)
    e = xp.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def backward_diagonal(y, gy):
    return gy * y * (1 - y)  # dy_j/dx_j only


def backward_without_y(y, gy):
    return gy - (gy * y).sum(axis=-1, keepdims=True)


def backward_one_sum(y, gy):
    return y * (gy - (gy * y).sum())


def backward_in_place(y, gy):
    gy -= (gy * y).sum(axis=-1, keepdims=True)  # saves a temporary, and overwrites the caller's gradient
    return y * gy


def _log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - xp.log(xp.exp(z).sum(axis=-1, keepdims=True))


def _target_entries(a, targets):
    return xp.take_along_axis(a, targets[..., None], axis=-1)[..., 0]


def cross_entropy_bits(logits, targets):
    return float(-_target_entries(_log_softmax(logits), targets).mean() / math.log(2))


def cross_entropy_log_of_softmax(logits, targets):
    e = xp.exp(logits - logits.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)  # e^-800 underflows to 0, and ln 0 = -inf
    return float(-xp.log(_target_entries(p, targets)).mean())


def cross_entropy_summed(logits, targets):
    return float(-_target_entries(_log_softmax(logits), targets).sum())


def cross_entropy_per_token(logits, targets):
    return -_target_entries(_log_softmax(logits), targets)


def cross_entropy_raw_logit(logits, targets):
    return float(-_target_entries(logits, targets).mean())
