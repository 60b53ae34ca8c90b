r"""Caches, windows and sinks: the functions of chapter 10's exercises.

Every token has one *logical position*: the number of real tokens of its own sequence that
come before it. Prefill, decoding, padding, packing and the cache must all give a token that
same number (survey §5.4). Two layouts break the easy rule "position = column index":

* a **left-padded batch** puts padding in front of the shorter rows (so that every row's
  last token sits in the last column, where decoding continues);
* a **packed row** holds several documents end to end, each starting again at position 0.

The cache policy decides which tokens stay once the cache is full: StreamingLLM keeps the
first ``n_sink`` tokens of the stream and the ``window`` most recent ones.
"""
from mini_transformer.engine.backend import xp


def left_padded_position_ids(attention_mask):
    r"""Position ids of a padded batch: each real token's index among its row's real tokens.

    ``attention_mask[b, t]`` is 1 for a real token and 0 for padding (left padding puts the
    zeros in front; a right-padded row works the same). A real token's position is the number
    of real tokens before it in its row, so every row's first real token sits at 0. Padding
    gets position 0 (it is masked out, so any value would do; 0 keeps every id in range).
    Worked example: the mask ``[[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]]`` gives
    ``[[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]]``.

    Args:
        attention_mask: ``(B, T)`` integer array of 0s and 1s.

    Returns:
        ``(B, T)`` int64 array of positions.
    """
    # BEGIN SOLUTION Exercise 10.1
    mask = attention_mask.astype("int64")
    before_and_self = xp.cumsum(mask, axis=-1)  # (B, T) real tokens up to and including t
    return xp.where(mask == 1, before_and_self - 1, 0)  # padding gets 0
    # END SOLUTION


def packed_position_ids(doc_ids):
    r"""Position ids of packed rows: positions start again at 0 where a new document begins.

    ``doc_ids[b, t]`` names the document token ``t`` of row ``b`` belongs to; a document is a
    run of equal ids, and the next run (a different id) is the next document. A token's
    position is its distance from the first token of its run. Each row is its own sequence,
    so every row starts at 0. Worked example: ``[[7, 7, 7, 2, 2, 5]]`` gives
    ``[[0, 1, 2, 0, 1, 0]]``.

    Args:
        doc_ids: ``(B, T)`` integer array.

    Returns:
        ``(B, T)`` int64 array of positions.
    """
    # BEGIN SOLUTION Exercise 10.2
    B, T = doc_ids.shape
    new_doc = xp.ones((B, T), dtype=bool)  # column 0 starts a document in every row
    new_doc[:, 1:] = doc_ids[:, 1:] != doc_ids[:, :-1]  # so does every change of id
    flat = new_doc.reshape(-1)  # (B T,) rows end to end; each row still starts a run
    g = xp.arange(B * T)
    run = xp.cumsum(flat) - 1  # (B T,) which run each token belongs to
    start = g[flat]  # (n_runs,) where each run begins
    return (g - start[run]).reshape(B, T).astype("int64")
    # END SOLUTION


def keep_indices(n_tokens, window, n_sink):
    r"""The cached tokens a sliding window with sinks keeps, as increasing indices.

    The cache holds ``n_tokens`` tokens, oldest first. Keep the first ``n_sink`` (the sinks)
    and the ``window`` most recent. While ``n_tokens <= n_sink + window`` nothing is evicted
    and every index is kept, once. ``window=None`` is the full cache: keep everything.
    Worked example: ``keep_indices(10, 4, 2)`` is ``[0, 1, 6, 7, 8, 9]``.

    Args:
        n_tokens: tokens in the cache now, at least 0.
        window: recent tokens to keep, at least 1, or None.
        n_sink: first tokens to keep, at least 0.

    Returns:
        ``(min(n_tokens, n_sink + window),)`` int64 array, strictly increasing, in ``[0, n_tokens)``.
    """
    # BEGIN SOLUTION Exercise 10.3
    if window is None or n_tokens <= n_sink + window:
        return xp.arange(n_tokens)  # nothing to evict yet
    sinks = xp.arange(n_sink)  # the first tokens of the stream, kept forever
    recent = xp.arange(n_tokens - window, n_tokens)  # the window, always after the sinks here
    return xp.concatenate([sinks, recent])
    # END SOLUTION


def test_cache_policy(keep_indices):
    r"""A test that fails on a wrong eviction policy: it checks what any sinks-plus-window cache must do.

    You receive a ``keep_indices`` (the signature of Exercise 10.3) and raise ``AssertionError`` (a
    plain ``assert``) when it is wrong: any ``(n_tokens, window, n_sink)`` for which the indices are
    not the sinks and the ``window`` most recent tokens (every token while nothing needs evicting),
    each once, in order.

    The grader runs your test on the reference, where it must pass, and on mutants, each wrong
    in one way a reader's code can be (an off-by-one window, the sinks forgotten, duplicates
    before the cache fills, the wrong order); a good test fails on every one of them.

    Args:
        keep_indices: a function ``(n_tokens, window, n_sink) -> indices of the kept tokens``.
    """
    # BEGIN SOLUTION Exercise 10.4
    for window in (1, 3, 8):
        for n_sink in (0, 1, 4):
            for n_tokens in range(0, n_sink + window + 6):
                kept = [int(i) for i in keep_indices(n_tokens, window, n_sink)]
                case = f"keep_indices({n_tokens}, {window}, {n_sink}) = {kept}"
                assert kept == sorted(set(kept)), f"{case}: not distinct and increasing"
                assert all(0 <= i < n_tokens for i in kept), f"{case}: an index outside [0, {n_tokens})"
                assert len(kept) == min(n_tokens, n_sink + window), f"{case}: holds {len(kept)} tokens"
                assert len(kept) <= n_sink + window, f"{case}: the next query's slot passes n_sink + window"
                must = set(range(min(n_sink, n_tokens))) | set(range(max(0, n_tokens - window), n_tokens))
                assert must <= set(kept), f"{case}: misses {sorted(must - set(kept))}"
    assert [int(i) for i in keep_indices(10, 4, 2)] == [0, 1, 6, 7, 8, 9]
    assert [int(i) for i in keep_indices(5, None, 0)] == [0, 1, 2, 3, 4]  # the full cache
    # END SOLUTION
