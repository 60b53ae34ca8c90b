r"""The reader test of chapter 5, scored by its mutants: a good test, and a weak one as readers write it.

Exercise 5.3 asks for ``test_buckets(relative_position_bucket, swin_relative_index)``. The
reference test must catch every mutant of ``mutants.py`` beside this file; a test that checks
the defaults and one property lets through exactly the mutants that keep them.
"""
from exercises.grading.generate import labels_of
from exercises.grading.modules import reader_tests
from exercises.grading.modules.exercise_text import assert_catches_every_mutant, got_away

MODULE, TEST = "t5", "test_buckets"
LABEL = labels_of(MODULE)[TEST]
MUTANTS = [m.key for m in reader_tests(MODULE)[TEST].mutants]

READER_TESTS = {
    # ranges with the default settings, and the Swin bias translation-invariant
    "defaults_and_invariance": """
b = relative_position_bucket(xp.arange(-300, 301))
assert int(b.min()) >= 0 and int(b.max()) <= 31
idx = swin_relative_index(3)
assert idx[0, 4] == idx[4, 8] and idx[1, 5] == idx[3, 7]
""",
    "reference": None,
}



def test_the_reference_test_catches_every_mutant(graded):
    assert_catches_every_mutant(graded["reference"], MODULE, TEST, at_least=10)


def test_defaults_and_invariance_miss_every_convention(graded):
    r = graded["defaults_and_invariance"]
    caught = set(MUTANTS) - got_away(r)
    assert caught == {"not_halved"}, r["message"]
    assert "What catches it: work one bucket by hand" in r["message"]
