r"""Chapter 3's test the reader writes (Exercise 3.3), graded the way readers write it.

A good test catches every mutant of ``mutants.py`` beside this file; the weak one below lets
through exactly the mutants it cannot see, and the grader lists them.
"""
import pytest

from exercises.grading.modules.exercise_text import assert_catches_every_mutant, got_away

MODULE, LABEL, TEST = "learned", "Exercise 3.3", "test_learned_positions"

READER_TESTS = {
    # rows checked with an offset, decoding checked with one sequence and a one-token prefill
    "one_sequence_one_token_prefill": """
w = xp.arange(40.0).reshape(10, 4)
assert xp.array_equal(position_rows(w, 3, 5)[0], w[5:8]) and position_rows(w, 3, 5).shape == (1, 3, 4)
params = table_lm_params(seed=0)
ids = xp.asarray([[1, 5, 2, 7, 3, 3]])
assert xp.allclose(cached_decode(params, ids, 1), table_lm_step(params, ids)[0])
""",
}

GOT_AWAY = {  # what each weak test cannot see
    "one_sequence_one_token_prefill": {"no_refusal", "counted_in_calls", "counted_in_rows"},
}



def test_the_reference_test_catches_every_mutant(graded):
    assert_catches_every_mutant(graded["reference"], MODULE, TEST, at_least=8)


@pytest.mark.parametrize("name", sorted(GOT_AWAY))
def test_a_weak_test_lets_through_what_it_cannot_see(graded, name):
    r = graded[name]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    assert got_away(r) == GOT_AWAY[name], r["message"]
