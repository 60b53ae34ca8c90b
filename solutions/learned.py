r"""Learned absolute positions: chapter 3's exercises, and the small model they run in.

A learned table is a ``(T_max, d_model)`` array with one row per position (GPT-2, BERT). The
token at position ``t`` gets row ``t`` added to its embedding. There is no row ``T_max``: a
table cannot encode a position it does not have.

The small model (given, not an exercise) is one causal attention layer over token embeddings
plus learned positions, in plain arrays, with a KV cache: ``table_lm_params`` makes its
weights, ``table_lm_step`` runs it (with its own lookup, so it runs before you write yours).
Section 6 of the chapter decodes through it.
"""
import math

from mini_transformer.engine.backend import rng, xp


def position_rows(weight, T, offset=0):
    r"""The rows of the positions ``offset .. offset + T - 1``, shape ``(1, T, d_model)``.

    Row ``t`` of the result's one batch entry is ``weight[offset + t]``; the leading axis of
    size 1 lets the rows broadcast over a batch of token embeddings ``(B, T, d_model)``.
    Asking for a position the table does not have (``offset < 0`` or
    ``offset + T > T_max``) raises ``ValueError`` with a sentence that says what was asked
    for: a table cannot encode a position past its last row.

    Index ``weight`` itself (a slice such as ``weight[None, a:b]`` is all you need): inside a
    model, ``weight`` is the table's ``Parameter``, and indexing it keeps the path along which each
    row's gradient flows back; copying ``weight.data`` into a new array would cut that path.

    Args:
        weight: the table ``(T_max, d_model)``, an array or a ``Parameter``.
        T: how many positions.
        offset: the first position; more than 0 when decoding after a prefix.

    Returns:
        ``(1, T, d_model)``, the dtype of ``weight``.
    """
    # BEGIN SOLUTION Exercise 3.1
    T_max = weight.shape[0]
    if offset < 0 or offset + T > T_max:
        raise ValueError(f"the table has T_max={T_max} rows (positions 0..{T_max - 1}), but positions "
                         f"{offset}..{offset + T - 1} were asked for.")
    return weight[None, offset:offset + T]  # (1, T, d_model)
    # END SOLUTION


def table_lm_params(vocab_size=16, d_model=16, T_max=32, seed=0):
    r"""The weights of the chapter's small model (given): a dict of float64 arrays.

    ``tok`` ``(vocab_size, d_model)`` and ``table`` ``(T_max, d_model)`` are the token and
    position embeddings; ``W_q``, ``W_k``, ``W_v``, ``W_o`` ``(d_model, d_model)`` one
    attention head; ``head`` ``(d_model, vocab_size)`` the output layer.
    """
    g = rng(seed)
    shapes = {"tok": (vocab_size, d_model), "table": (T_max, d_model), "W_q": (d_model, d_model),
              "W_k": (d_model, d_model), "W_v": (d_model, d_model), "W_o": (d_model, d_model),
              "head": (d_model, vocab_size)}
    return {name: g.normal(0.0, 1.0 / math.sqrt(shape[0]), shape, dtype="float64") for name, shape in shapes.items()}


def table_lm_step(params, ids, cache=None, offset=0):
    r"""One call of the chapter's small model (given): logits for ``ids`` and the updated cache.

    The tokens ``ids`` ``(B, T_new)`` sit at the positions ``offset .. offset + T_new - 1``:
    each gets its token row plus its position row. They attend to the tokens in ``cache``
    (their keys and values, stored by earlier calls) and causally to each other. With no
    cache and offset 0, ``table_lm_step(params, ids)`` is the full forward pass.

    Returns:
        ``(logits (B, T_new, vocab_size), cache)``; the cache is a dict of the keys and
        values of every token so far, ``(B, T_cached + T_new, d_model)`` each.
    """
    T_new, table = ids.shape[1], params["table"]
    if not 0 <= offset <= offset + T_new <= table.shape[0]:
        raise ValueError(f"table_lm_step: the table has {table.shape[0]} rows, but positions {offset}.."
                         f"{offset + T_new - 1} were asked for.")
    x = params["tok"][ids] + table[offset:offset + T_new]  # (B, T_new, d_model): one row per position
    q, k, v = x @ params["W_q"], x @ params["W_k"], x @ params["W_v"]  # (B, T_new, d_model) each
    if cache is not None:  # the earlier tokens' keys and values, computed once when they arrived
        k = xp.concatenate([cache["k"], k], axis=1)  # (B, T_k, d_model)
        v = xp.concatenate([cache["v"], v], axis=1)
    T_k = k.shape[1]
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])  # (B, T_new, T_k)
    visible = xp.arange(T_k)[None, :] <= xp.arange(T_k - T_new, T_k)[:, None]  # the new tokens come last
    scores = xp.where(visible, scores, -xp.inf)
    probs = xp.exp(scores - scores.max(axis=-1, keepdims=True))
    probs = probs / probs.sum(axis=-1, keepdims=True)
    h = x + (probs @ v) @ params["W_o"]  # (B, T_new, d_model)
    return h @ params["head"], {"k": k, "v": v}


