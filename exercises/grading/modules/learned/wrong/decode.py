"""Wrong cached_decode (Exercise 3.2), as readers write them: the offset arithmetic of a decoding loop."""
import math

from mini_transformer.engine.backend import xp

# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("decode_at_zero", "learned.cached_decode", "misconception", "offset_reset"),
    ("decode_one_ahead", "learned.cached_decode", "misconception", "off_by_one"),
    ("decode_last_cached_position", "learned.cached_decode", "misconception", "off_by_one"),
    ("decode_counting_calls", "learned.cached_decode", "misconception", "counted_in_calls"),
    ("decode_counting_rows", "learned.cached_decode", "misconception", "counted_in_rows"),
    ("decode_without_cache", "learned.cached_decode", "misconception", "cache_dropped"),
]


# The given code of exercises/learned.py, as a reader's file holds it (a graded file may not import solutions/).
def table_lm_step(params, ids, cache=None, offset=0):
    T_new, table = ids.shape[1], params["table"]
    if not 0 <= offset <= offset + T_new <= table.shape[0]:
        raise ValueError("past the table")
    x = params["tok"][ids] + table[offset:offset + T_new]
    q, k, v = x @ params["W_q"], x @ params["W_k"], x @ params["W_v"]
    if cache is not None:
        k = xp.concatenate([cache["k"], k], axis=1)
        v = xp.concatenate([cache["v"], v], axis=1)
    T_k = k.shape[1]
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
    visible = xp.arange(T_k)[None, :] <= xp.arange(T_k - T_new, T_k)[:, None]
    scores = xp.where(visible, scores, -xp.inf)
    probs = xp.exp(scores - scores.max(axis=-1, keepdims=True))
    probs = probs / probs.sum(axis=-1, keepdims=True)
    h = x + (probs @ v) @ params["W_o"]
    return h @ params["head"], {"k": k, "v": v}


def decode_at_zero(params, ids, prefill, step=None):
    step = step or table_lm_step
    logits, cache = step(params, ids[:, :prefill], None, 0)
    outs = [logits]
    for t in range(prefill, ids.shape[1]):
        logits, cache = step(params, ids[:, t:t + 1], cache, 0)  # one new token: offset 0
        outs.append(logits)
    return xp.concatenate(outs, axis=1)


def decode_one_ahead(params, ids, prefill, step=None):
    step = step or table_lm_step
    logits, cache = step(params, ids[:, :prefill], None, 0)
    outs = [logits]
    for t in range(prefill, ids.shape[1]):
        logits, cache = step(params, ids[:, t:t + 1], cache, t + 1)  # "the (t+1)-th token"
        outs.append(logits)
    return xp.concatenate(outs, axis=1)


def decode_last_cached_position(params, ids, prefill, step=None):
    step = step or table_lm_step
    logits, cache = step(params, ids[:, :prefill], None, 0)
    outs = [logits]
    for _ in range(prefill, ids.shape[1]):
        t = cache["k"].shape[1]
        logits, cache = step(params, ids[:, t:t + 1], cache, t - 1)  # the last position in the cache
        outs.append(logits)
    return xp.concatenate(outs, axis=1)


def decode_counting_calls(params, ids, prefill, step=None):
    step = step or table_lm_step
    logits, cache = step(params, ids[:, :prefill], None, 0)
    outs, calls = [logits], 1
    for t in range(prefill, ids.shape[1]):
        logits, cache = step(params, ids[:, t:t + 1], cache, calls)
        outs.append(logits)
        calls += 1
    return xp.concatenate(outs, axis=1)


def decode_counting_rows(params, ids, prefill, step=None):
    step = step or table_lm_step
    logits, cache = step(params, ids[:, :prefill], None, 0)
    outs = [logits]
    for t in range(prefill, ids.shape[1]):
        offset = cache["k"].reshape(-1, cache["k"].shape[-1]).shape[0]  # rows in the cache, all sequences
        logits, cache = step(params, ids[:, t:t + 1], cache, offset)
        outs.append(logits)
    return xp.concatenate(outs, axis=1)


def decode_without_cache(params, ids, prefill, step=None):
    step = step or table_lm_step
    logits, cache = step(params, ids[:, :prefill], None, 0)
    outs = [logits]
    for t in range(prefill, ids.shape[1]):
        logits, _ = step(params, ids[:, t:t + 1], None, t)  # the cache is never passed back
        outs.append(logits)
    return xp.concatenate(outs, axis=1)
