r"""Mutants for chapter 4's reader test: a clipped index or a relative shift, wrong in one realistic way.

Each wraps a correct ``clipped_relative_index`` or ``relative_shift`` (the reference, or in a
student copy the reader's own once it passes) and breaks one thing, the way a reader's code
breaks. Every one with a ``misconception`` reproduces that misconception of the wrapped exercise
exactly: ``tests/grading/test_grader.py`` grades each mutant against the exercise's checks to prove it.
"""
from exercises.grading.reader_tests import Mutant, ReaderTest, wraps_function
from mini_transformer.engine.backend import xp


def _index_with(change):
    """A mutant of clipped_relative_index: ``change(index, q_pos, k_pos, k)`` in place of the call."""
    def make(clipped_relative_index):
        @wraps_function(clipped_relative_index)
        def clipped_relative_index_mutant(q_pos, k_pos, k):
            return change(clipped_relative_index, q_pos, k_pos, k)
        return clipped_relative_index_mutant
    return make


def _shift_with(change):
    """A mutant of relative_shift: ``change(relative_shift, x)`` in place of the call."""
    def make(relative_shift):
        @wraps_function(relative_shift)
        def relative_shift_mutant(x):
            return change(relative_shift, x)
        return relative_shift_mutant
    return make


def _future_unclipped(index, q_pos, k_pos, k):
    # clip(j - i, -k, infinity) + k: keys ahead keep their distance, rows past 2k
    far = index(q_pos, k_pos, 10 ** 6) - 10 ** 6 + k                     # j - i + k, unclipped
    return xp.where(far > 2 * k, far, index(q_pos, k_pos, k))


def _wrong_way(shift, x):
    # row i starts i columns in: the distances read in the other order
    return shift(x[..., ::-1, :])[..., ::-1, :]


def _one_column_right(shift, x):
    # every row one column further right, a zero at the end (no pad column in front)
    right = xp.concatenate([x[..., 1:], xp.zeros(x.shape[:-1] + (1,), dtype=x.dtype)], axis=-1)
    return shift(right)


def _one_column_left(shift, x):
    # every row one column further left, a zero in front (T_q - 1 entries dropped instead of T_q)
    left = xp.concatenate([xp.zeros(x.shape[:-1] + (1,), dtype=x.dtype), x[..., :-1]], axis=-1)
    return shift(left)


def _first_slice_everywhere(shift, x):
    # the leading axes ignored: every (batch, head) slice gets the first slice's result
    T_q, L = x.shape[-2:]
    first = shift(x.reshape(-1, T_q, L)[0])                              # (T_q, T_k)
    return xp.broadcast_to(first, x.shape[:-2] + first.shape).copy()


def _as_many_keys_as_queries(shift, x):
    # T_k taken to be T_q: too few keys whenever T_k > T_q
    T_q = x.shape[-2]
    return shift(x)[..., :T_q]


def _no_shift(shift, x):
    # the first T_k columns as they are
    T_q, L = x.shape[-2:]
    return x[..., :L - T_q + 1].copy()


def _writes_into_x(shift, x):
    y = shift(x).copy()
    x[...] = 0.0                                                         # scratch space in the input
    return y


READER_TESTS = [ReaderTest("test_relative_positions", [
    Mutant("sign_reversed", "clipped_relative_index", "the distance is i - j: the past gets the future's rows",
           "work one pair by hand: a key one back must get row k - 1, not k + 1.",
           _index_with(lambda index, q, kp, k: 2 * k - index(q, kp, k)), misconception="sign_reversed"),
    Mutant("no_offset", "clipped_relative_index", "returns clip(j - i, -k, k) without adding k",
           "check that every row lies in 0 .. 2k.",
           _index_with(lambda index, q, kp, k: index(q, kp, k) - k), misconception="no_offset"),
    Mutant("clip_off_by_one", "clipped_relative_index", "clips at k - 1: a table of 2k - 1 rows",
           "work a distance of exactly k by hand: it must get row 2k (or 0), its own row.",
           _index_with(lambda index, q, kp, k: index(q, kp, k - 1)), misconception="clip_off_by_one"),
    Mutant("positions_ignored", "clipped_relative_index", "numbers queries and keys 0.. instead of by position",
           "check a decoding step: one query at position 12 against keys 0..12.",
           _index_with(lambda index, q, kp, k: index(xp.arange(len(q)), xp.arange(len(kp)), k)),
           misconception="positions_ignored"),
    Mutant("future_unclipped", "clipped_relative_index", "clips only the past: keys ahead keep their distance",
           "use a block with keys more than k ahead of a query (a bidirectional block), and check the range.",
           _index_with(_future_unclipped)),
    Mutant("wrong_way", "relative_shift", "the rows shift the other way (row i starts i columns in)",
           "compare with the direct gather x[..., i, j + T_q - 1 - i] on a block with T_q > 1.",
           _shift_with(_wrong_way), misconception="wrong_way"),
    Mutant("one_column_right", "relative_shift", "every row one column too far right (the pad column missing)",
           "compare with the direct gather, entry by entry.",
           _shift_with(_one_column_right)),
    Mutant("one_column_left", "relative_shift", "every row one column too far left (one entry too few dropped)",
           "compare with the direct gather, entry by entry.",
           _shift_with(_one_column_left), misconception="drop_off_by_one"),
    Mutant("leading_axes_ignored", "relative_shift", "every (batch, head) slice gets the first slice's result",
           "test with batch and head axes in front, x of shape (B, H, T_q, L) with random entries.",
           _shift_with(_first_slice_everywhere)),
    Mutant("as_many_keys_as_queries", "relative_shift", "keeps T_q columns instead of T_k = L - T_q + 1",
           "test one query against many keys (T_q = 1) and check the shape.",
           _shift_with(_as_many_keys_as_queries)),
    Mutant("no_shift", "relative_shift", "returns the first T_k columns unshifted",
           "compare with the direct gather on a block with T_q > 1.",
           _shift_with(_no_shift)),
    Mutant("writes_into_x", "relative_shift", "returns the right result but overwrites its input",
           "keep a copy of x from before the call and compare afterwards.",
           _shift_with(_writes_into_x)),
])]
