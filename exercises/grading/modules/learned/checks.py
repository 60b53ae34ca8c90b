r"""Checks of ``solutions/learned.py`` (chapter 3): the table lookup, cached decoding, their known mistakes."""
import numpy as np  # host NumPy: cases and misconceptions live on the host

from exercises.grading.targets import Case, Misconception, Target, normal, show


# ---------------------------------------------------------------------------
# 3.1 position_rows
# ---------------------------------------------------------------------------

def _rows_cases():
    counting = np.arange(40.0).reshape(10, 4)  # row t holds 4t .. 4t + 3
    wide = normal((32, 16), 1)
    w32 = normal((12, 8), 2, np.float32)
    note = "row t holds 4t .. 4t + 3"
    return [Case("3 rows from offset 0", (counting, 3), {"offset": 0}, show=f"weight (10, 4), {note}; T = 3, offset = 0"),
            Case("3 rows from offset 5", (counting, 3, 5), show=f"weight (10, 4), {note}; T = 3, offset = 5"),
            Case("the last row alone", (counting, 1, 9), show=f"weight (10, 4), {note}; T = 1, offset = 9"),
            Case("the whole table, offset left out", (counting, 10), show=f"weight (10, 4), {note}; T = 10"),
            Case("one decode step at position 17", (wide, 1, 17),
                 show=show("weight", wide, "standard normal, seed 1") + "; T = 1, offset = 17"),
            Case("float32 table", (w32, 4, 6), show=show("weight", w32, "standard normal, seed 2") + "; T = 4, offset = 6"),
            Case("one position past the table", (counting, 1, 10), raises="ValueError",
                 show=f"weight (10, 4), {note}; T = 1, offset = 10 (there is no row 10)")]


def _rows(weight, T, offset=0, shift=0, use_offset=True, batch=True, refuse=True):
    if refuse and (offset < 0 or offset + T > weight.shape[0]):
        raise ValueError("past the table")
    start = (offset if use_offset else 0) + shift
    rows = weight[start:start + T]  # NumPy returns the rows that exist: short past the end, as a reader's slice is
    return rows[None] if batch else rows


POSITION_ROWS = Target("position_rows", "array", _rows_cases, [
    Misconception("offset_ignored", "the offset is ignored",
                  "Rows offset .. offset + T - 1 belong to the tokens at those positions; yours are always rows "
                  "0 .. T - 1. This is the decoding bug of section 6: every new token gets the row of position 0.",
                  lambda weight, T, offset=0: _rows(weight, T, offset, use_offset=False)),
    Misconception("off_by_one", "the rows start one position too late",
                  "The first row is weight[offset], not weight[offset + 1]: position t has row t, and the "
                  "first position is 0.",
                  lambda weight, T, offset=0: _rows(weight, T, offset, shift=1)),
    Misconception("no_batch_axis", "the rows come back without the batch axis",
                  "Return (1, T, d_model): weight[None, offset:offset + T]. The leading 1 broadcasts the rows "
                  "over a batch of token embeddings (B, T, d_model).",
                  lambda weight, T, offset=0: _rows(weight, T, offset, batch=False)),
    Misconception("no_refusal", "positions past the table are not refused",
                  "A slice that runs past the end does not fail in NumPy: it returns the rows that exist, here "
                  "none. Check first: raise ValueError when offset < 0 or offset + T > T_max, with a sentence "
                  "that says which positions were asked for.",
                  lambda weight, T, offset=0: _rows(weight, T, offset, refuse=False)),
])


# ---------------------------------------------------------------------------
# 3.2 cached_decode
# ---------------------------------------------------------------------------

def _decode_cases():
    from mini_transformer.engine.backend import to_numpy
    from solutions.learned import table_lm_params
    out = []
    for B, T, prefill, seed in [(1, 6, 1, 0), (2, 8, 3, 1), (3, 10, 4, 2), (2, 5, 5, 3), (1, 9, 2, 4)]:
        params = {k: to_numpy(v) for k, v in table_lm_params(seed=seed).items()}
        ids = np.random.default_rng(100 + seed).integers(0, 16, size=(B, T))
        out.append(Case(f"B {B}, T {T}, prefill {prefill}", (params, ids, prefill),
                        show=f"the weights of table_lm_params(seed={seed}) (vocab 16, d_model 16, T_max 32); ids: {B} x {T} "
                             f"random tokens (seed {100 + seed}); prefill = {prefill}"))
    return out


