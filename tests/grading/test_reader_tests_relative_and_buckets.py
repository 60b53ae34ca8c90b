r"""The reader tests of chapters 4 and 5, scored by their mutants: a good test, and weak ones as readers write them.

Exercise 4.3 asks for ``test_relative_positions(clipped_relative_index, relative_shift)`` and
Exercise 5.3 for ``test_buckets(relative_position_bucket, swin_relative_index)``. The reference
tests must catch every mutant of ``exercises/grading/mutants/relative.py`` and ``t5.py``; a test
that checks one property, or one shape, lets through exactly the mutants that keep it.
"""
import re
from pathlib import Path

import pytest

from exercise_text import fill, reference_body
from exercises.grading.generate import generated_text
from exercises.grading.grader import grade_jobs
from exercises.grading.mutants import reader_tests

ROOT = Path(__file__).resolve().parents[2]

TESTS = {  # module: (test name, label)
    "relative": ("test_relative_positions", "Exercise 4.3"),
    "t5": ("test_buckets", "Exercise 5.3"),
}

WEAK = {
    # the shift against the gather on one square block with no leading axes, expected values taken first;
    # the index is never looked at
    ("relative", "square_block_only"): """
x = xp.random.default_rng(0).standard_normal((4, 7))
i, j = xp.arange(4)[:, None], xp.arange(4)[None, :]
expected = x[i, j + 3 - i]
assert xp.array_equal(relative_shift(x), expected)
""",
    # a property alone: the index depends on j - i only, and the shift keeps the shape
    ("relative", "translation_only"): """
pos = xp.arange(8)
assert xp.array_equal(clipped_relative_index(pos, pos, 3), clipped_relative_index(pos + 50, pos + 50, 3))
assert relative_shift(xp.ones((2, 3, 4, 9))).shape == (2, 3, 4, 6)
""",
    # ranges with the default settings, and the Swin bias translation-invariant
    ("t5", "defaults_and_invariance"): """
b = relative_position_bucket(xp.arange(-300, 301))
assert int(b.min()) >= 0 and int(b.max()) <= 31
idx = swin_relative_index(3)
assert idx[0, 4] == idx[4, 8] and idx[1, 5] == idx[3, 7]
""",
}


def _reader_file(folder, module, name, body):
    path = folder / f"{module}_{name}.py"
    path.write_text(fill(generated_text(module), TESTS[module][1], body))
    return path


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reader_tests_ch45")
    files = {(m, "reference"): _reader_file(folder, m, "reference", reference_body(m, TESTS[m][1])) for m in TESTS}
    files.update({key: _reader_file(folder, key[0], key[1], body) for key, body in WEAK.items()})
    jobs = [{"target": f"{m}.{TESTS[m][0]}", "source": path} for (m, _), path in files.items()]
    return dict(zip(files, grade_jobs(jobs, timeout=20)))


def _mutants(module):
    return [m.key for m in reader_tests(module)[TESTS[module][0]].mutants]


def _got_away(r):
    return set(re.search(r"got away: ([^.]*)\.", r["message"]).group(1).split(", "))


@pytest.mark.parametrize("module", sorted(TESTS))
def test_the_reference_test_catches_every_mutant(graded, module):
    r, n = graded[module, "reference"], len(_mutants(module))
    assert (r["status"], r["kind"], r["caught"]) == ("pass", "pass", [n, n]), r["message"]
    assert n >= 10


def test_a_square_block_lets_the_index_and_the_shapes_through(graded):
    r = graded["relative", "square_block_only"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    assert _got_away(r) == {"sign_reversed", "no_offset", "clip_off_by_one", "positions_ignored", "future_unclipped",
                            "leading_axes_ignored", "as_many_keys_as_queries", "writes_into_x"}, r["message"]


def test_translation_invariance_alone_catches_almost_nothing(graded):
    r = graded["relative", "translation_only"]
    caught = set(_mutants("relative")) - _got_away(r)
    # every wrong index is still a function of j - i (numbering from 0 even makes it trivially so);
    # only a shift that drops keys changes the shape
    assert caught == {"as_many_keys_as_queries"}, r["message"]


def test_defaults_and_invariance_miss_every_convention(graded):
    r = graded["t5", "defaults_and_invariance"]
    caught = set(_mutants("t5")) - _got_away(r)
    assert caught == {"not_halved"}, r["message"]
    assert "What catches it: work one bucket by hand" in r["message"]
