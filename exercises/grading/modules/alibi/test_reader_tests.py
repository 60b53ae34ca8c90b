r"""Chapter 7's reader test, written the ways a reader writes it, and what the grader says.

Chapter 7 asks for ``test_alibi(alibi_slopes, alibi_bias)``. The grader runs the reader's test on
the reference (it must pass) and on every mutant of ``mutants.py`` beside this file (it must fail
on each). Each test below is one a reader might write; the assertions name which mutants it lets
through.
"""
from exercises.grading.generate import labels_of
from exercises.grading.modules.exercise_text import assert_catches_every_mutant, got_away

MODULE, TEST = "alibi", "test_alibi"
LABEL = labels_of(MODULE)[TEST]

READER_TESTS = {
    "eight_heads_only": """
assert xp.allclose(alibi_slopes(8), 2.0 ** -xp.arange(1.0, 9.0))
b = alibi_bias(8, 5, 5)
assert b.shape == (1, 8, 5, 5)
assert xp.allclose(b[0, :, 4, 0], -4 * alibi_slopes(8))
""",
    "square_and_past_only": """
assert xp.allclose(alibi_slopes(6), 2.0 ** -xp.asarray([2.0, 4, 6, 8, 1, 3]))
b = alibi_bias(4, 6, 6)
m = 2.0 ** -xp.asarray([2.0, 4, 6, 8])
for i in range(6):
    for j in range(i + 1):
        assert abs(float(b[0, 0, i, j]) + float(m[0]) * (i - j)) < 1e-12
""",
    "reference_body": None,
}



def test_the_reference_test_catches_every_mutant(graded):
    assert_catches_every_mutant(graded["reference_body"], MODULE, TEST, at_least=6)


def test_eight_heads_only_misses_the_rule_for_other_head_counts_and_the_decode_row(graded):
    r = graded["eight_heads_only"]
    assert r["kind"] == "weak_test", r["message"]
    # 8 is a power of two, T_q = T_k puts every query where it belongs, and the one value it checks is
    # a past key: nothing looks at the keys after the query
    assert got_away(r) == {"non_power_of_two", "next_power_of_two", "queries_at_start", "future_not_clamped",
                           "symmetric_in_causal"}, r["message"]


def test_past_keys_of_a_square_bias_miss_the_future_and_the_decode_row(graded):
    r = graded["square_and_past_only"]
    assert r["kind"] == "weak_test", r["message"]
    # every key it reads is at or before its query in a square bias: the keys after the query and the
    # decode row are never looked at; a bias without its batch axis is caught, but by a crash
    assert got_away(r) == {"queries_at_start", "future_not_clamped", "symmetric_in_causal"}, r["message"]
    assert "missing_batch_axis (by IndexError, not by an assertion)" in r["message"]
