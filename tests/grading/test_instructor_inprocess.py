r"""``instructor`` called in this process (so mutation testing reaches it): which file is found in a
student's folder, what row each student gets, the order of rows and the refusals, word for word.

The grader itself is replaced by a stand-in (``grade_file`` below) that reads a word from the handed-in
file, and the module by a toy one (``toy``: exercises 1.1 ``a`` and 1.2 ``b``), so every expected cell is
worked out by hand. ``test_instructor.py`` runs the real grader in subprocesses."""
import csv
import json
import types
from pathlib import Path

import pytest

from exercises.grading import instructor

LABELS = {"toy": {"a": "Exercise 1.1", "b": "Exercise 1.2"}, "two": {"c": "Exercise 2.1"},
          "cls": {"K.m": "Exercise 3.1"}, "rope": {"a": "Exercise 6.1"},  # cls: a method, a dotted name
          "ten": {"x": "Exercise 1.10", "y": "Exercise 1.9"}}
TESTS = {"toy": ("b",), "ten": ("x", "y"), "cls": ("K.m",)}  # the tests the reader writes


def fake_grade_file(calls):
    r"""A grader that reads the file: ``PASS`` passes both, ``HALF`` passes ``a`` only, ``CRASH`` raises."""
    def grade_file(path, module, **kwargs):
        calls.append(dict(kwargs, path=Path(path), module=module))
        text = Path(path).read_text()
        if "CRASH" in text:
            raise ValueError("boom")
        out = []
        for key in instructor.targets_of(module):
            ok = "PASS" in text or ("HALF" in text and key.endswith(".a"))
            out.append({"target": key, "label": "x", "status": "pass" if ok else "fail",
                        "kind": None if ok else "numbers", "misconception": None if ok else "sign_error",
                        "message": None if ok else "wrong numbers", "public": 3})
        if "CAUGHT" in text:
            out[0]["caught"] = [2, 3]
        return out
    return grade_file


@pytest.fixture
def calls(monkeypatch):
    seen = []
    monkeypatch.setattr(instructor, "knowledge", lambda m: types.SimpleNamespace(labels=LABELS[m],
                                                                                   tests=TESTS.get(m, ())))
    monkeypatch.setattr(instructor, "targets_of", lambda m: [f"{m}.{n}" for n in LABELS[m]])
    monkeypatch.setattr(instructor, "grade_file", fake_grade_file(seen))
    return seen


def put(root, rel, text="PASS"):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


# ---------------------------------------------------------------------------
# module_file: the shallowest <module>.py, ties by name; links refused
# ---------------------------------------------------------------------------

def test_module_file_takes_the_shallowest_file_then_the_first_by_name(tmp_path):
    put(tmp_path, "s/alice/deep/er/toy.py")
    put(tmp_path, "s/alice/b/toy.py")
    put(tmp_path, "s/alice/a/toy.py")
    put(tmp_path, "s/alice/a/other.py")
    entry = tmp_path / "s" / "alice"
    assert instructor.module_file(entry, "toy", tmp_path / "s") == (entry / "a" / "toy.py", None)
    put(tmp_path, "s/alice/toy.py")
    assert instructor.module_file(entry, "toy", tmp_path / "s") == (entry / "toy.py", None)


def test_module_file_depth_counts_before_name(tmp_path):
    put(tmp_path, "s/al/z/toy.py")
    put(tmp_path, "s/al/a/a/toy.py")  # "a/a/toy.py" < "z/toy.py" by name, but deeper
    entry = tmp_path / "s" / "al"
    assert instructor.module_file(entry, "toy", tmp_path / "s") == (entry / "z" / "toy.py", None)


def test_module_file_says_which_file_is_missing(tmp_path):
    put(tmp_path, "s/alice/exercises/rope.py")
    assert instructor.module_file(tmp_path / "s" / "alice", "toy", tmp_path / "s") == (
        None, "no toy.py in this student's folder")


def test_module_file_refuses_a_linked_file(tmp_path):
    target = put(tmp_path, "elsewhere/toy.py")
    (tmp_path / "s" / "alice" / "exercises").mkdir(parents=True)
    (tmp_path / "s" / "alice" / "exercises" / "toy.py").symlink_to(target)
    assert instructor.module_file(tmp_path / "s" / "alice", "toy", tmp_path / "s") == (
        None, "alice/exercises/toy.py is a link; hand in the file itself.")


