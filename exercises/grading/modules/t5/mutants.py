r"""Mutants for chapter 5's reader test: T5 buckets or a Swin index, wrong in one realistic way.

Each wraps a correct ``relative_position_bucket`` or ``swin_relative_index`` (the reference, or
in a student copy the reader's own once it passes) and breaks one thing, the way a reader's code
breaks. Every one with a ``misconception`` reproduces that misconception of the wrapped exercise
exactly: ``tests/grading/test_grader.py`` grades each mutant against the exercise's checks to prove it.
"""
from exercises.grading.reader_tests import Mutant, ReaderTest, wraps_function
from mini_transformer.engine.backend import xp


def _bucket_with(change):
    """A mutant of relative_position_bucket: ``change(bucket, rel, bidirectional, num_buckets, max_distance)``."""
    def make(relative_position_bucket):
        @wraps_function(relative_position_bucket)
        def relative_position_bucket_mutant(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
            return change(relative_position_bucket, relative_position, bidirectional, num_buckets, max_distance)
        return relative_position_bucket_mutant
    return make


def _index_with(change):
    """A mutant of swin_relative_index: ``change(index, window)`` in place of the call."""
    def make(swin_relative_index):
        @wraps_function(swin_relative_index)
        def swin_relative_index_mutant(window):
            return change(swin_relative_index, window)
        return swin_relative_index_mutant
    return make


def _not_halved(bucket, rel, bidirectional, num_buckets, max_distance):
    # bidirectional: num_buckets per direction, the future offset by num_buckets (ids up to 2 num_buckets - 1)
    return bucket(rel, bidirectional, 2 * num_buckets if bidirectional else num_buckets, max_distance)


def _causal_abs(bucket, rel, bidirectional, num_buckets, max_distance):
    # causal: |distance| for future keys too, instead of bucket 0
    return bucket(rel if bidirectional else -abs(rel), bidirectional, num_buckets, max_distance)


def _x_first(index, window):
    # the column offset leads: the same as reading the tokens in column order
    p = xp.arange(window * window)
    swap = (p % window) * window + p // window                            # token (y, x) <-> token (x, y)
    return index(window)[swap[:, None], swap[None, :]]


def _stride_w(index, window):
    # the row offset steps by w instead of 2w - 1: different offsets collide
    rows = index(window)
    return (rows // (2 * window - 1)) * window + rows % (2 * window - 1)


def _no_shift(index, window):
    # offsets not shifted by w - 1: negative rows
    return index(window) - (window - 1) * (2 * window - 1) - (window - 1)


READER_TESTS = [ReaderTest("test_buckets", [
    Mutant("direction_flipped", "relative_position_bucket", "past and future swapped",
           "work one bucket by hand: a key one back (relative position -1) is bucket 1, one ahead is 17.",
           _bucket_with(lambda b, rel, bi, nb, md: b(-rel, bi, nb, md)), misconception="direction_flipped"),
    Mutant("not_halved", "relative_position_bucket", "bidirectional without halving num_buckets",
           "check that every id lies in 0 .. num_buckets - 1.",
           _bucket_with(_not_halved), misconception="not_halved"),
    Mutant("causal_abs", "relative_position_bucket", "causal, but future keys keep their distance",
           "with bidirectional=False, every key ahead (relative position > 0) must be bucket 0.",
           _bucket_with(_causal_abs), misconception="causal_abs"),
    Mutant("max_distance_ignored", "relative_position_bucket", "uses max_distance 128 whatever it is given",
           "test a setting with another max_distance (16 buckets to 64, say) and check where the last bucket starts.",
           _bucket_with(lambda b, rel, bi, nb, md: b(rel, bi, nb, 128))),
    Mutant("bidirectional_ignored", "relative_position_bucket", "always the bidirectional form",
           "test bidirectional=False too: all buckets for the past, the future in bucket 0.",
           _bucket_with(lambda b, rel, bi, nb, md: b(rel, True, nb, md))),
    Mutant("float_ids", "relative_position_bucket", "bucket ids as floats",
           "check the dtype: ids index a table, they must be integers.",
           _bucket_with(lambda b, rel, bi, nb, md: b(rel, bi, nb, md).astype(xp.float64))),
    Mutant("x_first", "swin_relative_index", "the column offset leads: (dx + w - 1)(2w - 1) + (dy + w - 1)",
           "work the example of window 2 by hand: row 0 is [4, 3, 1, 0].",
           _index_with(_x_first), misconception="x_first"),
    Mutant("sign_reversed", "swin_relative_index", "the offset is key minus query",
           "work one pair by hand: token 0 against token 3 in window 2 has offset (-1, -1), row 0.",
           _index_with(lambda index, w: index(w).T.copy()), misconception="sign_reversed"),
    Mutant("no_shift", "swin_relative_index", "the offsets are not shifted by w - 1",
           "check that every row lies in 0 .. (2w - 1)^2 - 1.",
           _index_with(_no_shift), misconception="no_shift"),
    Mutant("stride_w", "swin_relative_index", "the row offset steps by w instead of 2w - 1",
           "check that all (2w - 1)^2 rows are used, one per offset.",
           _index_with(_stride_w), misconception="stride_w"),
])]
