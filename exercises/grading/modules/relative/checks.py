r"""Checks of ``solutions/relative.py`` (chapter 4): Shaw's clipped index, Transformer-XL's relative shift."""
import numpy as np  # host NumPy: cases and misconceptions live on the host

from exercises.grading.targets import Case, Misconception, Target, normal, show

# ---------------------------------------------------------------------------
# Exercise 4.1: clipped_relative_index
# ---------------------------------------------------------------------------


def _index_cases():
    def case(label, q_pos, k_pos, k, note):
        q_pos, k_pos = np.asarray(q_pos), np.asarray(k_pos)
        return Case(label, (q_pos, k_pos, k), show=f"{show('q_pos', q_pos)}; {show('k_pos', k_pos)}; k = {k}{note}")
    return [case("hand-worked: one query at 5", [5], np.arange(8), 2, ""),
            case("a 10-token block, k 3", np.arange(10), np.arange(10), 3, ""),
            case("one decoding step", [12], np.arange(13), 4, " (the query is the last key)"),
            case("a segment after a 4-token memory", np.arange(8, 12), np.arange(4, 12), 3, ""),
            case("far from position 0, nothing clipped", np.arange(100, 106), np.arange(100, 106), 16, ""),
            case("k 1", np.arange(5), np.arange(5), 1, ""),
            case("int32 positions", np.arange(3, 9, dtype=np.int32), np.arange(0, 9, dtype=np.int32), 2, "")]


def _index_with(slip):
    """Shaw's index with one reader's slip in it, keyed by the misconception's name."""
    def index(q_pos, k_pos, k):
        if slip == "positions_ignored":  # numbered 0.. instead of by position
            q_pos, k_pos = np.arange(len(q_pos)), np.arange(len(k_pos))
        d = np.asarray(k_pos)[None, :] - np.asarray(q_pos)[:, None]
        if slip == "sign_reversed":
            d = -d
        if slip == "no_offset":
            return np.clip(d, -k, k)
        if slip == "clip_off_by_one":  # 2k - 1 rows: |d| < k kept, the rest clipped to k - 1
            return np.clip(d, -(k - 1), k - 1) + (k - 1)
        return np.clip(d, -k, k) + k
    return index


CLIPPED_RELATIVE_INDEX = Target("clipped_relative_index", "int_array", _index_cases, [
    Misconception("sign_reversed", "the distance is i - j instead of j - i",
                  "The distance from query i to key j is k_pos[j] - q_pos[i]: negative for a key in the past. "
                  "Row 0 of the table means 'k or more back', row 2k 'k or more ahead'.",
                  _index_with("sign_reversed")),
    Misconception("no_offset", "the clipped distance is used as the row without adding k",
                  "clip(j - i, -k, k) runs from -k to k, but table rows are numbered 0 .. 2k: add k. A negative "
                  "row does not fail in NumPy, it silently reads from the end of the table.",
                  _index_with("no_offset")),
    Misconception("clip_off_by_one", "a table of 2k - 1 rows instead of 2k + 1",
                  "Clip to [-k, k], both ends included: distance k is still its own row, and every distance "
                  "beyond it shares that row. The table has 2k + 1 rows, numbered 0 .. 2k.",
                  _index_with("clip_off_by_one")),
    Misconception("positions_ignored", "rows and columns numbered from 0 instead of by position",
                  "Use the positions you are given, not arange(T_q) and arange(T_k). When decoding, the one "
                  "query sits at the last key's position, not at 0.",
                  _index_with("positions_ignored")),
])

# ---------------------------------------------------------------------------
# Exercise 4.2: relative_shift
# ---------------------------------------------------------------------------


def _shift_cases():
    hand = np.arange(6.0).reshape(2, 3)
    return [Case("hand-worked: T_q 2, L 3", (hand,), show=show("x", hand)),
            Case("T_q 3, T_k 5", (normal((3, 7), 0),), show=show("x", normal((3, 7), 0), "T_q 3, L 7")),
            Case("batch and heads: (2, 3, 4, 9)", (normal((2, 3, 4, 9), 1),),
                 show=show("x", normal((2, 3, 4, 9), 1), "B 2, H 3, T_q 4, L 9 (T_k 6)")),
            Case("one decoding step: T_q 1", (normal((1, 2, 1, 10), 2),),
                 show=show("x", normal((1, 2, 1, 10), 2), "T_q 1, L 10 (T_k 10)")),
            Case("T_q = T_k = 4", (normal((2, 4, 7), 3),), show=show("x", normal((2, 4, 7), 3), "T_q 4, L 7")),
            Case("more queries than keys: T_q 5, T_k 2", (normal((5, 6), 4),),
                 show=show("x", normal((5, 6), 4), "T_q 5, L 6")),
            Case("float32", (normal((2, 2, 3, 5), 5, np.float32),),
                 show=show("x", normal((2, 2, 3, 5), 5, np.float32), "float32, T_q 3, L 5"))]


