r"""Chapter 8's reader test, written the ways a reader writes it, and what the grader says.

Chapter 8 asks for ``test_ntk_base(ntk_base)``. The grader runs the reader's test on the reference
(it must pass) and on every mutant of ``mutants.py`` beside this file (it must fail on each). Each
test below is one a reader might write; the assertions name which mutants it lets through.
"""
from exercises.grading.generate import labels_of
from exercises.grading.modules import reader_tests
from exercises.grading.modules.exercise_text import assert_catches_every_mutant, got_away

MODULE, TEST = "context_extension", "test_ntk_base"
LABEL = labels_of(MODULE)[TEST]
MUTANTS = [m.key for m in reader_tests(MODULE)[TEST].mutants]

READER_TESTS = {
    "theta_zero_only": """
for d in (32, 128):
    theta = ntk_base(10000.0, 4.0, d) ** (-xp.arange(0, d, 2) / d)
    assert theta[0] == 1.0
""",
    "last_pair_at_128_only": """
d = 128
old = 10000.0 ** (-xp.arange(0, d, 2) / d)
for s in (2.0, 4.0, 8.0):
    new = ntk_base(10000.0, s, d) ** (-xp.arange(0, d, 2) / d)
    assert math.isclose(float(old[-1] / new[-1]), s, rel_tol=1e-9)
""",
    "reference_body": None,
}



def test_the_reference_test_catches_every_mutant(graded):
    assert_catches_every_mutant(graded["reference_body"], MODULE, TEST, at_least=6)


def test_theta_zero_alone_catches_nothing(graded):
    r = graded["theta_zero_only"]
    assert (r["kind"], r["caught"]) == ("weak_test", [0, len(MUTANTS)]), r["message"]


def test_one_rotary_dimension_and_whole_factors_let_two_through(graded):
    r = graded["last_pair_at_128_only"]
    assert got_away(r) == {"rotary_dim_ignored", "integer_factor"}, r["message"]
    assert "What catches it: check more than one rotary dimension" in r["message"]