def test_module_file_does_not_search_a_linked_folder(tmp_path):
    put(tmp_path, "elsewhere/toy.py")  # rglob does not follow a link to a folder, so the file is not found
    (tmp_path / "s" / "alice").mkdir(parents=True)
    (tmp_path / "s" / "alice" / "exercises").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert instructor.module_file(tmp_path / "s" / "alice", "toy", tmp_path / "s") == (
        None, "no toy.py in this student's folder")


# ---------------------------------------------------------------------------
# grade_folder: one row per student, in name order
# ---------------------------------------------------------------------------

@pytest.fixture
def klass(tmp_path):
    r"""alice (a folder, both pass), bob (a single file, half), carol (no file), dave (a link),
    erin (the grader crashes), frank (a folder holding the file at its top, caught 2 of 3); hidden
    entries and a text file skipped."""
    s = tmp_path.resolve() / "subs"
    put(s, "alice/exercises/toy.py", "PASS")
    put(s, "alice/deeper/still/toy.py", "HALF")
    put(s, "bob.py", "HALF")
    (s / "carol").mkdir()
    put(s, "carol/notes.md", "PASS")
    (s / "dave").symlink_to(s / "alice", target_is_directory=True)
    put(s, "erin/toy.py", "CRASH")
    put(s, "frank/toy.py", "HALF CAUGHT")
    put(s, ".git/toy.py", "PASS")
    put(s, "_build/toy.py", "PASS")
    put(s, "readme.txt", "PASS")
    return s


FAIL = {"status": "fail", "kind": "numbers", "misconception": "sign_error", "message": "wrong numbers"}
PASS = {"status": "pass", "kind": None, "misconception": None, "message": None}


def test_grade_folder_writes_one_row_per_student_in_name_order(klass, calls, tmp_path):
    report = instructor.grade_folder(klass, tmp_path / "report.csv", module="toy", timeout=3.5, limits="L",
                                     wrap="W", workers=1)
    assert report["module"] == "toy" and report["timeout_s"] == 3.5
    assert report["exercises"] == ["1.1 a", "1.2 b"]
    assert [s["student"] for s in report["students"]] == ["alice", "bob", "carol", "dave", "erin", "frank"]
    rows = {s["student"]: s for s in report["students"]}
    assert rows["alice"] == {"student": "alice", "file": str(klass / "alice" / "exercises" / "toy.py"),
                             "passed": 2, "total": 2, "results": {"1.1 a": PASS, "1.2 b": PASS}}
    assert rows["bob"] == {"student": "bob", "file": str(klass / "bob.py"), "passed": 1, "total": 2,
                           "results": {"1.1 a": PASS, "1.2 b": FAIL}}
    missing = {"status": "fail", "kind": "missing", "misconception": None,
               "message": "no toy.py in this student's folder"}
    assert rows["carol"] == {"student": "carol", "file": None, "passed": 0, "total": 2,
                             "results": {"1.1 a": missing, "1.2 b": missing}}
    link = {"status": "fail", "kind": "link", "misconception": None,
            "message": "dave is a link, not a file or a folder; hand in the file itself."}
    assert rows["dave"] == {"student": "dave", "file": None, "passed": 0, "total": 2,
                            "results": {"1.1 a": link, "1.2 b": link}}
    crashed = {"status": "fail", "kind": "crashed", "misconception": None,
               "message": "the grader failed on this submission: ValueError: boom"}
    assert rows["erin"] == {"student": "erin", "file": str(klass / "erin" / "toy.py"), "passed": 0, "total": 2,
                            "results": {"1.1 a": crashed, "1.2 b": crashed}}
    assert rows["frank"]["results"] == {"1.1 a": dict(PASS, caught=[2, 3]), "1.2 b": FAIL}
    assert report["csv"] == str(tmp_path / "report.csv") and report["json"] == str(tmp_path / "report.json")
    assert (tmp_path / "report.csv").read_bytes().decode() == (
        "student,1.1 a,1.2 b,passed,total\r\n"
        "alice,pass,pass,2,2\r\n"
        "bob,pass,fail: numbers sign_error,1,2\r\n"
        "carol,fail: missing,fail: missing,0,2\r\n"
        "dave,fail: hands in a link,fail: hands in a link,0,2\r\n"
        "erin,fail: crashed,fail: crashed,0,2\r\n"
        "frank,pass,fail: numbers sign_error,1,2\r\n")
    written = json.loads((tmp_path / "report.json").read_text())
    assert written == json.loads(json.dumps({k: v for k, v in report.items() if k not in ("csv", "json")}))
    assert (tmp_path / "report.json").read_text().startswith('{\n "module": "toy",\n "exercises": [\n  "1.1 a"')


