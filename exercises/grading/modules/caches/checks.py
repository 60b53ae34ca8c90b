r"""Checks of ``solutions/caches.py`` (chapter 10): position ids of padded and packed rows, and eviction."""
import numpy as np  # host NumPy: cases and misconceptions live on the host

from exercises.grading.targets import Case, Misconception, Target, show


# ---------------------------------------------------------------------------
# 10.1 left_padded_position_ids
# ---------------------------------------------------------------------------

def _padded_cases():
    hand = np.array([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    g = np.random.default_rng(31)
    n_real = np.array([12, 1, 7, 3, 11, 5])
    left = (np.arange(12)[None, :] >= 12 - n_real[:, None]).astype(np.int64)  # (6, 12), padding in front
    mixed = np.array([[0, 0, 0, 1, 1, 1], [1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])  # left, right, none
    single = np.array([[0, 0, 0, 0, 0, 0, 0, 1]])
    wide = (np.arange(40)[None, :] >= g.integers(0, 40, size=(3, 1))).astype(np.int32)
    return [Case("worked example", (hand,), show=show("attention_mask", hand)),
            Case("a left-padded batch of 6 rows, 12 columns", (left,),
                 show=f"attention_mask: 6 rows of 12, real tokens per row {n_real.tolist()}, padding in front"),
            Case("left-padded, right-padded and unpadded rows", (mixed,), show=show("attention_mask", mixed)),
            Case("a single real token", (single,), show=show("attention_mask", single)),
            Case("int32 mask, 40 columns", (wide,),
                 show=f"attention_mask: int32, 3 rows of 40, real tokens per row {wide.sum(axis=1).tolist()}"),
            Case("a boolean mask", (mixed.astype(bool),), show="the same mixed rows as a boolean array")]


def _cumsum(mask):
    return np.cumsum(mask.astype(np.int64), axis=-1)


LEFT_PADDED = Target("left_padded_position_ids", "int_array", _padded_cases, [
    Misconception("counted_from_padding", "positions counted from the padding",
                  "A row's first real token sits at position 0 however much padding comes before it; counting "
                  "columns gives it the position of its column, as if the padding were text.",
                  lambda m: np.broadcast_to(np.arange(m.shape[-1]), m.shape).astype(np.int64)),
    Misconception("counted_from_one", "positions counted from 1",
                  "The cumulative sum of the mask counts the token itself; subtract 1 so the first real token "
                  "is at 0.", lambda m: np.where(m.astype(bool), _cumsum(m), 0)),
    Misconception("padding_not_zeroed", "padding left with cumsum - 1",
                  "cumsum(mask) - 1 is right for real tokens but gives -1 to left padding (and repeats the last "
                  "position on right padding). Set every padding position to 0.", lambda m: _cumsum(m) - 1),
    Misconception("assumes_left_padding", "every row assumed to be padded on the left",
                  "Subtracting the number of padding tokens from the column index only works when all the padding "
                  "is in front. Count the real tokens before each token instead (a cumulative sum of the mask).",
                  lambda m: np.where(m.astype(bool), np.arange(m.shape[-1]) - (m.shape[-1] - m.astype(np.int64)
                                                                              .sum(axis=-1, keepdims=True)), 0)),
])


# ---------------------------------------------------------------------------
# 10.2 packed_position_ids
# ---------------------------------------------------------------------------

def _packed_cases():
    hand = np.array([[7, 7, 7, 2, 2, 5]])
    g = np.random.default_rng(32)
    rows = np.repeat(np.arange(20), g.integers(1, 6, size=20))[:48].reshape(3, 16)  # runs of 1..5, across rows
    continued = np.array([[0, 0, 1, 1, 1, 1], [1, 1, 2, 2, 2, 3]])  # row 1 starts with the id row 0 ends with
    repeat = np.array([[1, 1, 2, 2, 1, 1, 1]])  # id 1 again later: a new document
    one_doc = np.full((2, 9), 4)
    singles = np.arange(8)[None, :]
    return [Case("worked example", (hand,), show=show("doc_ids", hand)),
            Case("3 rows of 16, runs of 1 to 5 tokens", (rows,), show=show("doc_ids", rows)),
            Case("a row that starts with the id the row above ends with", (continued,), show=show("doc_ids", continued)),
            Case("an id that comes back after another document", (repeat,), show=show("doc_ids", repeat)),
            Case("one document per row", (one_doc,), show=show("doc_ids", one_doc)),
            Case("every token its own document", (singles,), show=show("doc_ids", singles)),
            Case("int32 ids", (rows.astype(np.int32),), show="the 3 rows of 16 above, as int32")]


def _runs(doc_ids, flatten=False):
    """(column index, start of run) per token, host NumPy; ``flatten`` lets a run continue into the next row."""
    B, T = doc_ids.shape
    flat = doc_ids.reshape(-1)
    new = np.ones(B * T, dtype=bool)
    new[1:] = flat[1:] != flat[:-1]
    if not flatten:
        new[::T] = True
    g = np.arange(B * T)
    start = g[new][np.cumsum(new) - 1]
    return g, start, new


def _reset_from_one(doc_ids):
    g, start, _ = _runs(doc_ids)
    B, T = doc_ids.shape
    first = (start % T) == 0  # the row's first document counts from 0, the later ones from 1
    return np.where(first, g - start, g - start + 1).reshape(B, T).astype(np.int64)


def _flattened(doc_ids):
    g, start, _ = _runs(doc_ids, flatten=True)
    return (g - start).reshape(doc_ids.shape).astype(np.int64)


def _by_document_id(doc_ids):
    out = np.zeros(doc_ids.shape, dtype=np.int64)
    for b, row in enumerate(doc_ids):
        first = {}
        for t, d in enumerate(row.tolist()):
            first.setdefault(d, t)
            out[b, t] = t - first[d]
    return out


PACKED = Target("packed_position_ids", "int_array", _packed_cases, [
    Misconception("not_reset", "positions not reset at a document boundary",
                  "In a packed row each document starts again at position 0; the column index lets the second "
                  "document inherit the first one's length as an offset.",
                  lambda d: np.broadcast_to(np.arange(d.shape[-1]), d.shape).astype(np.int64)),
    Misconception("reset_from_one", "a new document starts at 1",
                  "The first token of a new document is at 0: measure from the document's own first token, not "
                  "from the last token of the document before it.", _reset_from_one),
    Misconception("flattened_rows", "positions carried from one row into the next",
                  "Each row is its own sequence and starts at 0, even when its first document has the id the row "
                  "above ended with. Work along each row, not along the batch flattened.", _flattened),
    Misconception("by_document_id", "positions measured from the first token with the same id",
                  "A document is a run of equal ids; an id that comes back after another document starts a new "
                  "document at 0. Compare each id with its left neighbour rather than looking ids up.",
                  _by_document_id),
])


# ---------------------------------------------------------------------------
# 10.3 keep_indices
# ---------------------------------------------------------------------------

KEEP_CASES = [("worked example", 10, 4, 2), ("before the cache fills", 3, 4, 2), ("exactly full", 6, 4, 2),
              ("one token past full", 7, 4, 2), ("a long stream: 100 tokens, window 8, 4 sinks", 100, 8, 4),
              ("no sinks", 50, 8, 0), ("window 1, one sink", 20, 1, 1), ("fewer tokens than sinks", 2, 4, 4),
              ("an empty cache", 0, 4, 2), ("the full cache: window None", 5, None, 0)]


def _keep_cases():
    return [Case(label, (n, w, s), show=f"keep_indices(n_tokens={n}, window={w}, n_sink={s})")
            for label, n, w, s in KEEP_CASES]


def _keep_with(slip):
    def keep(n_tokens, window, n_sink):
        if window is None:
            return np.arange(n_tokens)
        sinks = np.arange(0 if slip == "no_sinks" else n_sink)
        w = window - n_sink if slip == "window_counts_sinks" else window + 1 if slip == "window_off_by_one" else window
        if slip == "duplicates_before_full":
            return np.concatenate([np.arange(min(n_sink, n_tokens)), np.arange(max(n_tokens - window, 0), n_tokens)])
        if n_tokens <= len(sinks) + w:
            return np.arange(n_tokens)
        recent = np.arange(n_tokens - w, n_tokens)
        return np.concatenate([recent, sinks] if slip == "recent_first" else [sinks, recent])
    return keep


KEEP = Target("keep_indices", "int_array", _keep_cases, [
    Misconception("no_sinks", "the sinks are evicted with everything else",
                  "StreamingLLM keeps the first n_sink tokens forever, next to the window: indices 0 .. n_sink - 1 "
                  "stay in the cache however long the stream.", _keep_with("no_sinks")),
    Misconception("window_counts_sinks", "the sinks counted inside the window",
                  "The cache holds n_sink + window tokens once full: the window is the recent tokens alone.",
                  _keep_with("window_counts_sinks")),
    Misconception("window_off_by_one", "window + 1 recent tokens kept",
                  "The window is the last `window` tokens, indices n_tokens - window .. n_tokens - 1; starting one "
                  "earlier keeps one token too many, and slot positions then pass n_sink + window.",
                  _keep_with("window_off_by_one")),
    Misconception("duplicates_before_full", "tokens kept twice before the cache is full",
                  "Until n_tokens passes n_sink + window the sinks and the window overlap; concatenating both "
                  "ranges keeps those tokens twice. Keep every index once: nothing is evicted yet.",
                  _keep_with("duplicates_before_full")),
    Misconception("recent_first", "the window placed before the sinks",
                  "Keep the cache in stream order, sinks first: with slot positions the order is the position, "
                  "so the sinks must sit at slots 0 .. n_sink - 1.", _keep_with("recent_first")),
])


TARGETS = [LEFT_PADDED, PACKED, KEEP]


# ---------------------------------------------------------------------------
# Held-out cases: other masks, documents and windows, in the instructor's copy and the Gradescope bundle only
# ---------------------------------------------------------------------------

def _padded_held_out():
    g = np.random.default_rng(131)
    n_real = g.integers(1, 20, size=(5, 1))
    left = (np.arange(20)[None, :] >= 20 - n_real).astype(np.int64)
    return [Case("held-out 0", (left,), show="(held out)"),
            Case("held-out 1", (np.array([[0, 1], [1, 1]]),), show="(held out)"),
            Case("held-out 2", (np.array([[0, 0, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]]),), show="(held out)")]


def _packed_held_out():
    g = np.random.default_rng(132)
    rows = np.repeat(np.arange(30), g.integers(1, 8, size=30))[:60].reshape(4, 15)
    return [Case("held-out 0", (rows,), show="(held out)"),
            Case("held-out 1", (np.array([[3, 3, 9, 9, 9, 3, 3]]),), show="(held out)"),
            Case("held-out 2", (np.array([[5], [5], [6]]),), show="(held out)")]


HELD_OUT = {"left_padded_position_ids": _padded_held_out, "packed_position_ids": _packed_held_out,
            "keep_indices": lambda: [Case(f"held-out {i}", (n, w, s), show="(held out)")
                                     for i, (n, w, s) in enumerate([(33, 6, 3), (9, 5, 1), (64, 16, 0), (4, 3, 3)])]}
