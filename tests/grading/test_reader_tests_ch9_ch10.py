r"""The tests readers write in chapters 9 and 10, scored by the mutants they catch.

Chapter 9 asks for ``test_long_context_measures(loss_inside_and_beyond, effective_context_length)``,
chapter 10 for ``test_cache_policy(keep_indices)``. Each reader test below is written the way a
reader might write it; the grader must pass the good ones, name the mutants a weak one lets
through, and say so when a test fails on the reference.
"""
import re

import pytest

from exercise_text import fill, label_of, reference_body
from exercises.grading.generate import generated_text
from exercises.grading.grader import grade_jobs
from exercises.grading.mutants import reader_tests


TESTS = {
    ("long_context", "test_long_context_measures"): {
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
    },
    ("caches", "test_cache_policy"): {
        # looks only at a full cache long after it filled, and only at its size
        "size_when_full": """
for n in (20, 50):
    assert len(keep_indices(n, 8, 4)) == 12
""",
        # checks distinctness and bounds everywhere, but never the sizes or which tokens stay
        "no_size_check": """
for n in range(0, 20):
    kept = [int(i) for i in keep_indices(n, 6, 2)]
    assert kept == sorted(set(kept)) and all(0 <= i < n for i in kept)
""",
        # expects the window to include the sinks: fails on the reference
        "fails_the_reference": """
assert len(keep_indices(30, 8, 4)) == 8, "expected the sinks to count in the window"
""",
    },
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reader_tests_ch9_ch10")
    jobs, keys = [], []
    for (module, name), bodies in TESTS.items():
        for reader, body in dict(bodies, reference=reference_body(module, label_of(module, name))).items():
            path = folder / module / f"{reader}.py"
            path.parent.mkdir(exist_ok=True)
            path.write_text(fill(generated_text(module), label_of(module, name), body))
            jobs.append({"target": f"{module}.{name}", "source": path})
            keys.append((module, reader))
    return dict(zip(keys, grade_jobs(jobs, timeout=20)))


def _mutants(module, name):
    return [m.key for m in reader_tests(module)[name].mutants]


def _got_away(r):
    return set(re.search(r"got away: ([^.]*)\.", r["message"]).group(1).split(", "))


@pytest.mark.parametrize("module, name", list(TESTS))
def test_the_reference_test_catches_every_mutant(graded, module, name):
    r = graded[module, "reference"]
    n = len(_mutants(module, name))
    assert (r["status"], r["kind"]) == ("pass", "pass"), r["message"]
    assert r["caught"] == [n, n] and n >= 5


def test_a_random_input_test_misses_the_boundary_and_the_grid_rules(graded):
    r = graded["long_context", "random_only"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    # a formula computed from the same slice agrees with any boundary; the one grid has no failure, no NaN,
    # no depths and no cell at the threshold
    assert _got_away(r) >= {"longest_passing", "mean_over_depths", "strict_threshold", "nan_passes"}, r["message"]
    assert "sides_swapped" not in _got_away(r)


def test_a_split_only_test_lets_the_grid_mutants_through(graded):
    r = graded["long_context", "split_only"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    assert _got_away(r) == {"mean_over_depths", "strict_threshold", "nan_passes"}, r["message"]
    assert "What catches it: a grid with a cell exactly at the threshold" in r["message"]


def test_a_size_only_cache_test_misses_the_order_and_the_early_steps(graded):
    r = graded["caches", "size_when_full"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    # the sizes catch every window slip; the order and the steps before the cache fills are never looked at
    assert _got_away(r) == {"duplicates_before_full", "recent_first"}, r["message"]


def test_a_cache_test_without_sizes_misses_the_window_mutants(graded):
    r = graded["caches", "no_size_check"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    assert _got_away(r) == {"no_sinks", "window_counts_sinks", "window_off_by_one"}, r["message"]


@pytest.mark.parametrize("module", ["long_context", "caches"])
def test_a_test_that_fails_the_reference_is_told_so(graded, module):
    r = graded[module, "fails_the_reference"]
    assert (r["status"], r["kind"]) == ("fail", "fails_reference"), r["message"]
    assert "expected the" in r["message"]