def test_grade_folder_hands_each_file_to_the_grader_with_its_settings(klass, calls, tmp_path):
    instructor.grade_folder(klass, tmp_path / "book", module="toy", timeout=3.5, limits="L", wrap="W", workers=1)
    assert [c["path"] for c in calls] == [klass / "alice" / "exercises" / "toy.py", klass / "bob.py",
                                          klass / "erin" / "toy.py", klass / "frank" / "toy.py"]
    assert all(c["module"] == "toy" and c["timeout"] == 3.5 and c["limits"] == "L" and c["wrap"] == "W"
               and c["held_out"] is True and c["private_dirs"] == [klass] for c in calls)
    assert calls[0]["display"] == {str(klass / "alice" / "exercises" / "toy.py"): "subs/alice/exercises/toy.py"}
    assert calls[1]["display"] == {str(klass / "bob.py"): "subs/bob.py"}
    assert (tmp_path / "book.csv").is_file() and (tmp_path / "book.json").is_file()


def test_grade_folder_defaults(klass, calls, tmp_path):
    report = instructor.grade_folder(klass, tmp_path / "r.json", module="toy")
    assert report["timeout_s"] == instructor.DEFAULT_TIMEOUT == 10.0
    assert report["csv"] == str(tmp_path / "r.csv") and (tmp_path / "r.csv").is_file()
    assert all(c["limits"] is None and c["wrap"] is None and c["timeout"] == 10.0 for c in calls)
    assert len(report["students"]) == 6


def test_grade_folder_keeps_a_dotted_name_other_than_csv_or_json(klass, calls, tmp_path):
    report = instructor.grade_folder(klass, tmp_path / "r.csv.json", module="toy", workers=2)
    assert report["csv"] == str(tmp_path / "r.csv") and report["json"] == str(tmp_path / "r.json")
    assert list(csv.reader(open(tmp_path / "r.csv")))[0] == ["student", "1.1 a", "1.2 b", "passed", "total"]


def test_grade_folder_refuses_a_path_that_is_not_a_folder(tmp_path, calls):
    put(tmp_path, "file.txt")
    with pytest.raises(SystemExit) as e:
        instructor.grade_folder(tmp_path / "file.txt", tmp_path / "out")
    assert str(e.value) == (f"{tmp_path.resolve() / 'file.txt'} is not a folder; give the folder that holds "
                            "one entry per student.")
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "out.json").exists()


# ---------------------------------------------------------------------------
# grade_student: every module of one folder; a missing file scores zero
# ---------------------------------------------------------------------------

def test_grade_student_grades_every_module_in_order(klass, calls):
    results = instructor.grade_student(klass / "alice", ["two", "toy"], timeout=2.0, limits="L", wrap="W",
                                       held_out=False)
    assert [(r["target"], r["status"], r["kind"]) for r in results] == [
        ("two.c", "fail", "missing"), ("toy.a", "pass", None), ("toy.b", "pass", None)]
    assert results[0] == {"target": "two.c", "label": "Exercise 2.1", "status": "fail", "kind": "missing",
                          "misconception": None, "message": "no two.py in this student's folder"}
    assert len(calls) == 1 and calls[0]["path"] == klass / "alice" / "exercises" / "toy.py"
    assert calls[0]["timeout"] == 2.0 and calls[0]["limits"] == "L" and calls[0]["wrap"] == "W"
    assert calls[0]["held_out"] is False and calls[0]["private_dirs"] == [klass]
    assert calls[0]["display"] == {str(klass / "alice" / "exercises" / "toy.py"): "subs/alice/exercises/toy.py"}


def test_grade_student_defaults_and_a_named_folder(klass, calls, tmp_path):
    instructor.grade_student(klass / "frank", ["toy"])
    assert calls[0]["held_out"] is True and calls[0]["timeout"] == 10.0
    assert calls[0]["limits"] is None and calls[0]["wrap"] is None
    assert calls[0]["private_dirs"] == [klass]
    instructor.grade_student(klass / "frank", ["toy"], folder=tmp_path, name="zed")
    assert calls[1]["private_dirs"] == [tmp_path.resolve()]
    assert calls[1]["display"] == {str(klass / "frank" / "toy.py"): f"{tmp_path.name}/subs/frank/toy.py"}


def test_grade_student_a_crash_and_a_link_are_rows_not_errors(klass, calls):
    crashed = instructor.grade_student(klass / "erin", ["toy"])
    assert [r["message"] for r in crashed] == ["the grader failed on this submission: ValueError: boom"] * 2
    assert [r["label"] for r in crashed] == ["Exercise 1.1", "Exercise 1.2"]


