"""Wrong decode loops (Exercise 6.10), each written the way a reader might."""
import math

from mini_transformer.engine.backend import xp

# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("position_reset_to_zero", "rope.decode", "misconception", "offset_reset"),
    ("one_position_behind", "rope.decode", "misconception", "offset_off_by_one"),
    ("offset_stuck_after_the_prompt", "rope.decode", "misconception", "offset_frozen_at_prefill"),
    ("forgets_the_cache", "rope.decode", "numbers", None),
]


def _loop(q, k, v, prefill, rotary, position_of, keep_cache=True):
    T = q.shape[-2]
    cache_k = cache_v = None
    outs = []
    steps = [(0, prefill)] + [(t, t + 1) for t in range(prefill, T)]
    for start, stop in steps:
        cos, sin = rotary(stop - start, offset=position_of(start))
        q_new = apply_rotary(q[..., start:stop, :], cos, sin)
        k_new = apply_rotary(k[..., start:stop, :], cos, sin)
        v_new = v[..., start:stop, :]
        if keep_cache and cache_k is not None:
            cache_k = xp.concatenate([cache_k, k_new], axis=-2)
            cache_v = xp.concatenate([cache_v, v_new], axis=-2)
        else:
            cache_k, cache_v = k_new, v_new
        k_pos = xp.arange(stop - cache_k.shape[-2], stop)
        outs.append(causal_attention(q_new, cache_k, cache_v, xp.arange(start, stop), k_pos))
    return xp.concatenate(outs, axis=-2)


def position_reset_to_zero(q, k, v, prefill, rotary):
    return _loop(q, k, v, prefill, rotary, lambda start: 0)


def one_position_behind(q, k, v, prefill, rotary):
    return _loop(q, k, v, prefill, rotary, lambda start: max(start - 1, 0))


def offset_stuck_after_the_prompt(q, k, v, prefill, rotary):
    return _loop(q, k, v, prefill, rotary, lambda start: 0 if start == 0 else prefill)


def forgets_the_cache(q, k, v, prefill, rotary):
    # each decoded token attends only to itself: the cache is overwritten instead of grown
    return _loop(q, k, v, prefill, rotary, lambda start: start, keep_cache=False)


def causal_attention(q, k, v, q_pos, k_pos):
    # as in the reader's exercises/rope.py, where this helper comes with the file
    scores = q @ xp.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    scores = xp.where(k_pos[None, :] <= q_pos[:, None], scores, -xp.inf)
    weights = xp.exp(scores - scores.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)) @ v
