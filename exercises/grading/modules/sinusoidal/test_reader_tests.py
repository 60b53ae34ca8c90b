r"""Chapter 2's test the reader writes (Exercise 2.3), graded the way readers write it.

A good test catches every mutant of ``mutants.py`` beside this file; the weak ones below let
through exactly the mutants they cannot see, and the grader lists them.
"""
import pytest

from exercises.grading.modules.exercise_text import assert_catches_every_mutant, got_away

MODULE, LABEL, TEST = "sinusoidal", "Exercise 2.3", "test_sinusoidal_properties"

READER_TESTS = {
    # the defining property alone, one step, the default base
    "shift_by_one_only": """
pe = sinusoidal_positional_encoding(20, 8)
assert xp.allclose(pe[1:], pe[:-1] @ shift_rotation(1, 8).T)
""",
    # position 0 by hand, nothing else
    "row_zero_only": """
assert xp.allclose(sinusoidal_positional_encoding(3, 8)[0], xp.asarray([0.0, 1.0] * 4))
""",
}

GOT_AWAY = {  # what each weak test cannot see
    "shift_by_one_only": {"base_ignored", "positions_from_one", "angle_not_scaled_by_k"},
    "row_zero_only": {"exponent_i_over_d", "exponent_4i_over_d", "base_ignored", "rotates_backwards",
                      "halves_pairing", "angle_not_scaled_by_k"},
}



def test_the_reference_test_catches_every_mutant(graded):
    assert_catches_every_mutant(graded["reference"], MODULE, TEST, at_least=8)


@pytest.mark.parametrize("name", sorted(GOT_AWAY))
def test_a_weak_test_lets_through_what_it_cannot_see(graded, name):
    r = graded[name]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    assert got_away(r) == GOT_AWAY[name], r["message"]
