r"""Mutants for chapter 10's reader test: eviction policies that are wrong in one realistic way.

Each wraps a correct ``keep_indices`` (the reference, or in a student copy the reader's own once
it passes) and breaks one thing. Every one with a ``misconception`` reproduces that
misconception of ``keep_indices`` exactly: ``tests/grading/test_grader.py`` grades each mutant against
the exercise's checks to prove it.
"""
from exercises.grading.reader_tests import Mutant, ReaderTest, wraps_function
from mini_transformer.engine.backend import xp


def _keep_with(change):
    """A mutant of keep_indices: ``change(keep_indices, n_tokens, window, n_sink)`` in place of the call."""
    def make(keep_indices):
        @wraps_function(keep_indices)
        def keep_indices_mutant(n_tokens, window, n_sink):
            return change(keep_indices, n_tokens, window, n_sink)
        return keep_indices_mutant
    return make


def _full(change):
    """Only a full cache (window None) is passed through untouched: every mutant here is about the window."""
    return _keep_with(lambda f, n, w, s: f(n, w, s) if w is None else change(f, n, w, s))


def _duplicates(f, n, w, s):
    kept = f(n, w, s)
    if len(kept) < n:
        return kept  # once the cache is full the two ranges no longer overlap
    return xp.concatenate([xp.arange(min(s, n)), xp.arange(max(n - w, 0), n)])


def _recent_first(f, n, w, s):
    kept = f(n, w, s)
    if len(kept) == n:
        return kept
    return xp.concatenate([kept[s:], kept[:s]])


READER_TESTS = [ReaderTest("test_cache_policy", [
    Mutant("no_sinks", "keep_indices", "evicts the sinks with everything else",
           "with n_sink > 0 and a long stream, index 0 must still be kept.",
           _full(lambda f, n, w, s: f(n, w, 0)), misconception="no_sinks"),
    Mutant("window_counts_sinks", "keep_indices", "counts the sinks inside the window",
           "once the cache is full it holds n_sink + window tokens, the last `window` of them recent.",
           _full(lambda f, n, w, s: f(n, w - s, s)), misconception="window_counts_sinks"),
    Mutant("window_off_by_one", "keep_indices", "keeps window + 1 recent tokens",
           "the cache never holds more than n_sink + window tokens.",
           _full(lambda f, n, w, s: f(n, w + 1, s)), misconception="window_off_by_one"),
    Mutant("duplicates_before_full", "keep_indices", "keeps tokens twice before the cache fills",
           "the indices are distinct, also when n_tokens < n_sink + window.",
           _full(_duplicates), misconception="duplicates_before_full"),
    Mutant("recent_first", "keep_indices", "puts the window before the sinks",
           "the indices increase: the sinks come first.",
           _full(_recent_first), misconception="recent_first"),
])]
