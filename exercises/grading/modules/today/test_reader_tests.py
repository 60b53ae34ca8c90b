r"""Chapter 13's reader test, written the ways a reader writes it, and what the grader says.

Chapter 13 asks for ``test_sink_attention(sink_attention)``, scored against the wrong sink attentions of
``mutants.py`` beside this file. Each test below is one a reader might write.
"""
from exercises.grading.generate import labels_of
from exercises.grading.modules.exercise_text import assert_catches_every_mutant, got_away

MODULE, TEST = "today", "test_sink_attention"
LABEL = labels_of(MODULE)[TEST]

READER_TESTS = {
    # only checks that the rows keep less than all their weight: any finite sink passes, whatever its size
    "rows_below_one": """
g = xp.random.default_rng(0)
q, k = g.normal(size=(1, 2, 4, 4)), g.normal(size=(1, 2, 4, 4))
rows = sink_attention(q, k, xp.ones((1, 2, 4, 4)), xp.array([0.5, 1.0]))[..., 0]
assert (rows < 1).all()
""",
    # the hand-worked case, but one head only: every head-to-head slip gets through
    "one_head_by_hand": """
import math
q = xp.zeros((1, 1, 1, 4))
v = xp.array([[[[1.0, 2.0, 3.0, 4.0]]]])
assert xp.allclose(sink_attention(q, q, v, xp.array([math.log(2.0)])), v / 3)
""",
    # expects the rows to sum to 1, as plain attention's do: fails on the reference
    "fails_the_reference": """
rows = sink_attention(xp.zeros((1, 1, 3, 2)), xp.zeros((1, 1, 3, 2)), xp.ones((1, 1, 3, 2)), xp.array([0.0]))
assert xp.allclose(rows, 1.0), "expected every row to sum to 1"
""",
    "reference": None,
}


def test_the_reference_test_catches_every_mutant(graded):
    assert_catches_every_mutant(graded["reference"], MODULE, TEST, at_least=5)


def test_rows_below_one_misses_the_sinks_of_the_wrong_size(graded):
    r = graded["rows_below_one"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    # rows below 1 catch the missing sink and the sink's weight handed to a value (rows of exactly 1); a sink of
    # the wrong size, sign or head still takes some weight
    assert got_away(r) == {"sink_negated", "sink_scaled", "heads_swapped"}, r["message"]


def test_one_head_by_hand_lets_the_swapped_heads_through(graded):
    r = graded["one_head_by_hand"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    assert got_away(r) == {"heads_swapped"}, r["message"]
    assert "What catches it: give two heads different sinks" in r["message"]


def test_a_test_that_fails_the_reference_is_told_so(graded):
    r = graded["fails_the_reference"]
    assert (r["status"], r["kind"]) == ("fail", "fails_reference"), r["message"]
    assert "expected every row" in r["message"]
