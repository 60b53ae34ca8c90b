r"""Chapters 7 and 8's reader tests, written the ways a reader writes them, and what the grader says.

Chapter 7 asks for ``test_alibi(alibi_slopes, alibi_bias)`` and chapter 8 for
``test_ntk_base(ntk_base)``. The grader runs the reader's test on the reference (it must pass)
and on every mutant of ``exercises/grading/mutants/alibi.py`` and ``.../context_extension.py``
(it must fail on each). Each test below is one a reader might write; the assertions name which
mutants it lets through.
"""
import re
from pathlib import Path

import pytest

from exercise_text import fill, reference_body
from exercises.grading.generate import generated_text, region_labels
from exercises.grading.grader import grade_jobs
from exercises.grading.mutants import reader_tests

ROOT = Path(__file__).resolve().parents[2]
TESTS = {"alibi": "test_alibi", "context_extension": "test_ntk_base"}


def label(module):
    return region_labels((ROOT / "solutions" / f"{module}.py").read_text())[TESTS[module]]


def mutants(module):
    return [m.key for m in reader_tests(module)[TESTS[module]].mutants]


READER_TESTS = {
    ("alibi", "eight_heads_only"): """
assert xp.allclose(alibi_slopes(8), 2.0 ** -xp.arange(1.0, 9.0))
b = alibi_bias(8, 5, 5)
assert b.shape == (1, 8, 5, 5)
assert xp.allclose(b[0, :, 4, 0], -4 * alibi_slopes(8))
""",
    ("alibi", "square_and_past_only"): """
assert xp.allclose(alibi_slopes(6), 2.0 ** -xp.asarray([2.0, 4, 6, 8, 1, 3]))
b = alibi_bias(4, 6, 6)
m = 2.0 ** -xp.asarray([2.0, 4, 6, 8])
for i in range(6):
    for j in range(i + 1):
        assert abs(float(b[0, 0, i, j]) + float(m[0]) * (i - j)) < 1e-12
""",
    ("alibi", "reference_body"): None,
    ("context_extension", "theta_zero_only"): """
for d in (32, 128):
    theta = ntk_base(10000.0, 4.0, d) ** (-xp.arange(0, d, 2) / d)
    assert theta[0] == 1.0
""",
    ("context_extension", "last_pair_at_128_only"): """
d = 128
old = 10000.0 ** (-xp.arange(0, d, 2) / d)
for s in (2.0, 4.0, 8.0):
    new = ntk_base(10000.0, s, d) ** (-xp.arange(0, d, 2) / d)
    assert math.isclose(float(old[-1] / new[-1]), s, rel_tol=1e-9)
""",
    ("context_extension", "reference_body"): None,
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reader_tests_ch78")
    jobs, keys = [], []
    for (module, name), body in READER_TESTS.items():
        path = folder / name / f"{module}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(fill(generated_text(module), label(module), body or reference_body(module, label(module))))
        jobs.append({"target": f"{module}.{TESTS[module]}", "source": path})
        keys.append((module, name))
    return dict(zip(keys, grade_jobs(jobs, timeout=20)))


def got_away(r):
    return set(re.search(r"got away: ([^.]*)\.", r["message"]).group(1).split(", "))


@pytest.mark.parametrize("module", sorted(TESTS))
def test_the_reference_test_catches_every_mutant(graded, module):
    r = graded[module, "reference_body"]
    n = len(mutants(module))
    assert (r["status"], r["caught"]) == ("pass", [n, n]) and n >= 6, r["message"]


def test_eight_heads_only_misses_the_rule_for_other_head_counts_and_the_decode_row(graded):
    r = graded["alibi", "eight_heads_only"]
    assert r["kind"] == "weak_test", r["message"]
    # 8 is a power of two, T_q = T_k puts every query where it belongs, and the one value it checks is
    # a past key: nothing looks at the keys after the query
    assert got_away(r) == {"non_power_of_two", "next_power_of_two", "queries_at_start", "future_not_clamped",
                           "symmetric_in_causal"}, r["message"]


def test_past_keys_of_a_square_bias_miss_the_future_and_the_decode_row(graded):
    r = graded["alibi", "square_and_past_only"]
    assert r["kind"] == "weak_test", r["message"]
    # every key it reads is at or before its query in a square bias: the keys after the query and the
    # decode row are never looked at; a bias without its batch axis is caught, but by a crash
    assert got_away(r) == {"queries_at_start", "future_not_clamped", "symmetric_in_causal"}, r["message"]
    assert "missing_batch_axis (by IndexError, not by an assertion)" in r["message"]


def test_theta_zero_alone_catches_nothing(graded):
    r = graded["context_extension", "theta_zero_only"]
    assert (r["kind"], r["caught"]) == ("weak_test", [0, len(mutants("context_extension"))]), r["message"]


def test_one_rotary_dimension_and_whole_factors_let_two_through(graded):
    r = graded["context_extension", "last_pair_at_128_only"]
    assert got_away(r) == {"rotary_dim_ignored", "integer_factor"}, r["message"]
    assert "What catches it: check more than one rotary dimension" in r["message"]