# ---------------------------------------------------------------------------
# Survivors of the first mutation run, each worked by hand
# ---------------------------------------------------------------------------

def test_module_file_refuses_a_link_even_to_a_file_inside_the_folder(tmp_path):
    real = put(tmp_path, "s/alice/real.py")
    (tmp_path / "s" / "alice" / "exercises").mkdir()
    (tmp_path / "s" / "alice" / "exercises" / "toy.py").symlink_to(real)
    assert instructor.module_file(tmp_path / "s" / "alice", "toy", tmp_path / "s") == (
        None, "alice/exercises/toy.py is a link; hand in the file itself.")


def test_students_names_links_and_refuses_single_files_in_a_gradebook(klass):
    (klass / "gina.py").symlink_to(klass / "bob.py")
    (klass / "hal.v2").symlink_to(klass / "alice", target_is_directory=True)
    (klass / "ivan" / "exercises").mkdir(parents=True)
    (klass / "ivan" / "exercises" / "toy.py").symlink_to(klass / "bob.py")
    rows = {name: (path, problem) for name, path, problem in instructor.students(klass, "toy")}
    assert rows["gina"] == (None, "gina.py is a link, not a file or a folder; hand in the file itself.")
    assert rows["hal.v2"] == (None, "hal.v2 is a link, not a file or a folder; hand in the file itself.")
    assert rows["ivan"] == (None, "ivan/exercises/toy.py is a link; hand in the file itself.")
    assert rows["bob"] == (klass / "bob.py", None)
    book = {name: (path, problem) for name, path, problem in instructor.students(klass, "toy", single_files=False)}
    assert book["bob"] == (None, "bob.py is a single file; a gradebook over several modules needs a folder per "
                                 "student holding exercises/toy.py")
    assert book["alice"] == (klass / "alice" / "exercises" / "toy.py", None)


def test_grade_student_a_link_inside_the_folder_is_named_from_the_class_folder(klass, calls):
    (klass / "ivan" / "exercises").mkdir(parents=True)
    (klass / "ivan" / "exercises" / "toy.py").symlink_to(klass / "bob.py")
    rows = instructor.grade_student(klass / "ivan", ["toy"])
    assert [(r["target"], r["kind"], r["message"]) for r in rows] == [
        (k, "link", "ivan/exercises/toy.py is a link; hand in the file itself.") for k in ("toy.a", "toy.b")]
    assert calls == []


def test_a_dotted_exercise_name_keeps_its_label(klass, calls, tmp_path):
    put(klass, "erin/cls.py", "CRASH")
    assert instructor.grade_student(klass / "carol", ["cls"]) == [
        {"target": "cls.K.m", "label": "Exercise 3.1", "status": "fail", "kind": "missing", "misconception": None,
         "message": "no cls.py in this student's folder"}]
    assert instructor.grade_student(klass / "erin", ["cls"]) == [
        {"target": "cls.K.m", "label": "Exercise 3.1", "status": "fail", "kind": "crashed", "misconception": None,
         "message": "the grader failed on this submission: ValueError: boom"}]
    report = instructor.grade_folder(klass, tmp_path / "c", module="cls", workers=1)
    assert report["exercises"] == ["3.1 K.m"]


def test_grade_student_shows_the_full_path_outside_the_named_folders_parent(klass, calls, tmp_path):
    instructor.grade_student(klass / "frank", ["toy"], folder=tmp_path / "x" / "y")
    assert calls[0]["display"] == {str(klass / "frank" / "toy.py"): str(klass / "frank" / "toy.py")}


def test_grade_folder_grades_rope_by_default(klass, calls, tmp_path):
    assert instructor.grade_folder(klass, tmp_path / "d", workers=1)["module"] == "rope"


def test_grade_folder_drops_a_csv_suffix_before_adding_its_own(klass, calls, tmp_path):
    report = instructor.grade_folder(klass, tmp_path / "r.json.csv", module="toy", workers=1)
    assert report["csv"] == str(tmp_path / "r.csv") and report["json"] == str(tmp_path / "r.json")


# ---------------------------------------------------------------------------
# Naming modules and columns
# ---------------------------------------------------------------------------

def test_modules_named(monkeypatch):
    from exercises.grading import grader
    monkeypatch.setattr(grader, "exercise_module_names", lambda: ["sinusoidal", "rope", "alibi"])
    assert instructor.modules_named(["all"]) == ["sinusoidal", "rope", "alibi"]
    assert instructor.modules_named(["rope", "alibi", "rope"]) == ["rope", "alibi"]  # once each, in the order given
    assert instructor.modules_named(("alibi",)) == ["alibi"]
    with pytest.raises(SystemExit) as e:
        instructor.modules_named(["rope", "xpos", "all"])
    assert str(e.value) == "no exercise module xpos, all; the modules are sinusoidal, rope, alibi (or `all`)."


