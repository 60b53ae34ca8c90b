"""Wrong position ids and eviction policies (chapter 10), as readers write them: one mistake each."""
from mini_transformer.engine.backend import xp

# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("padded_column_index", "caches.left_padded_position_ids", "misconception", "counted_from_padding"),
    ("padded_from_one", "caches.left_padded_position_ids", "misconception", "counted_from_one"),
    ("padded_minus_one", "caches.left_padded_position_ids", "misconception", "padding_not_zeroed"),
    ("padded_subtract_pad_count", "caches.left_padded_position_ids", "misconception", "assumes_left_padding"),
    ("padded_float", "caches.left_padded_position_ids", "dtype", None),
    ("packed_arange", "caches.packed_position_ids", "misconception", "not_reset"),
    ("packed_from_boundary", "caches.packed_position_ids", "misconception", "reset_from_one"),
    ("packed_flat", "caches.packed_position_ids", "misconception", "flattened_rows"),
    ("packed_first_seen", "caches.packed_position_ids", "misconception", "by_document_id"),
    ("packed_in_place", "caches.packed_position_ids", "mutated", None),
    ("keep_window_only", "caches.keep_indices", "shape", "no_sinks"),
    ("keep_window_includes_sinks", "caches.keep_indices", "shape", "window_counts_sinks"),
    ("keep_one_extra", "caches.keep_indices", "shape", "window_off_by_one"),
    ("keep_always_concatenate", "caches.keep_indices", "shape", "duplicates_before_full"),
    ("keep_recent_then_sinks", "caches.keep_indices", "misconception", "recent_first"),
    ("keep_no_full_cache", "caches.keep_indices", "raised", None),
]


def padded_column_index(attention_mask):
    B, T = attention_mask.shape
    return xp.broadcast_to(xp.arange(T), (B, T)).copy()  # the column, padding included


def padded_from_one(attention_mask):
    return xp.where(attention_mask == 1, xp.cumsum(attention_mask, axis=1), 0).astype("int64")


def padded_minus_one(attention_mask):
    return xp.cumsum(attention_mask.astype("int64"), axis=1) - 1  # -1 on the padding


def padded_subtract_pad_count(attention_mask):
    B, T = attention_mask.shape
    n_pad = T - attention_mask.astype("int64").sum(axis=1, keepdims=True)  # (B, 1)
    return xp.where(attention_mask == 1, xp.arange(T) - n_pad, 0)


def padded_float(attention_mask):
    mask = attention_mask.astype("float64")
    return xp.where(mask == 1, xp.cumsum(mask, axis=1) - 1, 0.0)


def packed_arange(doc_ids):
    B, T = doc_ids.shape
    return xp.broadcast_to(xp.arange(T), (B, T)).astype("int64")


def packed_from_boundary(doc_ids):
    B, T = doc_ids.shape
    out = xp.zeros((B, T), dtype="int64")
    for b in range(B):
        last_boundary = 0
        for t in range(T):
            if t > 0 and doc_ids[b, t] != doc_ids[b, t - 1]:
                last_boundary = t - 1  # the previous document's last token
            out[b, t] = t - last_boundary
    return out


def packed_flat(doc_ids):
    B, T = doc_ids.shape
    flat = doc_ids.reshape(-1)
    out = xp.zeros(B * T, dtype="int64")
    for i in range(1, B * T):
        out[i] = out[i - 1] + 1 if flat[i] == flat[i - 1] else 0
    return out.reshape(B, T)


def packed_first_seen(doc_ids):
    B, T = doc_ids.shape
    out = xp.zeros((B, T), dtype="int64")
    for b in range(B):
        first = {}
        for t in range(T):
            d = int(doc_ids[b, t])
            if d not in first:
                first[d] = t
            out[b, t] = t - first[d]
    return out


def packed_in_place(doc_ids):
    B, T = doc_ids.shape
    new_doc = xp.ones((B, T), dtype=bool)
    new_doc[:, 1:] = doc_ids[:, 1:] != doc_ids[:, :-1]
    out = xp.zeros((B, T), dtype="int64")
    for b in range(B):
        for t in range(T):
            out[b, t] = 0 if new_doc[b, t] else out[b, t - 1] + 1
            doc_ids[b, t] = out[b, t]  # reuses the input as scratch space
    return out


def keep_window_only(n_tokens, window, n_sink):
    if window is None:
        return xp.arange(n_tokens)
    return xp.arange(max(0, n_tokens - window), n_tokens)


def keep_window_includes_sinks(n_tokens, window, n_sink):
    if window is None or n_tokens <= window:
        return xp.arange(n_tokens)
    return xp.concatenate([xp.arange(n_sink), xp.arange(n_tokens - (window - n_sink), n_tokens)])


def keep_one_extra(n_tokens, window, n_sink):
    if window is None or n_tokens <= n_sink + window + 1:
        return xp.arange(n_tokens)
    return xp.concatenate([xp.arange(n_sink), xp.arange(n_tokens - window - 1, n_tokens)])


def keep_always_concatenate(n_tokens, window, n_sink):
    if window is None:
        return xp.arange(n_tokens)
    return xp.concatenate([xp.arange(min(n_sink, n_tokens)), xp.arange(max(0, n_tokens - window), n_tokens)])


def keep_recent_then_sinks(n_tokens, window, n_sink):
    if window is None or n_tokens <= n_sink + window:
        return xp.arange(n_tokens)
    return xp.concatenate([xp.arange(n_tokens - window, n_tokens), xp.arange(n_sink)])


def keep_no_full_cache(n_tokens, window, n_sink):
    if n_tokens <= n_sink + window:  # window=None is a TypeError here
        return xp.arange(n_tokens)
    return xp.concatenate([xp.arange(n_sink), xp.arange(n_tokens - window, n_tokens)])