def _decode_with(slip):
    r"""The decoding loop with one reader's slip in it, keyed by the misconception's name."""
    def decode(params, ids, prefill, step=None):
        from mini_transformer.engine.backend import to_numpy
        from solutions.learned import table_lm_step
        step = step or table_lm_step
        B, T = ids.shape
        logits, cache = step(params, ids[:, :prefill], None, 0)
        outs, calls = [to_numpy(logits)], 1
        for t in range(prefill, T):
            offset = {"offset_reset": 0, "off_by_one": t + 1, "off_by_one_back": t - 1, "counted_in_calls": calls,
                      "counted_in_rows": t * B, "cache_dropped": t}[slip]
            logits, cache = step(params, ids[:, t:t + 1], None if slip == "cache_dropped" else cache, offset)
            outs.append(to_numpy(logits))
            calls += 1
        return np.concatenate(outs, axis=1)
    return decode


CACHED_DECODE = Target("cached_decode", "array", _decode_cases, [
    Misconception("offset_reset", "every decoded token is placed at position 0",
                  "A decoded token's offset is its place in the text: the number of tokens before it (the "
                  "prefill plus the tokens decoded so far), not 0. This is the silent bug the sources warn about.",
                  _decode_with("offset_reset")),
    Misconception("off_by_one", "the decoded tokens' positions are off by one",
                  "Token t (counting from 0) sits at position t, which is the number of tokens already in the "
                  "cache: not that number plus one, and not the position of the last cached token.",
                  _decode_with("off_by_one")),
    Misconception("off_by_one", "the decoded tokens' positions are off by one",
                  "Token t (counting from 0) sits at position t, which is the number of tokens already in the "
                  "cache: not that number plus one, and not the position of the last cached token.",
                  _decode_with("off_by_one_back")),
    Misconception("counted_in_calls", "the offset counts calls, not tokens",
                  "The prefill call brings prefill tokens, not one: after it the next position is prefill. "
                  "Count tokens (the length of the cache), not calls of step.",
                  _decode_with("counted_in_calls")),
    Misconception("counted_in_rows", "the offset counts rows of the whole batch",
                  "Every sequence of the batch is at the same position; the offset is the number of tokens in "
                  "one sequence, not B times that (the size of a flattened cache).",
                  _decode_with("counted_in_rows")),
    Misconception("cache_dropped", "the cache is not passed on",
                  "Give each call the cache the previous call returned: without it a decoded token attends "
                  "only to itself.",
                  _decode_with("cache_dropped")),
])


TARGETS = [POSITION_ROWS, CACHED_DECODE]


# ---------------------------------------------------------------------------
# Held-out cases: other tables, offsets and batches, in the instructor's copy and the Gradescope bundle only
# ---------------------------------------------------------------------------

def _rows_held_out():
    table = normal((24, 6), 11)
    return [Case("held-out 0", (table, 5, 19), show="(held out)"),
            Case("held-out 1", (table, 24), show="(held out)"),
            Case("held-out 2", (table, 2, 7), show="(held out)"),
            Case("held-out 3", (table, 1, -1), raises="ValueError", show="(held out)")]


def _decode_held_out():
    from mini_transformer.engine.backend import to_numpy
    from solutions.learned import table_lm_params
    out = []
    for i, (B, T, prefill, seed) in enumerate([(4, 7, 3, 5), (1, 12, 1, 6), (2, 16, 6, 7)]):
        params = {k: to_numpy(v) for k, v in table_lm_params(seed=seed).items()}
        ids = np.random.default_rng(200 + seed).integers(0, 16, size=(B, T))
        out.append(Case(f"held-out {i}", (params, ids, prefill), show="(held out)"))
    return out


HELD_OUT = {"position_rows": _rows_held_out, "cached_decode": _decode_held_out}
