r"""The test readers write in chapter 9, scored by the mutants it catches.

Chapter 9 asks for ``test_long_context_measures(loss_inside_and_beyond, effective_context_length)``.
Each reader test below is written the way a reader might write it; the grader must pass the good
one, name the mutants a weak one lets through, and say so when a test fails on the reference.
"""
from exercises.grading.generate import labels_of
from exercises.grading.modules.exercise_text import assert_catches_every_mutant, got_away

MODULE, TEST = "long_context", "test_long_context_measures"
LABEL = labels_of(MODULE)[TEST]

READER_TESTS = {
    # random inputs against a formula of its own: the boundary and the grid rules never come up
    "random_only": """
g = xp.random.default_rng(0)
x = g.random((3, 10))
inside, beyond = loss_inside_and_beyond(x, 4)
assert math.isclose(float(inside), float(x[:, :4].mean()))
assert math.isclose(float(beyond), float(x[:, 4:].mean()))
assert effective_context_length(xp.asarray([8, 16]), xp.asarray([0.9, 0.9])) == 16
""",
    # the split checked well, the grid with one case: a failure in the middle catches the two index slips only
    "split_only": """
for L in (2, 5):
    step = xp.concatenate([xp.zeros((1, L)), xp.ones((1, 3))], axis=1)
    assert [float(v) for v in loss_inside_and_beyond(step, L)] == [0.0, 1.0]
assert effective_context_length(xp.asarray([8, 16, 32]), xp.asarray([0.9, 0.1, 0.9])) == 8
""",
    # believes the effective length is the longest passing one: fails on the reference
    "fails_the_reference": """
assert effective_context_length(xp.asarray([8, 16, 32]), xp.asarray([0.9, 0.1, 0.9])) == 32, "expected the longest"
""",
    "reference": None,
}



def test_the_reference_test_catches_every_mutant(graded):
    assert_catches_every_mutant(graded["reference"], MODULE, TEST, at_least=5)


def test_a_random_input_test_misses_the_boundary_and_the_grid_rules(graded):
    r = graded["random_only"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    # a formula computed from the same slice agrees with any boundary; the one grid has no failure, no NaN,
    # no depths and no cell at the threshold
    assert got_away(r) >= {"longest_passing", "mean_over_depths", "strict_threshold", "nan_passes"}, r["message"]
    assert "sides_swapped" not in got_away(r)


def test_a_split_only_test_lets_the_grid_mutants_through(graded):
    r = graded["split_only"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    assert got_away(r) == {"mean_over_depths", "strict_threshold", "nan_passes"}, r["message"]
    assert "What catches it: a grid with a cell exactly at the threshold" in r["message"]


def test_a_test_that_fails_the_reference_is_told_so(graded):
    r = graded["fails_the_reference"]
    assert (r["status"], r["kind"]) == ("fail", "fails_reference"), r["message"]
    assert "expected the" in r["message"]
