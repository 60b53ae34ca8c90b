r"""Teaching the book as a course: releases of several chapters, one gradebook, a Gradescope autograder.

The sample class is ``tests/grading/course_class.py`` (session 2 of ``chapters/TEACHING.md``): alice did
everything, bob one exercise and no ``learned.py``, carol's 2.1 never returns, dave's ``sinusoidal.py`` does not
parse, erin fits the public cases and writes a weak test. Its totals are counted by hand there; it is graded
once a session, by the guide's own commands (``conftest.guide_run``).
"""
import csv
import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from exercises.grading import cli, gradescope, instructor, notebooks, syllabus
from exercises.grading.errors import CommandError
from exercises.grading.grader import exercise_module_names
from exercises.grading.modules import reader_tests

sys.path.insert(0, str(Path(__file__).resolve().parent))
import course_class  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = "2"  # seconds per exercise: carol's loop costs this much, the rest takes milliseconds


def _run(*args, timeout=240, cwd=ROOT):
    out = subprocess.run([sys.executable, "-m", "exercises", *args], capture_output=True, text=True, cwd=cwd,
                         timeout=timeout)
    return out


# ---------------------------------------------------------------------------
# Releases
# ---------------------------------------------------------------------------

def _no_answers(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert not [c for c in nb.cells if set(notebooks.tags(c)) & set(notebooks.STUDENT_DROPS)]
    assert all(c.outputs == [] for c in nb.cells if c.cell_type == "code")
    assert "jupytext" not in nb.metadata
    return nb


@pytest.mark.slow
def test_release_several_chapters(guide_run):
    folder = guide_run["folder"] / "week2"  # the guide's `release 02_sinusoidal 03_learned --out week2`
    assert sorted(p.name for p in folder.iterdir()) == ["02_sinusoidal.ipynb", "03_learned.ipynb"]
    for p in folder.iterdir():
        nb = _no_answers(p)
        full = notebooks.read_chapter(p.stem)
        dropped = [c for c in full.cells if set(notebooks.tags(c)) & set(notebooks.STUDENT_DROPS)]
        assert dropped and len(nb.cells) == len(full.cells) - len(dropped)


@pytest.mark.slow
def test_release_all_writes_every_chapter(tmp_path):
    out = _run("release", "--all", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert sorted(p.stem for p in tmp_path.iterdir()) == notebooks.chapter_names()
    for p in tmp_path.iterdir():
        _no_answers(p)


@pytest.mark.parametrize("args, phrase", [
    (["02_sinusoidal", "99_nope"], "No chapter '99_nope'"),
    (["02_sinusoidal", "02_sinusoidal"], "named twice"),
    (["--all", "02_sinusoidal"], "one of the three"),
    (["--repo", "--all"], "one of the three"),
    ([], "one of the three"),
])
def test_a_bad_release_writes_nothing_and_says_why(tmp_path, args, phrase):
    out = _run("release", *args, "--out", str(tmp_path / "rel"))
    assert out.returncode != 0 and phrase in out.stderr, out.stderr
    assert not (tmp_path / "rel").exists()


# ---------------------------------------------------------------------------
# One gradebook over several modules, on the sample class (graded once a session, by the guide's commands:
# conftest.guide_run)
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def graded_class(guide_run):
    folder = guide_run["folder"]
    stdout = next(d.stdout for line, d in guide_run["ran"] if "grade-folder" in line and "--manual" not in line)
    with open(folder / "week2.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return folder, stdout, rows, json.loads((folder / "week2.json").read_text())


EXERCISE_COLUMNS = ["2.1 sinusoidal_positional_encoding", "2.2 shift_rotation", "2.3 test_sinusoidal_properties",
                    "3.1 position_rows", "3.2 cached_decode", "3.3 test_learned_positions"]


@pytest.mark.slow
def test_the_gradebook_has_one_row_per_student_and_a_column_per_exercise(graded_class):
    _, stdout, rows, _ = graded_class
    assert [r["student"] for r in rows] == ["alice", "bob", "carol", "dave", "erin"]
    assert list(rows[0]) == ["student",
                             "2.1 sinusoidal_positional_encoding", "2.2 shift_rotation",
                             "2.3 test_sinusoidal_properties", "2.3 test_sinusoidal_properties mutants",
                             "3.1 position_rows", "3.2 cached_decode",
                             "3.3 test_learned_positions", "3.3 test_learned_positions mutants",
                             "sinusoidal exercises", "learned exercises", "chapter 02 written", "points", "out_of"]
    assert "alice                    12 of 31  (13 written items not graded yet)" in stdout


@pytest.mark.slow
def test_the_gradebook_points_are_the_hand_counted_ones(graded_class):
    _, _, rows, book = graded_class
    by = {r["student"]: r for r in rows}
    exercise_points = {s: float(r["sinusoidal exercises"]) + float(r["learned exercises"]) for s, r in by.items()}
    assert exercise_points == course_class.EXPECTED_POINTS
    assert {s["student"]: s["exercise_points"] for s in book["students"]} == course_class.EXPECTED_POINTS
    assert {s["exercise_out_of"] for s in book["students"]} == {course_class.OUT_OF}
    assert book["points"] == {"sinusoidal": {"2.1": 1, "2.2": 2, "2.3": 3}, "learned": {"3.1": 1, "3.2": 2, "3.3": 3}}

    assert all(by["alice"][c] == "pass" for c in EXERCISE_COLUMNS)
    assert by["bob"]["2.1 sinusoidal_positional_encoding"] == "pass"
    assert by["bob"]["2.2 shift_rotation"] == "not attempted"
    assert {by["bob"][c] for c in EXERCISE_COLUMNS[3:]} == {"fail: missing"}  # no learned.py: zero, not a crash
    assert by["carol"]["2.1 sinusoidal_positional_encoding"] == "fail: timeout"
    assert by["carol"]["2.2 shift_rotation"] == "pass" and by["carol"]["3.3 test_learned_positions"] == "pass"
    assert {by["dave"][c] for c in EXERCISE_COLUMNS[:3]} == {"fail: import"}
    assert by["dave"]["3.2 cached_decode"] == "pass" and by["dave"]["3.1 position_rows"] == "not attempted"
    dave = next(s for s in book["students"] if s["student"] == "dave")
    assert "line" in dave["results"]["2.1 sinusoidal_positional_encoding"]["message"]
    bob = next(s for s in book["students"] if s["student"] == "bob")
    assert bob["files"]["learned"] is None and "no learned.py" in bob["results"]["3.1 position_rows"]["message"]


@pytest.mark.slow
def test_a_reader_test_scores_the_fraction_of_mutants_it_catches(graded_class):
    _, _, rows, book = graded_class
    by = {r["student"]: r for r in rows}
    n_sin = len(reader_tests("sinusoidal")["test_sinusoidal_properties"].mutants)
    n_learned = len(reader_tests("learned")["test_learned_positions"].mutants)
    assert by["alice"]["2.3 test_sinusoidal_properties mutants"] == f"{n_sin} of {n_sin}"
    assert by["alice"]["3.3 test_learned_positions mutants"] == f"{n_learned} of {n_learned}"
    assert by["bob"]["2.3 test_sinusoidal_properties mutants"] == ""  # never ran on the mutants
    assert book["mutant_columns"] == ["2.3 test_sinusoidal_properties mutants", "3.3 test_learned_positions mutants"]
    # erin's test checks one shift with the default base: 3 of the 9 mutants escape (the reader-test file of
    # the module lists them: base_ignored, positions_from_one, angle_not_scaled_by_k); 3 points * 6/9 = 2
    assert by["erin"]["2.3 test_sinusoidal_properties"] == "fail: weak test (caught 6 of 9)"
    assert by["erin"]["2.3 test_sinusoidal_properties mutants"] == "6 of 9"
    erin = next(s for s in book["students"] if s["student"] == "erin")
    assert erin["results"]["2.3 test_sinusoidal_properties"]["points"] == 2.0


@pytest.mark.slow
def test_held_out_cases_fail_the_student_who_fit_the_public_ones(graded_class):
    folder, _, rows, book = graded_class
    by = {r["student"]: r for r in rows}
    assert by["erin"]["2.1 sinusoidal_positional_encoding"] == "fail (held-out): numbers"
    erin = next(s for s in book["students"] if s["student"] == "erin")["results"]["2.1 sinusoidal_positional_encoding"]
    assert (erin["public"], erin["held_out"], erin["failed_on"], erin["points"]) == ("pass", "fail", "held-out", 0)
    assert "(held out)" not in erin["message"] and "Input" not in erin["message"]  # no held-out input shown
    alice = next(s for s in book["students"] if s["student"] == "alice")["results"]
    assert alice["2.1 sinusoidal_positional_encoding"]["held_out"] == "pass"
    # graded on the public cases alone (what `grade` does at home), erin's grade is one point higher
    public = instructor.grade_student(folder / "submissions" / "erin", course_class.MODULES, timeout=3,
                                      held_out=False)
    row = instructor.gradebook_row(public)
    assert row["points"] == course_class.PUBLIC_ONLY_POINTS["erin"] == course_class.EXPECTED_POINTS["erin"] + 1


@pytest.mark.slow
def test_feedback_files_per_student_at_both_levels(graded_class, tmp_path):
    from exercises.grading import feedback_files
    folder, _, _, book = graded_class
    names = sorted(p.name for p in (folder / "feedback").iterdir())
    assert names == sorted(f"{s}.{x}" for s in course_class.EXPECTED_POINTS for x in ("md", "html"))
    summative = (folder / "feedback" / "erin.md").read_text()
    assert "weak test: 3 of 9 mutants escaped your test" in summative
    for secret in ("base_ignored", "positions_from_one", "angle_not_scaled_by_k", "What catches it"):
        assert secret not in summative  # no mutant named, no catching input
    html_text = (folder / "feedback" / "erin.html").read_text()
    assert html_text.startswith("<!DOCTYPE html>") and "weak test: 3 of 9 mutants" in html_text
    # the same book at the formative level: the mutants that escaped, and what catches each
    formative = feedback_files.write_files(book, tmp_path, "formative")
    text = (tmp_path / "erin.md").read_text()
    assert len(formative) == 10 and "base_ignored" in text and "What catches it" in text


def test_feedback_html_escapes_what_the_student_wrote():
    from exercises.grading import feedback_files
    student = {"student": "mallory", "exercise_points": 0, "exercise_out_of": 1, "points": 0, "out_of": 1,
               "written": {}, "results": {"2.1 sinusoidal_positional_encoding": {
                   "target": "sinusoidal.sinusoidal_positional_encoding", "label": "Exercise 2.1", "status": "fail",
                   "kind": "import", "misconception": None, "points": 0, "possible": 1,
                   "message": "line 3: <script>alert(1)</script>"}}}
    page = feedback_files.page(student, "formative")
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.slow
def test_the_canvas_csv_imports_the_same_totals(graded_class):
    folder, _, rows, book = graded_class
    with open(folder / "week2_canvas.csv", newline="") as f:
        canvas = list(csv.reader(f))
    assert canvas[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert canvas[1][0].strip() == "Points Possible"
    assert [float(x) for x in canvas[1][5:]] == [6, 6, 19]  # 1 + 2 + 3 per module; 7 claims + 6 questions * 2
    by = {r["student"]: r for r in rows}
    for line in canvas[2:]:
        assert sum(float(x) for x in line[5:]) == float(by[line[0]]["points"])
    assert sum(float(x) for x in canvas[1][5:]) == float(rows[0]["out_of"])


def test_gradebook_row_counts_a_weak_test_as_its_share_of_the_points():
    results = [{"target": "t5.test_buckets", "label": "Exercise 5.3", "status": "fail", "kind": "weak_test",
                "misconception": None, "message": "weak test: caught 3 of 10", "caught": [3, 10]},
               {"target": "t5.swin_relative_index", "label": "Exercise 5.2", "status": "pass", "kind": "pass",
                "misconception": None, "message": "ok"}]
    row = instructor.gradebook_row(results, {"t5": {"5.3": 3, "5.2": 2}})
    assert row["cells"] == {"5.3 test_buckets": "fail: weak test (caught 3 of 10)", "5.2 swin_relative_index": "pass"}
    assert row["mutants"] == {"5.3 test_buckets mutants": "3 of 10"}
    assert (row["points"], row["out_of"]) == (0.9 + 2, 5)  # 3 points * 3/10, and 2
    failed_reference = dict(results[0], kind="fails_reference")
    assert instructor.gradebook_row([failed_reference], {"t5": {"5.3": 3}})["points"] == 0


def test_all_modules_means_every_exercise_module(monkeypatch, tmp_path, capsys):
    seen = {}

    def fake(folder, out, modules, **kwargs):
        seen["modules"] = modules
        return {"students": [], "csv": "c", "json": "j"}
    monkeypatch.setattr(instructor, "grade_folder_modules", fake)
    for args in (["--all-modules"], ["--module", "all"]):
        seen.clear()
        assert cli.main(["grade-folder", str(tmp_path), "--out", str(tmp_path / "b"), *args]) == 0
        assert seen["modules"] == exercise_module_names() and len(seen["modules"]) >= 7
    # the refusal is the command line's: its sentence on stderr and exit code 1, no traceback
    assert cli.main(["grade-folder", str(tmp_path), "--out", str(tmp_path / "b"), "--module", "rope", "nope"]) == 1
    assert "no exercise module nope" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# Gradescope
# ---------------------------------------------------------------------------

VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}


def validate_gradescope(data):
    r"""The fields and types of Gradescope's results.json (see ``gradescope.py``'s docstring for the source)."""
    assert isinstance(data, dict)
    known = {"score", "execution_time", "output", "visibility", "stdout_visibility", "extra_data", "tests",
             "leaderboard", "output_format"}
    assert not set(data) - known, f"fields Gradescope does not document: {set(data) - known}"
    number = (int, float)
    if "score" in data:
        assert isinstance(data["score"], number) and not isinstance(data["score"], bool)
    if "execution_time" in data:
        assert isinstance(data["execution_time"], number) and data["execution_time"] >= 0
    if "output" in data:
        assert isinstance(data["output"], str)
    for key in ("visibility", "stdout_visibility"):
        if key in data:
            assert data[key] in VISIBILITY
    tests = data.get("tests", [])
    assert isinstance(tests, list)
    assert "score" in data or all("score" in t for t in tests), "a score, top-level or on every test"
    for t in tests:
        assert isinstance(t, dict)
        assert not set(t) - {"score", "max_score", "status", "name", "name_format", "number", "output",
                             "output_format", "tags", "visibility", "extra_data"}, set(t)
        assert isinstance(t["name"], str) and t["name"]
        assert isinstance(t["score"], number) and isinstance(t["max_score"], number)
        assert 0 <= t["score"] <= t["max_score"]
        assert isinstance(t["output"], str)
        if "status" in t:
            assert t["status"] in ("passed", "failed")
        if "visibility" in t:
            assert t["visibility"] in VISIBILITY
        if "number" in t:
            assert isinstance(t["number"], str)
    return True


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gradescope")
    out = _run("gradescope", "--out", str(folder / "autograder"), "--module", *course_class.MODULES,
               "--timeout", TIMEOUT)
    assert out.returncode == 0, out.stdout + out.stderr
    return folder / "autograder"


@pytest.mark.slow
def test_the_bundle_has_what_gradescope_runs(bundle):
    for name in ("setup.sh", "run_autograder"):
        assert (bundle / name).stat().st_mode & stat.S_IXUSR and (bundle / name).read_text().startswith("#!")
    assert (bundle / "workbook" / "solutions" / "sinusoidal.py").is_file()
    assert (bundle / "workbook" / "exercises" / "grading" / "worker.py").is_file()
    with zipfile.ZipFile(bundle.with_suffix(".zip")) as z:
        names = set(z.namelist())
    assert {"setup.sh", "run_autograder", "workbook/exercises/grading/gradescope.py"} <= names  # at the zip's root
    assert "--module sinusoidal learned --timeout 2" in (bundle / "run_autograder").read_text()
    assert json.loads((bundle / "workbook" / "points.json").read_text())["learned"] == {"3.1": 1, "3.2": 2, "3.3": 3}
    assert not (bundle / "workbook" / "exercises" / "grading" / "instructor_only").exists()  # no rubric


@pytest.mark.slow
@pytest.mark.parametrize("student", sorted(course_class.EXPECTED_POINTS))
def test_run_autograder_grades_each_student_into_a_valid_results_json(bundle, tmp_path, student):
    course_class.build(tmp_path / "class")
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    os.symlink(bundle / "workbook", root / "source" / "workbook")
    os.rename(tmp_path / "class" / student, root / "submission")
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable, AUTOGRADER_USER="")
    env.pop("PYTHONPATH", None)  # the bundle's own copy of the workbook grades, not this checkout
    out = subprocess.run(["bash", str(bundle / "run_autograder")], capture_output=True, text=True, env=env,
                         cwd=str(root), timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads((root / "results" / "results.json").read_text())
    assert validate_gradescope(data)
    assert data["score"] == course_class.EXPECTED_POINTS[student] == sum(t["score"] for t in data["tests"])
    assert [t["name"] for t in data["tests"]][:2] == ["2.1 sinusoidal_positional_encoding", "2.2 shift_rotation"]
    assert len(data["tests"]) == 6 and sum(t["max_score"] for t in data["tests"]) == course_class.OUT_OF
    if student == "bob":
        assert "learned.py" in data["output"]
    if student == "erin":  # the same text as her feedback file, at the bundle's level (formative here)
        assert "held-out cases: fail" in data["tests"][0]["output"] and data["tests"][0]["score"] == 0
        assert data["tests"][2]["score"] == 2.0 and "base_ignored" in data["tests"][2]["output"]
    if student == "carol":
        assert data["tests"][0]["output"].startswith("public cases: fail; held-out cases: not run\ntimeout")


def test_a_grader_failure_still_writes_a_results_json(monkeypatch, tmp_path):
    def broken(*args, **kwargs):
        raise RuntimeError("disk full")
    monkeypatch.setattr(instructor, "grade_student", broken)
    data = gradescope.grade_submission(tmp_path, tmp_path / "results" / "results.json", ["t5"])
    assert validate_gradescope(json.loads((tmp_path / "results" / "results.json").read_text()))
    assert data["score"] == 0 and "disk full" in data["output"] and "not your fault" in data["output"]


def test_the_validator_refuses_what_gradescope_does_not_read():
    good = {"score": 1.0, "tests": [{"name": "6.1 rotate_half", "score": 1.0, "max_score": 1.0, "output": ""}]}
    assert validate_gradescope(good)
    for bad in ({"tests": [{"name": "x", "max_score": 1.0, "output": ""}]},
                dict(good, visibility="students"), dict(good, grade=3),
                {"score": 1.0, "tests": [{"name": "x", "score": 2.0, "max_score": 1.0, "output": ""}]},
                {"score": "1", "tests": []}):
        with pytest.raises(AssertionError):
            validate_gradescope(bad)


def test_the_bundle_refuses_a_folder_inside_the_workbook_or_not_empty(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(CommandError, match="not empty"):
        gradescope.bundle(tmp_path / "full", ["t5"])
    with pytest.raises(CommandError, match="inside the workbook"):
        gradescope.bundle(ROOT / "gradescope_bundle", ["t5"])


# ---------------------------------------------------------------------------
# The syllabus: minutes from the chapters' exercise headings
# ---------------------------------------------------------------------------

def test_exercise_headings_give_numbers_stars_and_minutes():
    text = ("# ### Exercise 6.2: `apply_rotary`   ★ · 10 min\n"
            "# ### Exercises 6.8 and 6.9: `a` and `b`   ★ · 5 min each\n"
            "# ### Exercise 7.1: `alibi_slopes`   ★★☆ · 10 min\n"
            "# ### Exercise 0.3: `test_x`   ★★★ · 20 min\n"
            "# ## Exercise 9.9 in prose, not a heading · 5 min\n")
    found = syllabus.exercises_in(text)
    assert [(e.number, e.stars, e.minutes) for e in found] == [("6.2", 1, 10), ("6.8", 1, 5), ("6.9", 1, 5),
                                                               ("7.1", 2, 10), ("0.3", 3, 20)]


def test_the_syllabus_lists_every_chapter_and_sums_its_minutes():
    table = syllabus.table()
    for name in notebooks.chapter_names():
        assert name in table
    rope = syllabus.exercises_in(notebooks.chapter_path("06_rope").read_text())
    assert [e.number for e in rope] == [f"6.{i}" for i in range(1, 11)]  # every exercise of chapter 6, once
    line = next(l for l in table.splitlines() if l.startswith("06_rope"))
    assert line.split()[1:4] == ["10", f"{sum(e.stars == 1 for e in rope)}/{sum(e.stars == 2 for e in rope)}/"
                                 f"{sum(e.stars == 3 for e in rope)}", str(sum(e.minutes for e in rope))]
    assert line.split()[-1] == "rope"


@pytest.mark.slow
def test_all_modules_gives_full_marks_to_the_reference_and_zero_to_what_is_missing(all_modules_graded):
    # zoe hands in every module's reference, yann nothing; graded with `grade-folder --all-modules` (conftest.py)
    out, folder = all_modules_graded
    assert out.returncode == 0, out.stdout + out.stderr
    with open(folder / "book.csv", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    n = sum(len(instructor.targets_of(m)) for m in exercise_module_names())
    stars = sum(e.stars for name in notebooks.chapter_names()  # one point a star, from every exercise heading
                for e in syllabus.exercises_in(notebooks.chapter_path(name).read_text()))
    assert (rows["zoe"]["points"], rows["zoe"]["out_of"]) == (str(stars), str(stars))
    assert (rows["yann"]["points"], rows["yann"]["out_of"]) == ("0", str(stars))
    exercise_cols, mutant_cols = instructor.gradebook_columns(exercise_module_names())
    assert len(exercise_cols) == n and all(rows["yann"][c] == "fail: missing" for c in exercise_cols)
    for c in mutant_cols:  # every test the reader writes catches all its mutants in the reference
        caught, _, total = rows["zoe"][c].split()
        assert caught == total and int(total) > 0


def test_a_single_file_in_a_several_module_gradebook_is_missing_with_a_reason(tmp_path):
    folder = tmp_path / "submissions"
    folder.mkdir()
    (folder / "bob.py").write_text(course_class.partly("t5", {"5.1"}))  # one file: which module would it be?
    book = instructor.grade_folder_modules(folder, tmp_path / "book", ["sinusoidal", "t5"], timeout=2)
    (bob,) = book["students"]
    # one point a star: 2.1 ★, 2.2 ★★, 2.3 ★★★; 5.1 ★★, 5.2 ★★, 5.3 ★★★ (the chapters' headings) = 13
    assert (bob["student"], bob["points"], bob["out_of"]) == ("bob", 0, 13)
    assert {r["kind"] for r in bob["results"].values()} == {"missing"}
    assert "a folder per student holding exercises/t5.py" in bob["results"]["5.1 relative_position_bucket"]["message"]
