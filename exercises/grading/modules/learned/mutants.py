r"""Mutants for chapter 3's reader test: table lookups and decoding loops wrong in one realistic way.

Each wraps a correct ``position_rows`` or ``cached_decode`` (the reference, or in a student copy
the reader's own once it passes). A lookup mutant calls the correct lookup and then breaks what
it returns; a decoding mutant runs the correct loop with a ``step`` that gets the offsets wrong
the way a reader's loop does. Every one with a ``misconception`` reproduces that misconception of
the wrapped exercise exactly: ``tests/grading/test_grader.py`` grades each mutant against the exercise's
checks to prove it.
"""
from exercises.grading.reader_tests import Mutant, ReaderTest, wraps_function


def _rows_with(change):
    """A mutant of position_rows: ``change(position_rows, weight, T, offset)`` in place of the call."""
    def make(position_rows):
        @wraps_function(position_rows)
        def position_rows_mutant(weight, T, offset=0):
            return change(position_rows, weight, T, offset)
        return position_rows_mutant
    return make


def _from_zero(rows, weight, T, offset):
    rows(weight, T, offset)  # refuses what the right lookup refuses ...
    return rows(weight, T, 0)  # ... and returns the first rows


def _one_late(rows, weight, T, offset):
    rows(weight, T, offset)
    return rows(weight, min(T, weight.shape[0] - offset - 1), offset + 1)  # a slice that starts one late runs short


def _unchecked(rows, weight, T, offset):
    return rows(weight, max(0, min(T, weight.shape[0] - offset)), offset)  # the rows that exist, no error


def _decode_with(change):
    r"""A mutant of cached_decode: the right loop, whose model call sees ``change(offset, cache, ids_new, calls)``.

    ``calls`` counts the calls before this one; ``change`` returns the ``(cache, offset)`` passed on.
    """
    def make(cached_decode):
        @wraps_function(cached_decode)
        def cached_decode_mutant(params, ids, prefill, step=None):
            inner = step if step is not None else cached_decode.__globals__["table_lm_step"]
            calls = []

            def skewed(params_, ids_new, cache=None, offset=0):
                cache, offset = change(offset, cache, ids_new, len(calls))
                calls.append(offset)
                return inner(params_, ids_new, cache, offset)
            return cached_decode(params, ids, prefill, step=skewed)
        return cached_decode_mutant
    return make


READER_TESTS = [ReaderTest("test_learned_positions", [
    Mutant("offset_ignored", "position_rows", "returns rows 0 .. T - 1 whatever the offset",
           "check position_rows(w, 3, 5) against rows 5, 6, 7 of w.",
           _rows_with(_from_zero), misconception="offset_ignored"),
    Mutant("rows_one_late", "position_rows", "returns rows offset + 1 .. offset + T",
           "check the rows themselves, with an offset, and the last row of the table.",
           _rows_with(_one_late), misconception="off_by_one"),
    Mutant("no_batch_axis", "position_rows", "returns (T, d_model) without the batch axis",
           "check the shape: (1, T, d_model).",
           _rows_with(lambda rows, weight, T, offset: rows(weight, T, offset)[0]), misconception="no_batch_axis"),
    Mutant("no_refusal", "position_rows", "a position past the table returns no rows instead of an error",
           "ask for a position past the last row and expect ValueError.",
           _rows_with(_unchecked), misconception="no_refusal"),
    Mutant("offset_reset", "cached_decode", "every decoded token at offset 0",
           "compare cached decoding with the full forward pass at every position.",
           _decode_with(lambda offset, cache, ids_new, calls: (cache, 0 if cache is not None else offset)),
           misconception="offset_reset"),
    Mutant("decode_one_ahead", "cached_decode", "every decoded token one position too far",
           "compare cached decoding with the full forward pass at every position.",
           _decode_with(lambda offset, cache, ids_new, calls: (cache, offset + 1 if cache is not None else offset)),
           misconception="off_by_one"),
    Mutant("counted_in_calls", "cached_decode", "the offset counts calls of the model, not tokens",
           "use a prefill of more than one token: then calls and tokens differ.",
           _decode_with(lambda offset, cache, ids_new, calls: (cache, calls)), misconception="counted_in_calls"),
    Mutant("counted_in_rows", "cached_decode", "the offset counts the rows of the whole batch, B times too many",
           "use a batch of more than one sequence.",
           _decode_with(lambda offset, cache, ids_new, calls: (cache, offset * ids_new.shape[0])),
           misconception="counted_in_rows"),
    Mutant("cache_dropped", "cached_decode", "each decoded token is run without the cache",
           "compare cached decoding with the full forward pass at every position.",
           _decode_with(lambda offset, cache, ids_new, calls: (None, offset)), misconception="cache_dropped"),
])]
