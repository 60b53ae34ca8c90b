r"""Exercises in which the reader writes a test: scored by the mutants the test catches.

Chapter 6 asks for ``test_rope_properties(apply_rotary, RotaryEmbedding)``. The grader runs
the reader's test on the reference (it must pass) and on every mutant of
``mutants.py`` beside this file (it must fail on each). Each reader test below is written
the way a reader might write it.
"""
import csv
import re
import subprocess
import sys

import pytest

from exercises.grading.generate import generated_text, region_labels
from exercises.grading.grader import format_results, grade_jobs, summary
from exercises.grading.modules import reader_tests
from exercises.grading.modules.exercise_text import fill, reference_body
from exercises.grading.paths import ROOT, SOLUTIONS

LABEL = region_labels((SOLUTIONS / "rope.py").read_text())["test_rope_properties"]   # "Exercise 6.N"
NUMBER = LABEL.split()[-1]
MUTANTS = [m.key for m in reader_tests("rope")["test_rope_properties"].mutants]

SETUP = """
rope = RotaryEmbedding(8)
g = xp.random.default_rng(1)
q, k = g.standard_normal(8), g.standard_normal(8)

def score(m, n):
    cm, sm = rope(1, offset=m)
    cn, sn = rope(1, offset=n)
    return float(xp.sum(apply_rotary(q[None], cm, sm) * apply_rotary(k[None], cn, sn)))
"""

READER_TESTS = {
    # checks only that shapes come out right: every mutant keeps shapes
    "shapes_only": """
cos, sin = RotaryEmbedding(8)(5)
x = xp.ones((2, 5, 8))
assert apply_rotary(x, cos, sin).shape == x.shape
""",
    # the relative property alone, both halves of it
    "relative_only": SETUP + """
assert math.isclose(score(3, 1), score(103, 101), rel_tol=1e-9)
assert not math.isclose(score(3, 1), score(3, 2), rel_tol=1e-3)
""",
    # never asserts anything
    "asserts_nothing": """
cos, sin = RotaryEmbedding(8)(3)
apply_rotary(xp.ones((3, 8)), cos, sin)
""",
    # expects the wrong sign: fails on the reference
    "fails_the_reference": """
cos, sin = RotaryEmbedding(4)(1, offset=1)
turned = apply_rotary(xp.asarray([[1.0, 0.0, 0.0, 0.0]]), cos, sin)[0]
assert math.isclose(float(turned[2]), -math.sin(1.0)), "expected the pair to turn clockwise"
""",
    # calls the implementations with a wrong signature: crashes on the reference
    "crashes_on_the_reference": """
cos, sin = RotaryEmbedding(8)(5, 0, 1)
""",
}


def _reader_file(folder, name, body):
    path = folder / f"{name}.py"
    path.write_text(fill(generated_text("rope"), LABEL, body))
    return path


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reader_tests")
    files = {name: _reader_file(folder, name, body) for name, body in READER_TESTS.items()}
    files["reference"] = _reader_file(folder, "reference", reference_body("rope", LABEL))
    results = grade_jobs([{"target": "rope.test_rope_properties", "source": p} for p in files.values()], timeout=10)
    return dict(zip(files, results)), files


def test_a_good_test_catches_every_mutant(graded):
    r = graded[0]["reference"]
    assert (r["status"], r["kind"]) == ("pass", "pass"), r["message"]
    assert r["caught"] == [len(MUTANTS), len(MUTANTS)] and len(MUTANTS) >= 8
    assert f"catches all {len(MUTANTS)} mutants" in r["message"]


def test_a_shape_only_test_is_weak_and_lists_every_mutant(graded):
    r = graded[0]["shapes_only"]
    assert (r["status"], r["kind"], r["caught"]) == ("fail", "weak_test", [0, len(MUTANTS)]), r["message"]
    assert all(f"  - {key} (" in r["message"] for key in MUTANTS), r["message"]
    assert summary(r) == f"fail: weak test (caught 0 of {len(MUTANTS)})"


def test_a_relative_only_test_lets_through_what_it_cannot_see(graded):
    r = graded[0]["relative_only"]
    assert (r["status"], r["kind"]) == ("fail", "weak_test"), r["message"]
    got_away = set(re.search(r"got away: ([^.]*)\.", r["message"]).group(1).split(", "))
    # a backwards turn, an extra position and swapped tables keep every score a function of n - m, and a
    # scale that grows along T never shows in calls one position at a time
    assert got_away == {"sign_error", "positions_from_one", "cos_sin_swapped", "per_position_scale"}, r["message"]
    assert r["caught"] == [len(MUTANTS) - 4, len(MUTANTS)]
    assert "What catches it: check the direction" in r["message"]  # the hint says what to add


def test_a_test_that_asserts_nothing_never_passes(graded):
    r = graded[0]["asserts_nothing"]
    assert (r["status"], r["kind"], r["caught"]) == ("fail", "weak_test", [0, len(MUTANTS)]), r["message"]


def test_a_test_that_fails_the_reference_is_told_so(graded):
    r = graded[0]["fails_the_reference"]
    assert (r["status"], r["kind"]) == ("fail", "fails_reference"), r["message"]
    assert "expected the pair to turn clockwise" in r["message"] and "fails_the_reference.py" in r["message"]
    assert summary(r) == "fail: fails the reference"
    crash = graded[0]["crashes_on_the_reference"]
    assert (crash["kind"], "raises TypeError" in crash["message"]) == ("fails_reference", True), crash["message"]


def test_an_unwritten_test_is_not_attempted(tmp_path):
    path = tmp_path / "rope.py"
    path.write_text(generated_text("rope"))
    [r] = grade_jobs([{"target": "rope.test_rope_properties", "source": path}])
    assert r["status"] == "not attempted"


@pytest.mark.slow
def test_grade_and_grade_folder_report_reader_tests(graded, tmp_path):
    files = graded[1]
    out = subprocess.run([sys.executable, "-m", "exercises", "grade", "rope", "--file", str(files["relative_only"])],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert re.search(rf"{LABEL}\s+test_rope_properties\s+FAIL", out.stdout), out.stdout + out.stderr
    assert f"weak test: caught {len(MUTANTS) - 4} of {len(MUTANTS)} mutants" in out.stdout
    class_dir = tmp_path / "class"
    class_dir.mkdir()
    (class_dir / "ada.py").write_text(files["relative_only"].read_text())
    subprocess.run([sys.executable, "-m", "exercises", "grade-folder", str(class_dir), "--out", str(tmp_path / "r")],
                   capture_output=True, text=True, cwd=ROOT, timeout=240, check=True)
    with open(tmp_path / "r.csv") as f:
        row = next(csv.DictReader(f))
    assert row[f"{NUMBER} test_rope_properties"] == f"fail: weak test (caught {len(MUTANTS) - 4} of {len(MUTANTS)})"
    assert "weak test" in format_results([graded[0]["relative_only"]])
