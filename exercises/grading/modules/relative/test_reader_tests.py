r"""The reader test of chapter 4, scored by its mutants: a good test, and weak ones as readers write them.

Exercise 4.3 asks for ``test_relative_positions(clipped_relative_index, relative_shift)``. The
reference test must catch every mutant of ``mutants.py`` beside this file; a test that checks
one property, or one shape, lets through exactly the mutants that keep it.
"""
from exercises.grading.generate import labels_of
from exercises.grading.modules import reader_tests
from exercises.grading.modules.exercise_text import assert_catches_every_mutant, got_away

MODULE, TEST = "relative", "test_relative_positions"
LABEL = labels_of(MODULE)[TEST]
MUTANTS = [m.key for m in reader_tests(MODULE)[TEST].mutants]

READER_TESTS = {
    # the shift against the gather on one square block with no leading axes, expected values taken first;
    # the index is never looked at
    "square_block_only": """
x = xp.random.default_rng(0).standard_normal((4, 7))
i, j = xp.arange(4)[:, None], xp.arange(4)[None, :]
expected = x[i, j + 3 - i]
assert xp.array_equal(relative_shift(x), expected)
""",
    # a property alone: the index depends on j - i only, and the shift keeps the shape
    "translation_only": """
pos = xp.arange(8)
assert xp.array_equal(clipped_relative_index(pos, pos, 3), clipped_relative_index(pos + 50, pos + 50, 3))
assert relative_shift(xp.ones((2, 3, 4, 9))).shape == (2, 3, 4, 6)
""",
    "reference": None,
}



def test_the_reference_test_catches_every_mutant(graded):
    assert_catches_every_mutant(graded["reference"], MODULE, TEST, at_least=10)


def test_a_square_block_lets_the_index_and_the_shapes_through(graded):
    r = graded["square_block_only"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    assert got_away(r) == {"sign_reversed", "no_offset", "clip_off_by_one", "positions_ignored", "future_unclipped",
                           "leading_axes_ignored", "as_many_keys_as_queries", "writes_into_x"}, r["message"]


def test_translation_invariance_alone_catches_almost_nothing(graded):
    r = graded["translation_only"]
    caught = set(MUTANTS) - got_away(r)
    # every wrong index is still a function of j - i (numbering from 0 even makes it trivially so);
    # only a shift that drops keys changes the shape
    assert caught == {"as_many_keys_as_queries"}, r["message"]
