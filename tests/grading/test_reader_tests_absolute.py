r"""Chapters 2 and 3's tests the reader writes (Exercises 2.3 and 3.3), graded the way readers write them.

A good test catches every mutant of ``exercises/grading/mutants/sinusoidal.py`` or ``learned.py``;
the weak ones below let through exactly the mutants they cannot see, and the grader lists them.
"""
import re
from pathlib import Path

import pytest

from exercise_text import fill, reference_body
from exercises.grading.generate import generated_text
from exercises.grading.grader import grade_jobs
from exercises.grading.mutants import reader_tests

ROOT = Path(__file__).resolve().parents[2]

READER_TESTS = {
    ("sinusoidal", "Exercise 2.3", "test_sinusoidal_properties"): {
        # the defining property alone, one step, the default base
        "shift_by_one_only": """
pe = sinusoidal_positional_encoding(20, 8)
assert xp.allclose(pe[1:], pe[:-1] @ shift_rotation(1, 8).T)
""",
        # position 0 by hand, nothing else
        "row_zero_only": """
assert xp.allclose(sinusoidal_positional_encoding(3, 8)[0], xp.asarray([0.0, 1.0] * 4))
""",
    },
    ("learned", "Exercise 3.3", "test_learned_positions"): {
        # rows checked with an offset, decoding checked with one sequence and a one-token prefill
        "one_sequence_one_token_prefill": """
w = xp.arange(40.0).reshape(10, 4)
assert xp.array_equal(position_rows(w, 3, 5)[0], w[5:8]) and position_rows(w, 3, 5).shape == (1, 3, 4)
params = table_lm_params(seed=0)
ids = xp.asarray([[1, 5, 2, 7, 3, 3]])
assert xp.allclose(cached_decode(params, ids, 1), table_lm_step(params, ids)[0])
""",
    },
}

GOT_AWAY = {  # what each weak test cannot see
    "shift_by_one_only": {"base_ignored", "positions_from_one", "angle_not_scaled_by_k"},
    "row_zero_only": {"exponent_i_over_d", "exponent_4i_over_d", "base_ignored", "rotates_backwards",
                      "halves_pairing", "angle_not_scaled_by_k"},
    "one_sequence_one_token_prefill": {"no_refusal", "counted_in_calls", "counted_in_rows"},
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reader_tests_absolute")
    jobs, names = [], []
    for (module, label, test), bodies in READER_TESTS.items():
        for name, body in dict(bodies, **{f"reference_{module}": reference_body(module, label)}).items():
            path = folder / name / f"{module}.py"
            path.parent.mkdir()
            path.write_text(fill(generated_text(module), label, body))
            jobs.append({"target": f"{module}.{test}", "source": path})
            names.append(name)
    return dict(zip(names, grade_jobs(jobs, timeout=20)))


@pytest.mark.parametrize("module, test", [("sinusoidal", "test_sinusoidal_properties"),
                                          ("learned", "test_learned_positions")])
def test_the_reference_test_catches_every_mutant(graded, module, test):
    n = len(reader_tests(module)[test].mutants)
    r = graded[f"reference_{module}"]
    assert (r["status"], r["caught"]) == ("pass", [n, n]) and n >= 8, r["message"]


@pytest.mark.parametrize("name", sorted(GOT_AWAY))
def test_a_weak_test_lets_through_what_it_cannot_see(graded, name):
    r = graded[name]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    got_away = set(re.search(r"got away: ([^.]*)\.", r["message"]).group(1).split(", "))
    assert got_away == GOT_AWAY[name], r["message"]