def cached_decode(params, ids, prefill, step=None):
    r"""The logits of every position, computed the way generation computes them.

    Run the first ``prefill`` tokens of ``ids`` in one call, with an empty cache; then feed
    the remaining tokens one per call, each with the cache the previous call returned and the
    ``offset`` of its own position. Call the model through ``step`` (``table_lm_step`` when
    ``step`` is None), as ``logits, cache = step(params, ids_new, cache, offset)``.

    With the right offsets the result equals the full forward pass,
    ``step(params, ids)[0]``, at every position.

    Args:
        params: the model's weights (``table_lm_params``).
        ids: token ids ``(B, T)``.
        prefill: how many tokens the first call takes, ``1 <= prefill <= T``.
        step: the model's one call; None means ``table_lm_step``.

    Returns:
        logits ``(B, T, vocab_size)``, the prefill call's and then one step's per token.
    """
    # BEGIN SOLUTION Exercise 3.2
    step = table_lm_step if step is None else step
    logits, cache = step(params, ids[:, :prefill], None, 0)  # positions 0 .. prefill - 1
    outs = [logits]
    for t in range(prefill, ids.shape[1]):
        # token t sits at position t: the number of tokens already in the cache, whatever the batch size
        logits, cache = step(params, ids[:, t:t + 1], cache, t)
        outs.append(logits)
    return xp.concatenate(outs, axis=1)  # (B, T, vocab_size)
    # END SOLUTION


def test_learned_positions(position_rows, cached_decode):
    r"""A test that fails on a wrong table lookup or a wrong decoding loop.

    You receive a ``position_rows`` and a ``cached_decode`` (the signatures of Exercises 3.1 and
    3.2) and raise ``AssertionError`` (a plain ``assert``) when they are wrong: a lookup that
    returns other rows, another shape, or no error for a position the table does not have; a
    decoding loop whose logits differ from one full pass of the model.

    The model of the chapter, ``table_lm_params`` and ``table_lm_step``, is in this file. The
    grader runs your test on the reference, where it must pass, and on mutants, each wrong in one
    way a reader's code can be (an offset reset to 0, counted in calls, off by one, a slice that
    runs past the end); a good test fails on every one of them.

    Args:
        position_rows: a function ``(weight, T, offset=0) -> (1, T, d_model)``, as in Exercise 3.1.
        cached_decode: a function ``(params, ids, prefill, step=None) -> (B, T, vocab_size)``, as in
            Exercise 3.2.
    """
    # BEGIN SOLUTION Exercise 3.3
    w = xp.arange(40.0).reshape(10, 4)  # row t holds 4t .. 4t + 3
    for T, offset in [(3, 0), (3, 5), (1, 9), (10, 0)]:
        rows = position_rows(w, T, offset)
        assert rows.shape == (1, T, 4), rows.shape
        assert xp.array_equal(rows[0], w[offset:offset + T])
    for T, offset in [(1, 10), (3, 8), (11, 0)]:  # each reaches past row 9
        try:
            position_rows(w, T, offset)
        except ValueError:
            continue
        raise AssertionError(f"position_rows(w, {T}, {offset}) reaches past the 10 rows without an error")

    params = table_lm_params(seed=0)
    ids = xp.asarray([[1, 5, 2, 7, 3, 3, 9, 0, 4, 6], [8, 8, 1, 0, 15, 2, 6, 6, 11, 3]])  # (B, T) = (2, 10)
    full, _ = table_lm_step(params, ids)  # positions 0 .. 9 in one pass
    for prefill in (1, 4, 10):  # a prefill of 1 cannot tell tokens from calls
        cached = cached_decode(params, ids, prefill)
        assert cached.shape == full.shape
        assert xp.allclose(cached, full, atol=1e-10), f"prefill {prefill}: cached decoding differs from the full pass"
    # END SOLUTION
