"""Wrong permutation_gap, self_attention and uniform_causal_attention, as readers write them (chapter 1)."""
import math

from mini_transformer.engine.backend import xp

# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("gap_undoes_the_shuffle", "order.permutation_gap", "misconception", "inverse_permutation"),
    ("gap_asks_for_invariance", "order.permutation_gap", "misconception", "invariance"),
    ("gap_mean", "order.permutation_gap", "misconception", "mean_not_max"),
    ("gap_signed", "order.permutation_gap", "misconception", "no_abs"),
    ("gap_shuffles_the_batch", "order.permutation_gap", "raised", None),
    ("attention_always_masked", "order.self_attention", "misconception", "always_causal"),
    ("attention_unscaled", "order.self_attention", "misconception", "no_scaling"),
    ("attention_upper_mask", "order.self_attention", "misconception", "mask_flipped"),
    ("attention_column_softmax", "order.self_attention", "misconception", "softmax_over_queries"),
    ("attention_masked_with_zero", "order.self_attention", "numbers", None),
    ("uniform_over_T", "order.uniform_causal_attention", "misconception", "divides_by_T"),
    ("uniform_all_tokens", "order.uniform_causal_attention", "misconception", "sees_everything"),
    ("uniform_running_sum", "order.uniform_causal_attention", "misconception", "no_division"),
    ("uniform_integer_counts", "order.uniform_causal_attention", "dtype", None),
]


def gap_undoes_the_shuffle(y, y_perm, perm):
    return float(xp.abs(y_perm - y[:, xp.argsort(perm)]).max())


def gap_asks_for_invariance(y, y_perm, perm):
    return float(xp.abs(y_perm - y).max())


def gap_mean(y, y_perm, perm):
    return float(xp.abs(y_perm - y[:, perm]).mean())


def gap_signed(y, y_perm, perm):
    return float((y_perm - y[:, perm]).max())


def gap_shuffles_the_batch(y, y_perm, perm):
    return float(xp.abs(y_perm - y[perm]).max())  # axis 0 is the batch


def _weights(scores):
    w = xp.exp(scores - scores.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True)


def _scores(x, W_q, W_k):
    return (x @ W_q) @ xp.swapaxes(x @ W_k, -1, -2) / math.sqrt(W_k.shape[-1])


def _lower(T):
    return xp.tril(xp.ones((T, T), dtype=bool))


def attention_always_masked(x, W_q, W_k, W_v, causal=False):
    s = xp.where(_lower(x.shape[1]), _scores(x, W_q, W_k), -xp.inf)  # forgot the `if causal`
    return _weights(s) @ (x @ W_v)


def attention_unscaled(x, W_q, W_k, W_v, causal=False):
    s = (x @ W_q) @ xp.swapaxes(x @ W_k, -1, -2)
    if causal:
        s = xp.where(_lower(x.shape[1]), s, -xp.inf)
    return _weights(s) @ (x @ W_v)


def attention_upper_mask(x, W_q, W_k, W_v, causal=False):
    s = _scores(x, W_q, W_k)
    if causal:
        s = xp.where(xp.triu(xp.ones(s.shape[-2:], dtype=bool)), s, -xp.inf)
    return _weights(s) @ (x @ W_v)


def attention_column_softmax(x, W_q, W_k, W_v, causal=False):
    s = _scores(x, W_q, W_k)
    if causal:
        s = xp.where(_lower(x.shape[1]), s, -xp.inf)
    w = xp.exp(s - s.max(axis=1, keepdims=True))
    return (w / w.sum(axis=1, keepdims=True)) @ (x @ W_v)


def attention_masked_with_zero(x, W_q, W_k, W_v, causal=False):
    s = _scores(x, W_q, W_k)
    if causal:
        s = s * _lower(x.shape[1])  # a zero score is not a zero weight
    return _weights(s) @ (x @ W_v)


def uniform_over_T(v):
    return xp.cumsum(v, axis=-2) / v.shape[-2]


def uniform_all_tokens(v):
    return xp.ones_like(v) * v.mean(axis=-2, keepdims=True)


def uniform_running_sum(v):
    return xp.cumsum(v, axis=-2)


def uniform_integer_counts(v):
    return xp.cumsum(v, axis=-2) / xp.arange(1, v.shape[-2] + 1)[:, None]  # int64 counts make float32 float64
