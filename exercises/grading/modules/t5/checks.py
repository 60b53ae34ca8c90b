r"""Checks of ``solutions/t5.py`` (chapter 5): T5's relative position buckets, Swin's 2-D index, their mistakes."""
import math

import numpy as np

from exercises.grading.drill_target import Drill
from exercises.grading.targets import Case, Misconception, Target, show


def _bucket_with(slip):
    r"""T5's bucketing with one reader's slip in it, keyed by the misconception's name.

    One host implementation serves every misconception: ``slip`` says which step goes wrong.
    """
    def bucket(rel, bidirectional=True, num_buckets=32, max_distance=128):
        n = (rel if slip == "direction_flipped" else -rel).astype(np.int64)
        ret = np.zeros_like(n)
        if bidirectional:
            if slip != "not_halved":
                num_buckets //= 2
            ret += (n < 0).astype(np.int64) * num_buckets
            n = np.abs(n)
        else:
            n = np.abs(n) if slip == "causal_abs" else np.maximum(n, 0)
        max_exact = num_buckets // 2
        large = max_exact + (np.log(np.maximum(n, max_exact) / max_exact) / math.log(max_distance / max_exact)
                             * (num_buckets - max_exact)).astype(np.int64)
        if slip != "no_cap":
            large = np.minimum(large, num_buckets - 1)
        return ret + np.where(n < max_exact, n, large)
    return bucket


def _slip(key, title, hint):
    return Misconception(key, title, hint, _bucket_with(key))


def _t5_cases():
    hand = np.array([-1, 1, 0, -16, -200, 200])
    wide = np.arange(-200, 201)
    mid = np.arange(-100, 101)
    grid = np.arange(12)[None, :] - np.arange(12)[:, None]
    small32 = np.arange(-40, 41, dtype=np.int32)
    return [Case("hand-worked distances", (hand,), show=show("relative_position", hand)),
            Case("-200 .. 200, bidirectional", (wide,), show="relative_position = arange(-200, 201)"),
            Case("-200 .. 200, causal", (wide,), {"bidirectional": False},
                 show="relative_position = arange(-200, 201), bidirectional=False"),
            Case("a (T_q, T_k) = (12, 12) grid", (grid,),
                 show="relative_position[i, j] = j - i for i, j in 0..11"),
            Case("16 buckets, max_distance 64", (mid,), {"num_buckets": 16, "max_distance": 64},
                 show="relative_position = arange(-100, 101), num_buckets=16, max_distance=64"),
            Case("16 buckets, max_distance 64, causal", (mid,),
                 {"bidirectional": False, "num_buckets": 16, "max_distance": 64},
                 show="relative_position = arange(-100, 101), bidirectional=False, num_buckets=16, "
                      "max_distance=64"),
            Case("int32 input", (small32,), show="relative_position = arange(-40, 41) as int32"),
            Case("a single zero", (np.array([0]),), show="relative_position = [0]")]


T5_BUCKET = Target("relative_position_bucket", "int_array", _t5_cases, [
    _slip("direction_flipped", "past and future swapped",
          "relative_position = key_pos - query_pos is negative for keys in the past. Past keys use the lower "
          "buckets; future keys (relative_position > 0) the upper half when bidirectional."),
    _slip("not_halved", "num_buckets not halved for the two directions",
          "Bidirectional buckets split in two: num_buckets // 2 for the past, the same number for the future. "
          "Halve num_buckets before computing max_exact."),
    _slip("causal_abs", "causal mode keeps future distances",
          "With bidirectional=False, future keys collapse to distance 0 (clamp at 0), since the mask removes "
          "them anyway; taking the absolute value gives them real buckets."),
    _slip("no_cap", "distances past max_distance overflow the last bucket",
          "Cap the logarithmic buckets at num_buckets - 1: every distance from max_distance on shares the "
          "last bucket."),
], elementwise_arg="relative_position")




# ---------------------------------------------------------------------------
# Exercise 5.2: swin_relative_index
# ---------------------------------------------------------------------------

def _swin_cases():
    return [Case(f"window {w}", (w,), show=f"window = {w}" + note)
            for w, note in [(2, " (the worked example)"), (1, " (one token)"), (3, ""), (7, " (Swin's window)"),
                            (4, "")]]


def _swin_with(slip):
    """Swin's index with one reader's slip in it, keyed by the misconception's name."""
    def index(window):
        w = window
        p = np.arange(w * w)
        y, x = p // w, p % w
        dy, dx = y[:, None] - y[None, :], x[:, None] - x[None, :]
        if slip == "sign_reversed":
            dy, dx = -dy, -dx
        if slip == "no_shift":
            return dy * (2 * w - 1) + dx
        if slip == "x_first":
            dy, dx = dx, dy
        stride = w if slip == "stride_w" else 2 * w - 1
        return (dy + w - 1) * stride + (dx + w - 1)
    return index


SWIN_INDEX = Target("swin_relative_index", "int_array", _swin_cases, [
    Misconception("x_first", "the column offset leads instead of the row offset",
                  "Swin's table is row-offset-major: (dy + w - 1) * (2w - 1) + (dx + w - 1). With dx leading the "
                  "bias is still translation-invariant, but a Swin checkpoint's table no longer fits it.",
                  _swin_with("x_first")),
    Misconception("sign_reversed", "the offset is (y_j - y_i, x_j - x_i)",
                  "The offset of the pair (i, j) is (y_i - y_j, x_i - x_j), query minus key, as in Swin's "
                  "coords[:, :, None] - coords[:, None, :]. Reversed, every pair reads its mirror's row.",
                  _swin_with("sign_reversed")),
    Misconception("no_shift", "the offsets are not shifted by w - 1",
                  "dy and dx run from -(w - 1) to w - 1; add w - 1 to each so they run from 0 to 2w - 2 before "
                  "combining them. Otherwise rows are negative and distinct offsets collide.",
                  _swin_with("no_shift")),
    Misconception("stride_w", "the row offset multiplied by w instead of 2w - 1",
                  "dx + w - 1 takes 2w - 1 values, so the row offset must step by 2w - 1. With a step of w two "
                  "different offsets share a row: (0, w - 1) and (1, -(w - 1)), for one.",
                  _swin_with("stride_w")),
], dtype_hint="Table rows are integers: build them from integer aranges with // and %.")


TARGETS = [T5_BUCKET, SWIN_INDEX]

# the timed drill, `python -m exercises drill t5`: the target from the chapter's "Retype by hand" table
DRILL = Drill(("relative_position_bucket",), minutes=12)


# ---------------------------------------------------------------------------
# Held-out cases: other bucket counts, distances and grids, in the instructor's copy and the Gradescope
# bundle only
# ---------------------------------------------------------------------------

def _t5_held_out():
    wide = np.arange(-300, 301)
    grid = np.arange(20)[None, :] - np.arange(9)[:, None]
    return [Case("held-out 0", (wide,), {"num_buckets": 64, "max_distance": 256}, show="(held out)"),
            Case("held-out 1", (wide,), {"bidirectional": False, "num_buckets": 8, "max_distance": 20},
                 show="(held out)"),
            Case("held-out 2", (grid,), show="(held out)"),
            Case("held-out 3", (np.array([-7, 7, 129, -129]),), {"num_buckets": 32, "max_distance": 128},
                 show="(held out)")]


def _swin_held_out():
    return [Case(f"held-out {i}", (w,), show="(held out)") for i, w in enumerate((5, 6, 8))]


HELD_OUT = {"relative_position_bucket": _t5_held_out, "swin_relative_index": _swin_held_out}
