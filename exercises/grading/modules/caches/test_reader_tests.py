r"""The test readers write in chapter 10, scored by the mutants it catches.

Chapter 10 asks for ``test_cache_policy(keep_indices)``. Each reader test below is written the way
a reader might write it; the grader must pass the good one, name the mutants a weak one lets
through, and say so when a test fails on the reference.
"""
from exercises.grading.generate import labels_of
from exercises.grading.modules.exercise_text import assert_catches_every_mutant, got_away

MODULE, TEST = "caches", "test_cache_policy"
LABEL = labels_of(MODULE)[TEST]

READER_TESTS = {
    # looks only at a full cache long after it filled, and only at its size
    "size_when_full": """
for n in (20, 50):
    assert len(keep_indices(n, 8, 4)) == 12
""",
    # checks distinctness and bounds everywhere, but never the sizes or which tokens stay
    "no_size_check": """
for n in range(0, 20):
    kept = [int(i) for i in keep_indices(n, 6, 2)]
    assert kept == sorted(set(kept)) and all(0 <= i < n for i in kept)
""",
    # expects the window to include the sinks: fails on the reference
    "fails_the_reference": """
assert len(keep_indices(30, 8, 4)) == 8, "expected the sinks to count in the window"
""",
    "reference": None,
}



def test_the_reference_test_catches_every_mutant(graded):
    assert_catches_every_mutant(graded["reference"], MODULE, TEST, at_least=5)


def test_a_size_only_cache_test_misses_the_order_and_the_early_steps(graded):
    r = graded["size_when_full"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    # the sizes catch every window slip; the order and the steps before the cache fills are never looked at
    assert got_away(r) == {"duplicates_before_full", "recent_first"}, r["message"]


def test_a_cache_test_without_sizes_misses_the_window_mutants(graded):
    r = graded["no_size_check"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    assert got_away(r) == {"no_sinks", "window_counts_sinks", "window_off_by_one"}, r["message"]


def test_a_test_that_fails_the_reference_is_told_so(graded):
    r = graded["fails_the_reference"]
    assert (r["status"], r["kind"]) == ("fail", "fails_reference"), r["message"]
    assert "expected the" in r["message"]