def _shift_with(slip):
    """The pad-and-reshape shift with one reader's slip in it, keyed by the misconception's name."""
    def shift(x):
        *lead, T_q, L = x.shape
        T_k = L - T_q + 1
        if slip == "wrong_way":  # row i starts i columns in: the distances run the other way
            i, j = np.arange(T_q)[:, None], np.arange(T_k)[None, :]
            return x[..., i, j + i]
        if slip == "missing_pad":  # no zero column: the rows come out one column too far right
            return x.reshape(*lead, T_q * L)[..., T_q:].reshape(*lead, T_q, L - 1)[..., :T_k]
        padded = np.concatenate([np.zeros((*lead, T_q, 1), dtype=x.dtype), x], axis=-1)
        if slip == "batch_flattened":  # the whole batch read as one row: right for the first (b, h) only
            n = padded.size // (T_q * (L + 1))
            return padded.reshape(-1)[T_q:T_q + n * T_q * L].reshape(*lead, T_q, L)[..., :T_k]
        drop = T_q - 1 if slip == "drop_off_by_one" else T_q
        rows = padded.reshape(*lead, T_q * (L + 1))[..., drop:drop + T_q * L].reshape(*lead, T_q, L)
        if slip == "square_only":  # T_k taken to be T_q
            return rows[..., :T_q]
        if slip == "all_columns":  # the L - T_k columns past the keys kept
            return rows
        return rows[..., :T_k]
    return shift


RELATIVE_SHIFT = Target("relative_shift", "array", _shift_cases, [
    Misconception("wrong_way", "the rows shift the wrong way",
                  "Column r of x is the distance d_hi - r, largest first. Query i's distance to key j is "
                  "d_hi - (j + T_q - 1 - i), so row i must start T_q - 1 - i columns in: the last query's row "
                  "starts at column 0, the first query's furthest in.",
                  _shift_with("wrong_way")),
    Misconception("missing_pad", "no zero column padded in front",
                  "The trick needs a zero column in front of x: only then does each row of the (T_q, L + 1) "
                  "block, read flat and cut into rows of L after dropping T_q entries, start one column further "
                  "left than the row above. Without it every row lands one column too far right.",
                  _shift_with("missing_pad")),
    Misconception("drop_off_by_one", "dropped T_q - 1 flat entries instead of T_q",
                  "After padding, drop exactly T_q entries of the flat row: then row i starts at column "
                  "T_q - i of the padded block, which is column T_q - 1 - i of x.",
                  _shift_with("drop_off_by_one")),
    Misconception("batch_flattened", "the batch and head axes were flattened into the same row",
                  "Reshape only the last two axes into one row, (..., T_q * (L + 1)), and drop T_q entries of "
                  "each such row. Flattening everything shifts every (batch, head) slice after the first into "
                  "its neighbour.",
                  _shift_with("batch_flattened")),
    Misconception("square_only", "T_k taken to be T_q",
                  "Keep T_k = L - T_q + 1 columns. Only a square block has T_k = T_q; a decoding step has one "
                  "query and many keys.",
                  _shift_with("square_only")),
    Misconception("all_columns", "all L columns kept",
                  "After the reshape, row i holds its T_k keys in columns 0 .. T_k - 1 and leftovers after "
                  "them; return only the first T_k = L - T_q + 1 columns.",
                  _shift_with("all_columns")),
])


TARGETS = [CLIPPED_RELATIVE_INDEX, RELATIVE_SHIFT]


# ---------------------------------------------------------------------------
# Held-out cases: other blocks, clips and shapes, in the instructor's copy and the Gradescope bundle only
# ---------------------------------------------------------------------------

HELD_OUT = {
    "clipped_relative_index": lambda: [
        Case(f"held-out {i}", (np.asarray(q), np.asarray(kp), k), show="(held out)")
        for i, (q, kp, k) in enumerate([(np.arange(6, 9), np.arange(0, 9), 5), ([30], np.arange(31), 7),
                                        (np.arange(12), np.arange(12), 12)])],
    "relative_shift": lambda: [Case(f"held-out {i}", (normal(shape, seed),), show="(held out)")
                               for i, (shape, seed) in enumerate([((4, 11), 71), ((1, 3, 2, 8), 72), ((6, 6), 73)])],
}
