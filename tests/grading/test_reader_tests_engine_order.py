r"""The reader tests of chapters 0 and 1, graded as a reader would write them.

Exercise 0.3 asks for ``test_softmax_and_its_gradient(softmax, softmax_backward)`` and Exercise 1.4
for ``test_self_attention_is_permutation_equivariant(self_attention, permutation_gap)``. The grader
runs each on the reference (it must pass) and on every mutant of
``exercises/grading/mutants/engine.py`` and ``order.py`` (it should fail on each). Each weak test
below is one a reader is likely to write; the test names exactly the mutants it lets through.
"""
import re
from pathlib import Path

import pytest

from exercise_text import fill, reference_body
from exercises.grading.generate import generated_text
from exercises.grading.grader import grade_jobs
from exercises.grading.mutants import reader_tests

ROOT = Path(__file__).resolve().parents[2]
ENGINE = [m.key for m in reader_tests("engine")["test_softmax_and_its_gradient"].mutants]
ORDER = [m.key for m in reader_tests("order")["test_self_attention_is_permutation_equivariant"].mutants]

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

ENGINE_TESTS = {
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

ORDER_TESTS = {
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


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reader_tests_engine_order")
    jobs, names = [], []
    for module, label, target, tests in [("engine", "Exercise 0.3", "engine.test_softmax_and_its_gradient", ENGINE_TESTS),
                                         ("order", "Exercise 1.4", "order.test_self_attention_is_permutation_equivariant",
                                          ORDER_TESTS)]:
        for name, body in dict(tests, reference=reference_body(module, label)).items():
            path = folder / module / f"{name}.py"
            path.parent.mkdir(exist_ok=True)
            path.write_text(fill(generated_text(module), label, "import math\n" + body))
            jobs.append({"target": target, "source": path})
            names.append((module, name))
    return dict(zip(names, grade_jobs(jobs, timeout=20)))


def _got_away(r):
    return set(re.search(r"got away: ([^.]*)\.", r["message"]).group(1).split(", "))


@pytest.mark.parametrize("module, mutants", [("engine", ENGINE), ("order", ORDER)])
def test_the_reference_test_catches_every_mutant(graded, module, mutants):
    r = graded[module, "reference"]
    assert (r["status"], r["kind"]) == ("pass", "pass"), r["message"]
    assert r["caught"] == [len(mutants), len(mutants)] and len(mutants) >= 5


@pytest.mark.parametrize("module, name, escapes", [
    ("engine", "forward_only", {"diagonal_only", "missing_output_factor", "sum_over_everything", "zero_gradient"}),
    # d/dx sum(softmax(x)) = 0: a backward that is 0 along gy = 1 passes, and no mask means no mask mutant shows
    ("engine", "gradient_of_the_sum", {"no_max_subtraction", "mask_ignored", "mask_zero_filled", "masked_after_normalising",
                                       "missing_output_factor", "zero_gradient"}),
    # one row has no second axis to normalise over by mistake, and no other row to mix in
    ("engine", "one_row", {"no_max_subtraction", "wrong_axis", "mask_ignored", "mask_zero_filled",
                           "masked_after_normalising", "sum_over_everything"}),
    # a window and a penalty in |i - j| are both mirror-symmetric
    ("order", "reversal_only", {"local_window", "symmetric_distance_penalty"}),
    ("order", "short_sequence", {"local_window"}),
    ("order", "default_tolerance", {"faint_position"}),
    ("order", "swap_two_later_tokens", {"first_position_marked"}),
])
def test_a_weak_test_lets_through_exactly_what_it_cannot_see(graded, module, name, escapes):
    r = graded[module, name]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    assert _got_away(r) == escapes, r["message"]
    assert "What catches it:" in r["message"]


def test_a_test_that_asks_for_invariance_fails_the_reference(graded):
    r = graded["order", "asks_for_invariance"]
    assert (r["status"], r["kind"]) == ("fail", "fails_reference"), r["message"]