@pytest.mark.parametrize("col, number", [("6.2 apply_rotary", (6, 2)), ("6.10 decode", (6, 10)),
                                         ("12.3 x mutants", (12, 3)), ("6.x y", (6, 10 ** 6)), ("C7b z", (10 ** 6,))])
def test_number_orders_by_chapter_then_exercise(col, number):
    assert instructor._number(col) == number


def test_gradebook_columns_in_exercise_order_with_the_tests_mutant_columns(calls):
    assert instructor.column("cls.K.m") == "3.1 K.m"
    assert instructor.gradebook_columns(["two", "cls", "ten", "toy"]) == (
        ["1.1 a", "1.2 b", "1.9 y", "1.10 x", "2.1 c", "3.1 K.m"],
        ["1.2 b mutants", "1.9 y mutants", "1.10 x mutants", "3.1 K.m mutants"])


# ---------------------------------------------------------------------------
# gradebook_row: a student's cells, mutants, points; worked by hand
# ---------------------------------------------------------------------------

TABLE = {"toy": {"1.1": 2, "1.2": 3}, "ten": {"1.10": 4, "1.9": 1}}
ROW = [  # any order: y (fails), a (passes), x (a test passing, caught 2 of 3), b (a weak test, caught 1 of 3)
    {"target": "ten.y", "label": "Exercise 1.9", "status": "fail", "kind": "numbers", "misconception": None,
     "message": "m"},
    {"target": "toy.a", "label": "Exercise 1.1", "status": "pass", "kind": "pass", "misconception": None,
     "message": None},
    {"target": "ten.x", "label": "Exercise 1.10", "status": "pass", "kind": "pass", "misconception": None,
     "message": None, "caught": [2, 3]},
    {"target": "toy.b", "label": "Exercise 1.2", "status": "fail", "kind": "weak_test", "misconception": None,
     "message": "m", "caught": [1, 3]}]


def test_gradebook_row_scores_each_exercise_and_test_by_the_table(calls):
    row = instructor.gradebook_row(ROW, TABLE)
    assert row["cells"] == {"1.9 y": "fail: numbers", "1.1 a": "pass", "1.10 x": "pass",
                            "1.2 b": "fail: weak test (caught 1 of 3)"}
    assert row["mutants"] == {"1.9 y mutants": "", "1.10 x mutants": "2 of 3", "1.2 b mutants": "1 of 3"}
    # y 0 of 1; a 2 of 2; x 4 * 2/3 = 2.67 of 4; b 3 * 1/3 = 1.0 of 3
    assert row["points"] == 5.67 and row["out_of"] == 10
    assert row["by_module"] == {"ten": 2.67, "toy": 3.0} and list(row["by_module"]) == ["ten", "toy"]
    assert row["results"] == {
        "1.9 y": dict(ROW[0], points=0, possible=1), "1.1 a": dict(ROW[1], points=2, possible=2),
        "1.10 x": dict(ROW[2], points=2.67, possible=4), "1.2 b": dict(ROW[3], points=1.0, possible=3)}


def test_gradebook_row_defaults_to_one_point_a_star_for_the_modules_it_sees(calls, monkeypatch):
    from exercises.grading import points
    asked = []
    monkeypatch.setattr(points, "default_table", lambda modules: asked.append(modules) or TABLE)
    row = instructor.gradebook_row(ROW + [dict(ROW[1])])
    assert asked == [["ten", "toy"]]
    assert row["points"] == 5.67 and row["out_of"] == 10  # the same column twice counts once


def test_gradebook_row_a_dotted_test_name(calls, monkeypatch):
    from exercises.grading import points
    asked = []
    monkeypatch.setattr(points, "default_table", lambda modules: asked.append(modules) or {"cls": {"3.1": 2}})
    r = {"target": "cls.K.m", "label": "Exercise 3.1", "status": "pass", "kind": "pass", "misconception": None,
         "message": None, "caught": [1, 2]}
    row = instructor.gradebook_row([r])
    assert asked == [["cls"]]
    assert row["mutants"] == {"3.1 K.m mutants": "1 of 2"}  # 2 points * 1/2
    assert row["points"] == 1.0 and row["out_of"] == 2 and row["by_module"] == {"cls": 1.0}
