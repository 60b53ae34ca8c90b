r"""The reader test of chapter 1, graded as a reader would write it.

Exercise 1.4 asks for ``test_self_attention_is_permutation_equivariant(self_attention,
permutation_gap)``. The grader runs it on the reference (it must pass) and on every mutant of
``mutants.py`` beside this file (it should fail on each). Each weak test below is one a reader is
likely to write; the test names exactly the mutants it lets through.
"""
import pytest

from exercises.grading.generate import labels_of
from exercises.grading.modules import reader_tests
from exercises.grading.modules.exercise_text import got_away

MODULE, TEST = "order", "test_self_attention_is_permutation_equivariant"
LABEL = labels_of(MODULE)[TEST]
MUTANTS = [m.key for m in reader_tests(MODULE)[TEST].mutants]

READER_TESTS = {
    # the book's exercise: one sequence and its reversal
    "reversal_only": """
g = xp.random.default_rng(5)
x = g.standard_normal((2, 12, 6))
W_q, W_k, W_v = (g.standard_normal((6, 6)) for _ in range(3))
rev = xp.arange(12)[::-1]
y = self_attention(x, W_q, W_k, W_v)
assert permutation_gap(y, self_attention(x[:, rev], W_q, W_k, W_v), rev) < 1e-12
""",
    # random shuffles, but a short sequence
    "short_sequence": """
g = xp.random.default_rng(6)
x = g.standard_normal((2, 6, 4))
W_q, W_k, W_v = (g.standard_normal((4, 4)) for _ in range(3))
y = self_attention(x, W_q, W_k, W_v)
for _ in range(3):
    perm = g.permutation(6)
    assert permutation_gap(y, self_attention(x[:, perm], W_q, W_k, W_v), perm) < 1e-12
""",
    # random shuffles of a long sequence, compared with xp.allclose's default tolerance
    "default_tolerance": """
g = xp.random.default_rng(7)
x = g.standard_normal((2, 12, 6))
W_q, W_k, W_v = (g.standard_normal((6, 6)) for _ in range(3))
y = self_attention(x, W_q, W_k, W_v)
for _ in range(3):
    perm = g.permutation(12)
    assert xp.allclose(self_attention(x[:, perm], W_q, W_k, W_v), y[:, perm])
""",
    # one swap of two later tokens, strictly
    "swap_two_later_tokens": """
g = xp.random.default_rng(8)
x = g.standard_normal((2, 12, 6))
W_q, W_k, W_v = (g.standard_normal((6, 6)) for _ in range(3))
perm = xp.array([0, 2, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11])
y = self_attention(x, W_q, W_k, W_v)
assert permutation_gap(y, self_attention(x[:, perm], W_q, W_k, W_v), perm) < 1e-12
""",
    # asks for invariance: the output must not change at all under a shuffle
    "asks_for_invariance": """
g = xp.random.default_rng(9)
x = g.standard_normal((2, 12, 6))
W_q, W_k, W_v = (g.standard_normal((6, 6)) for _ in range(3))
perm = g.permutation(12)
assert xp.allclose(self_attention(x[:, perm], W_q, W_k, W_v), self_attention(x, W_q, W_k, W_v))
""",
}


PREAMBLE = "import math\n"  # the bodies call math; the shared fixture (conftest.py) puts it above each


def test_the_reference_test_catches_every_mutant(graded):
    r = graded["reference"]
    assert (r["status"], r["kind"]) == ("pass", "pass"), r["message"]
    assert r["caught"] == [len(MUTANTS), len(MUTANTS)] and len(MUTANTS) >= 5


@pytest.mark.parametrize("name, escapes", [
    # a window and a penalty in |i - j| are both mirror-symmetric
    ("reversal_only", {"local_window", "symmetric_distance_penalty"}),
    ("short_sequence", {"local_window"}),
    ("default_tolerance", {"faint_position"}),
    ("swap_two_later_tokens", {"first_position_marked"}),
])
def test_a_weak_test_lets_through_exactly_what_it_cannot_see(graded, name, escapes):
    r = graded[name]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    assert got_away(r) == escapes, r["message"]
    assert "What catches it:" in r["message"]


def test_a_test_that_asks_for_invariance_fails_the_reference(graded):
    r = graded["asks_for_invariance"]
    assert (r["status"], r["kind"]) == ("fail", "fails_reference"), r["message"]
