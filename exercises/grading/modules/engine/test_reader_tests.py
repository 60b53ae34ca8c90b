r"""The reader test of chapter 0, graded as a reader would write it.

Exercise 0.3 asks for ``test_softmax_and_its_gradient(softmax, softmax_backward)``. The grader runs
it on the reference (it must pass) and on every mutant of ``mutants.py`` beside this file (it
should fail on each). Each weak test below is one a reader is likely to write; the test names
exactly the mutants it lets through.
"""
import pytest

from exercises.grading.generate import labels_of
from exercises.grading.modules import reader_tests
from exercises.grading.modules.exercise_text import got_away

MODULE, TEST = "engine", "test_softmax_and_its_gradient"
LABEL = labels_of(MODULE)[TEST]
MUTANTS = [m.key for m in reader_tests(MODULE)[TEST].mutants]

ROWS = """
g = xp.random.default_rng(3)
x = g.standard_normal((2, 3, 5))
mask = xp.tril(xp.ones((3, 5), dtype=bool))
"""

CENTRAL = """
def numeric(x, gy, mask=None, h=1e-5):
    out = xp.zeros(x.size)
    for j in range(x.size):
        up, down = x.copy(), x.copy()
        up.reshape(-1)[j] += h
        down.reshape(-1)[j] -= h
        out[j] = ((gy * softmax(up, mask)).sum() - (gy * softmax(down, mask)).sum()) / (2 * h)
    return out.reshape(x.shape)
"""

READER_TESTS = {
    # the forward's properties, and nothing about the backward
    "forward_only": ROWS + """
y = softmax(x, mask)
assert xp.allclose(y.sum(axis=-1), 1.0)
assert (y[:, ~mask] == 0).all()
assert xp.allclose(softmax(x + 1000.0, mask), y)
""",
    # the backward against central differences, but of sum(softmax(x)), whose gradient is 0
    "gradient_of_the_sum": ROWS + CENTRAL + """
ones = xp.ones(x.shape)
assert xp.allclose(softmax_backward(softmax(x), ones), numeric(x, ones), atol=1e-8)
""",
    # the backward with random weights, on one row without a mask; the forward by its sum only
    "one_row": CENTRAL + """
g = xp.random.default_rng(4)
x, gy = g.standard_normal(6), g.standard_normal(6)
y = softmax(x)
assert abs(float(y.sum()) - 1.0) < 1e-12
assert xp.allclose(softmax_backward(y, gy), numeric(x, gy), atol=1e-8)
""",
}


PREAMBLE = "import math\n"  # the bodies call math; the shared fixture (conftest.py) puts it above each


def test_the_reference_test_catches_every_mutant(graded):
    r = graded["reference"]
    assert (r["status"], r["kind"]) == ("pass", "pass"), r["message"]
    assert r["caught"] == [len(MUTANTS), len(MUTANTS)] and len(MUTANTS) >= 5


@pytest.mark.parametrize("name, escapes", [
    ("forward_only", {"diagonal_only", "missing_output_factor", "sum_over_everything", "zero_gradient"}),
    # d/dx sum(softmax(x)) = 0: a backward that is 0 along gy = 1 passes, and no mask means no mask mutant shows
    ("gradient_of_the_sum", {"no_max_subtraction", "mask_ignored", "mask_zero_filled", "masked_after_normalising",
                             "missing_output_factor", "zero_gradient"}),
    # one row has no second axis to normalise over by mistake, and no other row to mix in
    ("one_row", {"no_max_subtraction", "wrong_axis", "mask_ignored", "mask_zero_filled",
                 "masked_after_normalising", "sum_over_everything"}),
])
def test_a_weak_test_lets_through_exactly_what_it_cannot_see(graded, name, escapes):
    r = graded[name]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    assert got_away(r) == escapes, r["message"]
    assert "What catches it:" in r["message"]
