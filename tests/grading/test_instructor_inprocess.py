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
from exercises.grading.errors import CommandError
from exercises.grading.handed_in import Problem

LABELS = {"toy": {"a": "Exercise 1.1", "b": "Exercise 1.2"}, "two": {"c": "Exercise 2.1"},
          "cls": {"K.m": "Exercise 3.1"}, "rope": {"a": "Exercise 6.1"},  # cls: a method, a dotted name
          "ten": {"x": "Exercise 1.10", "y": "Exercise 1.9"}, "none": {}}  # none: a module with no exercise
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
        None, Problem("no toy.py in this student's folder", link=False))


def test_module_file_refuses_a_linked_file(tmp_path):
    target = put(tmp_path, "elsewhere/toy.py")
    (tmp_path / "s" / "alice" / "exercises").mkdir(parents=True)
    (tmp_path / "s" / "alice" / "exercises" / "toy.py").symlink_to(target)
    assert instructor.module_file(tmp_path / "s" / "alice", "toy", tmp_path / "s") == (
        None, Problem("alice/exercises/toy.py is a link; hand in the file itself.", link=True))


def test_module_file_does_not_search_a_linked_folder_and_says_so(tmp_path):
    put(tmp_path, "elsewhere/toy.py")  # a link to a folder is not followed, so the file is not found
    (tmp_path / "s" / "alice").mkdir(parents=True)
    (tmp_path / "s" / "alice" / "exercises").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert instructor.module_file(tmp_path / "s" / "alice", "toy", tmp_path / "s") == (
        None, Problem("no toy.py in this student's folder; alice/exercises is a link, which the grader does not "
                      "follow: hand in the folder itself.", link=True))


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
    with pytest.raises(CommandError) as e:
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
        None, Problem("alice/exercises/toy.py is a link; hand in the file itself.", link=True))


def test_students_names_links_and_refuses_single_files_in_a_gradebook(klass):
    (klass / "gina.py").symlink_to(klass / "bob.py")
    (klass / "hal.v2").symlink_to(klass / "alice", target_is_directory=True)
    (klass / "ivan" / "exercises").mkdir(parents=True)
    (klass / "ivan" / "exercises" / "toy.py").symlink_to(klass / "bob.py")
    rows = {name: (path, problem) for name, path, problem in instructor.students(klass, "toy")}
    assert rows["gina"] == (None, Problem("gina.py is a link, not a file or a folder; hand in the file itself.",
                                          link=True))
    assert rows["hal.v2"] == (None, Problem("hal.v2 is a link, not a file or a folder; hand in the file itself.",
                                            link=True))
    assert rows["ivan"] == (None, Problem("ivan/exercises/toy.py is a link; hand in the file itself.", link=True))
    assert rows["bob"] == (klass / "bob.py", None)
    book = {name: (path, problem) for name, path, problem in instructor.students(klass, "toy", single_files=False)}
    assert book["bob"] == (None, Problem("bob.py is a single file; a gradebook over several modules needs a folder "
                                         "per student holding exercises/toy.py", link=False))
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
    with pytest.raises(CommandError) as e:
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


# ---------------------------------------------------------------------------
# grade_folder_modules: the gradebook over several modules, its files, written answers, feedback, Canvas
# ---------------------------------------------------------------------------

# what the stand-in grader says of an exercise, by the word written after its name in the file ("b: weak");
# an exercise the file does not name is not attempted
VERDICTS = {
    "pass": {"status": "pass", "kind": "pass", "misconception": None, "message": "all cases pass",
             "public": "pass", "held_out": "pass"},
    "caught": {"status": "pass", "kind": "pass", "misconception": None, "message": "catches all 3 mutants",
               "caught": [3, 3]},
    "weak": {"status": "fail", "kind": "weak_test", "misconception": None, "caught": [1, 3], "escaped": ["a", "a"],
             "message": "weak test: the mutant flip_sign gets past it; try offset -1"},
    "held": {"status": "fail", "kind": "numbers", "misconception": None, "failed_on": "held-out", "public": "pass",
             "held_out": "fail", "message": "held-out cases: numbers: wrong on 4 held-out cases"},
    "sign": {"status": "fail", "kind": "numbers", "misconception": "sign_error",
             "message": "wrong numbers at pos=[1, 2]: rotate the other way"},
    "todo": {"status": "not attempted", "kind": "unfinished", "misconception": None, "message": "not written yet"},
}
BOOK_TABLE = {"toy": {"1.1": 2, "1.2": 3}, "two": {"2.1": 1}, "none": {}}  # the default table: a 2, b (a test) 3, c 1


def verdict_grade_file(calls):
    def grade_file(path, module, **kwargs):
        calls.append(dict(kwargs, path=Path(path), module=module))
        said = dict(line.split(": ") for line in Path(path).read_text().splitlines())
        return [dict(VERDICTS[said.get(key.split(".", 1)[1], "todo")], target=key,
                     label=LABELS[module][key.split(".", 1)[1]]) for key in instructor.targets_of(module)]
    return grade_file


@pytest.fixture
def book_calls(calls, monkeypatch):
    from exercises.grading import points
    monkeypatch.setattr(instructor, "grade_file", verdict_grade_file(calls))
    monkeypatch.setattr(points, "default_table", lambda modules: {m: dict(BOOK_TABLE[m]) for m in modules})
    return calls


@pytest.fixture
def course(tmp_path):
    r"""alice (every exercise right, the test catches 3 of 3), bob (a single file), carol (a fails the held-out
    cases, a weak test catching 1 of 3, c a sign error), dave (a link to carol's folder), erin (only the test,
    catching 3 of 3; no two.py)."""
    s = tmp_path.resolve() / "class"
    put(s, "alice/exercises/toy.py", "a: pass\nb: caught")
    put(s, "alice/exercises/two.py", "c: pass")
    put(s, "bob.py", "a: pass\nb: caught\nc: pass")
    put(s, "carol/toy.py", "a: held\nb: weak")
    put(s, "carol/exercises/two.py", "c: sign")
    (s / "dave").symlink_to(s / "carol", target_is_directory=True)
    put(s, "erin/exercises/toy.py", "b: caught")
    put(s, ".git/toy.py", "a: pass")
    return s


def single(module):
    return {"status": "fail", "kind": "missing", "misconception": None,
            "message": f"bob.py is a single file; a gradebook over several modules needs a folder per student "
                       f"holding exercises/{module}.py"}


def linked():
    return {"status": "fail", "kind": "link", "misconception": None,
            "message": "dave is a link, not a file or a folder; hand in the file itself."}


# by hand, one point a star of BOOK_TABLE: alice 2 + 3 * 3/3 + 1 = 6; carol 0 + 3 * 1/3 + 0 = 1; erin 0 + 3 + 0
BOOK_CSV = (
    "student,1.1 a,1.2 b,1.2 b mutants,2.1 c,toy exercises,two exercises,points,out_of\r\n"
    "alice,pass,pass,3 of 3,pass,5,1,6,6\r\n"
    "bob,fail: missing,fail: missing,,fail: missing,0,0,0,6\r\n"
    "carol,fail (held-out): numbers,fail: weak test (caught 1 of 3),1 of 3,fail: numbers sign_error,1,0,1,6\r\n"
    "dave,fail: hands in a link,fail: hands in a link,,fail: hands in a link,0,0,0,6\r\n"
    "erin,not attempted,pass,3 of 3,fail: missing,3,0,3,6\r\n")


def test_grade_folder_modules_writes_the_gradebook_worked_by_hand(course, book_calls, tmp_path):
    book = instructor.grade_folder_modules(course, tmp_path / "book.csv", ["toy", "two"], timeout=2.5, limits="L",
                                           wrap="W", workers=1)
    assert (tmp_path / "book.csv").read_bytes().decode() == BOOK_CSV
    assert book["csv"] == str(tmp_path / "book.csv") and book["json"] == str(tmp_path / "book.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["book.csv", "book.json", "class"]
    assert {k: book[k] for k in ("modules", "exercises", "mutant_columns", "timeout_s", "points",
                                 "written_chapters", "feedback_level", "assignments")} == {
        "modules": ["toy", "two"], "exercises": ["1.1 a", "1.2 b", "2.1 c"], "mutant_columns": ["1.2 b mutants"],
        "timeout_s": 2.5, "points": {"toy": {"1.1": 2, "1.2": 3}, "two": {"2.1": 1}}, "written_chapters": [],
        "feedback_level": "formative",
        "assignments": [("toy exercises", 5), ("two exercises", 1)]}
    assert [s["student"] for s in book["students"]] == ["alice", "bob", "carol", "dave", "erin"]
    alice, bob, carol, dave, erin = book["students"]
    assert alice == {
        "student": "alice", "files": {"toy": str(course / "alice/exercises/toy.py"),
                                      "two": str(course / "alice/exercises/two.py")},
        "exercise_points": 6, "exercise_out_of": 6, "mutants": {"1.2 b mutants": "3 of 3"},
        "results": {"1.1 a": dict(VERDICTS["pass"], points=2, possible=2, target="toy.a", label="Exercise 1.1"),
                    "1.2 b": dict(VERDICTS["caught"], points=3, possible=3, target="toy.b", label="Exercise 1.2"),
                    "2.1 c": dict(VERDICTS["pass"], points=1, possible=1, target="two.c", label="Exercise 2.1")},
        "written": {}, "by_assignment": {"toy exercises": 5, "two exercises": 1}, "points": 6, "out_of": 6}
    assert bob["files"] == {"toy": None, "two": None} and (bob["points"], bob["out_of"]) == (0, 6)
    assert bob["results"] == {
        "1.1 a": dict(single("toy"), points=0, possible=2, target="toy.a", label="Exercise 1.1"),
        "1.2 b": dict(single("toy"), points=0, possible=3, target="toy.b", label="Exercise 1.2"),
        "2.1 c": dict(single("two"), points=0, possible=1, target="two.c", label="Exercise 2.1")}
    assert bob["mutants"] == {"1.2 b mutants": ""}
    assert carol["files"] == {"toy": str(course / "carol/toy.py"), "two": str(course / "carol/exercises/two.py")}
    assert carol["results"]["1.2 b"] == dict(VERDICTS["weak"], points=1, possible=3, target="toy.b",
                                             label="Exercise 1.2")
    assert carol["results"]["1.1 a"] == dict(VERDICTS["held"], points=0, possible=2, target="toy.a",
                                             label="Exercise 1.1")
    assert carol["by_assignment"] == {"toy exercises": 1, "two exercises": 0}
    assert (carol["exercise_points"], carol["points"], carol["out_of"]) == (1, 1, 6)
    assert dave["results"]["2.1 c"] == dict(linked(), points=0, possible=1, target="two.c", label="Exercise 2.1")
    assert dave["files"] == {"toy": None, "two": None}
    assert erin["files"] == {"toy": str(course / "erin/exercises/toy.py"), "two": None}
    assert erin["by_assignment"] == {"toy exercises": 3, "two exercises": 0} and erin["points"] == 3
    assert all("_cells" not in s for s in book["students"])
    written = json.loads((tmp_path / "book.json").read_text())
    assert written == json.loads(json.dumps({k: v for k, v in book.items() if k not in ("csv", "json")}))
    assert list(written) == ["modules", "exercises", "mutant_columns", "timeout_s", "points", "written_chapters",
                             "feedback_level", "students", "assignments"]
    assert (tmp_path / "book.json").read_text().startswith('{\n "modules": [\n  "toy",')


def test_grade_folder_modules_hands_each_file_to_the_grader_with_its_settings(course, book_calls, tmp_path):
    instructor.grade_folder_modules(course, tmp_path / "book", ["toy", "two"], timeout=2.5, limits="L", wrap="W",
                                    workers=1)
    assert [(c["path"], c["module"]) for c in book_calls] == [
        (course / "alice/exercises/toy.py", "toy"), (course / "alice/exercises/two.py", "two"),
        (course / "carol/toy.py", "toy"), (course / "carol/exercises/two.py", "two"),
        (course / "erin/exercises/toy.py", "toy")]
    assert all(c["timeout"] == 2.5 and c["limits"] == "L" and c["wrap"] == "W" and c["held_out"] is True
               and c["private_dirs"] == [course] for c in book_calls)
    assert book_calls[2]["display"] == {str(course / "carol/toy.py"): "class/carol/toy.py"}


def test_grade_folder_modules_defaults(course, book_calls, tmp_path):
    book = instructor.grade_folder_modules(course, tmp_path / "r.json", ("toy", "two"))
    assert book["timeout_s"] == 10.0 and book["feedback_level"] == "formative" and book["modules"] == ["toy", "two"]
    assert all(c["timeout"] == 10.0 and c["limits"] is None and c["wrap"] is None for c in book_calls)
    assert (tmp_path / "r.csv").read_bytes().decode() == BOOK_CSV
    assert set(book) == {"modules", "exercises", "mutant_columns", "timeout_s", "points", "written_chapters",
                         "feedback_level", "students", "assignments", "csv", "json"}  # no written, canvas, feedback


def test_grade_folder_modules_one_module_and_a_dotted_out_name(course, book_calls, tmp_path):
    book = instructor.grade_folder_modules(course, tmp_path / "r.json.csv", ["two"], workers=3)
    assert (book["csv"], book["json"]) == (str(tmp_path / "r.csv"), str(tmp_path / "r.json"))
    assert (tmp_path / "r.csv").read_bytes().decode() == (
        "student,2.1 c,two exercises,points,out_of\r\n"
        "alice,pass,1,1,1\r\n"
        "bob,fail: missing,0,0,1\r\n"
        "carol,fail: numbers sign_error,0,0,1\r\n"
        "dave,fail: hands in a link,0,0,1\r\n"
        "erin,fail: missing,0,0,1\r\n")


def test_grade_folder_modules_a_module_without_exercises_scores_0_of_0(course, book_calls, tmp_path):
    book = instructor.grade_folder_modules(course, tmp_path / "book", ["two", "none"], workers=1)
    assert book["assignments"] == [("two exercises", 1), ("none exercises", 0)]
    assert book["students"][0]["by_assignment"] == {"two exercises": 1, "none exercises": 0}
    assert (tmp_path / "book.csv").read_bytes().decode().splitlines()[:2] == [
        "student,2.1 c,two exercises,none exercises,points,out_of", "alice,pass,1,0,1,1"]


def test_grade_folder_modules_scores_by_a_points_file(course, book_calls, tmp_path):
    points = put(tmp_path, "points.json", json.dumps({"toy": {"1.2": 4.5}, "two": {"2.1": 0.5},
                                                      "other": {"9.9": 1}}))  # other: a module not graded here
    book = instructor.grade_folder_modules(course, tmp_path / "book", ["toy", "two"], workers=1, points=points)
    assert book["points"] == {"toy": {"1.1": 2, "1.2": 4.5}, "two": {"2.1": 0.5}}
    assert book["assignments"] == [("toy exercises", 6.5), ("two exercises", 0.5)]
    # alice 2 + 4.5 + 0.5 = 7; carol 4.5 * 1/3 = 1.5; erin 4.5; out of 7
    assert (tmp_path / "book.csv").read_bytes().decode().splitlines()[1:] == [
        "alice,pass,pass,3 of 3,pass,6.5,0.5,7,7",
        "bob,fail: missing,fail: missing,,fail: missing,0,0,0,7",
        "carol,fail (held-out): numbers,fail: weak test (caught 1 of 3),1 of 3,fail: numbers sign_error,1.5,0,1.5,7",
        "dave,fail: hands in a link,fail: hands in a link,,fail: hands in a link,0,0,0,7",
        "erin,not attempted,pass,3 of 3,fail: missing,4.5,0,4.5,7"]


ALICE_02 = """# Answers, chapter 02_sinusoidal

### C1

yes: the rows repeat with period 2 pi.

### C2

no.

### Q1

> the question, quoted

The wavelengths grow geometrically.
"""
MANUAL = ("student,chapter,item,points,out_of,comment,answer\n"
          "alice,02,C1,1,1,a reason,\n"
          "alice,02,C2,,1,,\n"
          "alice,2,Q1,1.333,2,the mechanism without the number,\n")  # kept as given; the total is rounded


def test_grade_folder_modules_collects_written_answers_and_merges_the_filled_sheet(course, book_calls, tmp_path):
    put(course, "alice/answers/02.md", ALICE_02)
    manual = put(tmp_path, "manual.csv", MANUAL)
    book = instructor.grade_folder_modules(course, tmp_path / "book.csv", ["toy", "two"], workers=1,
                                           written=["2"], manual=manual)
    # chapter 02: 7 ledger claims, 1 point each, and 6 questions, 2 points each (counted in chapters/02_*.py): 19
    assert book["written_chapters"] == ["02"]
    assert book["assignments"] == [("toy exercises", 5), ("two exercises", 1), ("chapter 02 written", 19)]
    assert book["written"] == str(tmp_path / "book_written.csv")
    alice, bob = book["students"][:2]
    # alice: C1 1 and Q1 1.333 from the sheet, C2 answered and not graded yet, the rest not answered: 2.333 of 19
    assert {k: alice["written"]["02"][k] for k in ("points", "out_of", "ungraded", "file")} == {
        "points": 2.333, "out_of": 19, "ungraded": 1, "file": str(course / "alice/answers/02.md")}
    assert alice["written"]["02"]["items"][:2] == [
        {"item": "C1", "points": 1, "out_of": 1, "comment": "a reason", "auto": False,
         "answer": "yes: the rows repeat with period 2 pi."},
        {"item": "C2", "points": None, "out_of": 1, "comment": "", "auto": False, "answer": "no."}]
    assert alice["by_assignment"] == {"toy exercises": 5, "two exercises": 1, "chapter 02 written": 2.333}
    # the total to two decimals, as points.py keeps every score: 6 + 2.333 = 8.333 -> 8.33
    assert (alice["exercise_points"], alice["exercise_out_of"], alice["points"], alice["out_of"]) == (6, 6, 8.33, 25)
    assert (bob["written"]["02"]["points"], bob["written"]["02"]["file"], bob["points"], bob["out_of"]) == (
        0, None, 0, 25)
    assert (tmp_path / "book.csv").read_bytes().decode() == (
        "student,1.1 a,1.2 b,1.2 b mutants,2.1 c,toy exercises,two exercises,chapter 02 written,points,out_of\r\n"
        "alice,pass,pass,3 of 3,pass,5,1,2.33,8.33,25\r\n"
        "bob,fail: missing,fail: missing,,fail: missing,0,0,0,0,25\r\n"
        "carol,fail (held-out): numbers,fail: weak test (caught 1 of 3),1 of 3,fail: numbers sign_error,1,0,0,1,25\r\n"
        "dave,fail: hands in a link,fail: hands in a link,,fail: hands in a link,0,0,0,0,25\r\n"
        "erin,not attempted,pass,3 of 3,fail: missing,3,0,0,3,25\r\n")
    sheet = (tmp_path / "book_written.csv").read_bytes().decode().splitlines()
    assert sheet[:5] == ["student,chapter,item,points,out_of,comment,answer",
                         "alice,02,C1,1.0,1,a reason,yes: the rows repeat with period 2 pi.",
                         "alice,02,C2,,1,,no.",
                         "alice,02,C3,0,1,not answered,",
                         "alice,02,C4,0,1,not answered,"]
    assert sheet[8] == "alice,02,Q1,1.333,2,the mechanism without the number,The wavelengths grow geometrically."
    assert len(sheet) == 1 + 5 * 13 and sheet[14] == "bob,02,C1,0,1,not answered,"
    assert json.loads((tmp_path / "book.json").read_text())["students"][0]["points"] == 8.33


def test_grade_folder_modules_an_empty_class_is_out_of_nothing_written(tmp_path, book_calls):
    (tmp_path / "empty").mkdir()
    book = instructor.grade_folder_modules(tmp_path / "empty", tmp_path / "b.json", ["toy"], written=["12", 2])
    # 12_choosing_and_clinic: the chapter's number is what comes before its first underscore
    assert book["written_chapters"] == ["12", "02"] and book["written"] == str(tmp_path / "b_written.csv")
    assert book["students"] == [] and book["assignments"] == [
        ("toy exercises", 5), ("chapter 12 written", 0), ("chapter 02 written", 0)]
    assert (tmp_path / "b.csv").read_bytes().decode() == (
        "student,1.1 a,1.2 b,1.2 b mutants,toy exercises,chapter 12 written,chapter 02 written,points,out_of\r\n")
    assert (tmp_path / "b_written.csv").read_bytes().decode() == "student,chapter,item,points,out_of,comment,answer\r\n"


ROSTER = ("student,name,id,sis_user_id,sis_login_id,section\n"
          "alice,Alice Liddell,101,S101,aliddell,A\n"
          "carol,Carol Ann,103,,,B\n")


def test_grade_folder_modules_writes_canvas_csv_with_the_roster(course, book_calls, tmp_path):
    roster = put(tmp_path, "roster.csv", ROSTER)
    book = instructor.grade_folder_modules(course, tmp_path / "book", ["toy", "two"], workers=1,
                                           canvas=tmp_path / "canvas.csv", roster=roster)
    assert book["canvas"] == str(tmp_path / "canvas.csv")
    assert (tmp_path / "canvas.csv").read_bytes().decode() == (
        "Student,ID,SIS User ID,SIS Login ID,Section,toy exercises,two exercises\r\n"
        "    Points Possible,,,,,5,1\r\n"
        "Alice Liddell,101,S101,aliddell,A,5,1\r\n"
        "bob,,,bob,,0,0\r\n"
        "Carol Ann,103,,carol,B,1,0\r\n"
        "dave,,,dave,,0,0\r\n"
        "erin,,,erin,,3,0\r\n")


CAROL_SUMMATIVE = """# Feedback for carol

Exercises: 1 of 6 points.
Total: 1 of 6 points.

## 1.1 a

**fail (public cases: pass; held-out cases: fail)**, 0 of 2 points.

    fail on the held-out cases: some outputs are wrong.

## 1.2 b

**fail**, 1 of 3 points.

    weak test: 2 of 3 mutants escaped your test (2 a wrong a).

## 2.1 c

**fail**, 0 of 1 point.

    fail: some outputs are wrong.
"""


def test_grade_folder_modules_feedback_summative_hides_the_hints_and_inputs(course, book_calls, tmp_path):
    roster = put(tmp_path, "roster.csv", ROSTER)
    book = instructor.grade_folder_modules(course, tmp_path / "book", ["toy", "two"], workers=1,
                                           feedback=tmp_path / "fb", level="summative", roster=roster)
    assert book["feedback_level"] == "summative"
    assert book["feedback"] == [str(tmp_path / "fb" / f) for f in (
        "alice_101.md", "alice_101.html", "bob.md", "bob.html", "carol_103.md", "carol_103.html", "dave.md",
        "dave.html", "erin.md", "erin.html")]
    assert (tmp_path / "fb" / "carol_103.md").read_text() == CAROL_SUMMATIVE
    html_page = (tmp_path / "fb" / "carol_103.html").read_text()
    assert "weak test: 2 of 3 mutants escaped your test (2 a wrong a)." in html_page
    assert "flip_sign" not in html_page and "pos=[1, 2]" not in html_page
    assert "Total: 6 of 6 points." in (tmp_path / "fb" / "alice_101.md").read_text()


def test_grade_folder_modules_feedback_formative_says_everything(course, book_calls, tmp_path):
    instructor.grade_folder_modules(course, tmp_path / "book", ["toy", "two"], workers=1, feedback=tmp_path / "fb")
    carol = (tmp_path / "fb" / "carol.md").read_text()
    for message in ("held-out cases: numbers: wrong on 4 held-out cases",
                    "weak test: the mutant flip_sign gets past it; try offset -1",
                    "wrong numbers at pos=[1, 2]: rotate the other way"):
        assert f"\n    {message}\n" in carol
    assert "\n**not attempted**, 0 of 2 points.\n\n    not written yet\n" in (tmp_path / "fb" / "erin.md").read_text()


def test_grade_folder_modules_refuses_a_bad_level_before_grading(course, book_calls, tmp_path):
    with pytest.raises(CommandError) as e:
        instructor.grade_folder_modules(course, tmp_path / "book", ["toy"], level="final", feedback=tmp_path / "fb")
    assert str(e.value) == "--level 'final' is not one of: formative, summative."
    assert book_calls == [] and sorted(p.name for p in tmp_path.iterdir()) == ["class"]


def test_grade_folder_modules_refuses_a_path_that_is_not_a_folder(tmp_path, book_calls):
    put(tmp_path, "file.txt")
    with pytest.raises(CommandError) as e:
        instructor.grade_folder_modules(tmp_path / "file.txt", tmp_path / "out", ["toy"], canvas=tmp_path / "c.csv")
    assert str(e.value) == (f"{tmp_path.resolve() / 'file.txt'} is not a folder; give the folder that holds "
                            "one entry per student.")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]


@pytest.mark.parametrize("workers, cpus, at_once", [(1, 4, 1), (3, 4, 3), (None, 4, 4), (None, None, 1)])
def test_workers_students_are_graded_at_once_by_default_one_a_cpu(course, book_calls, tmp_path, monkeypatch,
                                                                 workers, cpus, at_once):
    import concurrent.futures
    import os
    pools = []

    class Pool(concurrent.futures.ThreadPoolExecutor):  # records how many threads each gradebook asks for
        def __init__(self, max_workers=None, *args, **kwargs):
            pools.append(max_workers)
            super().__init__(max_workers, *args, **kwargs)
    monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", Pool)
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)  # None where the platform cannot tell
    instructor.grade_folder(course, tmp_path / "one", module="toy", workers=workers)
    instructor.grade_folder_modules(course, tmp_path / "book", ["toy", "two"], workers=workers)
    assert pools == [at_once, at_once]


# ---------------------------------------------------------------------------
# Links: one rule (student_file) for every file read from a student's folder, written answers included
# ---------------------------------------------------------------------------

def test_module_file_names_the_linked_folders_it_did_not_search(tmp_path):
    put(tmp_path, "elsewhere/toy.py")
    (tmp_path / "s" / "alice").mkdir(parents=True)
    (tmp_path / "s" / "alice" / "b").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "s" / "alice" / "a").symlink_to(tmp_path / "gone", target_is_directory=True)  # dangling
    (tmp_path / "s" / "alice" / "c.py").symlink_to(tmp_path / "elsewhere" / "toy.py")  # a file: not where it looked
    assert instructor.module_file(tmp_path / "s" / "alice", "toy", tmp_path / "s") == (
        None, Problem("no toy.py in this student's folder; alice/a, alice/b are links, which the grader does not "
                      "follow: hand in the folders themselves.", link=True))


def test_a_refused_link_is_named_from_the_folder_given_and_in_full_outside_it(tmp_path):
    target = put(tmp_path, "elsewhere/toy.py")
    (tmp_path / "s" / "alice" / "exercises").mkdir(parents=True)
    (tmp_path / "s" / "alice" / "exercises" / "toy.py").symlink_to(target)
    alice = tmp_path / "s" / "alice"
    assert instructor.module_file(alice, "toy", tmp_path) == (  # two floors up: the name starts there, not at s/
        None, Problem("s/alice/exercises/toy.py is a link; hand in the file itself.", link=True))
    full = tmp_path.resolve() / "s" / "alice" / "exercises" / "toy.py"  # elsewhere/ does not hold alice: in full
    assert instructor.module_file(alice, "toy", tmp_path / "elsewhere") == (
        None, Problem(f"{full} is a link; hand in the file itself.", link=True))


@pytest.mark.parametrize("links, sentence", [
    (["exercises"], "no toy.py in this student's folder; ivan/exercises is a link, which the grader does not "
                    "follow: hand in the folder itself."),
    (["exercises", "old"], "no toy.py in this student's folder; ivan/exercises, ivan/old are links, which the grader "
                           "does not follow: hand in the folders themselves.")])
def test_grade_student_counts_a_file_behind_linked_folders_as_a_link_however_many(klass, calls, links, sentence):
    (klass / "ivan").mkdir()
    for name in links:  # each a link to alice's folder, whose toy.py passes
        (klass / "ivan" / name).symlink_to(klass / "alice", target_is_directory=True)
    rows = instructor.grade_student(klass / "ivan", ["toy"])
    assert [(r["target"], r["kind"], r["message"]) for r in rows] == [
        (k, "link", sentence) for k in ("toy.a", "toy.b")]  # the words once told one link from several: not the kind
    assert calls == []


def test_grade_student_refuses_a_student_folder_that_is_a_link(klass, calls):
    refused = instructor.grade_student(klass / "dave", ["toy"])  # dave -> alice, whose files pass
    assert [(r["target"], r["kind"], r["message"]) for r in refused] == [
        (k, "link", "dave is a link, not a folder; hand in the folder itself.") for k in ("toy.a", "toy.b")]
    assert calls == []


CAROL_02 = "### C1\n\nCAROL'S OWN ANSWER\n"


def test_grade_folder_modules_never_gives_a_linked_student_the_other_students_written_answers(course, book_calls,
                                                                                              tmp_path):
    put(course, "carol/answers/02.md", CAROL_02)  # dave is a link to carol's folder
    put(course, "erin/answers/02.md", "ignored")
    (course / "erin" / "answers" / "02.md").unlink()
    (course / "erin" / "answers" / "02.md").symlink_to(course / "carol" / "answers" / "02.md")
    book = instructor.grade_folder_modules(course, tmp_path / "book", ["toy", "two"], workers=1, written=["2"],
                                           feedback=tmp_path / "fb")
    students = {s["student"]: s for s in book["students"]}
    for name, sentence in (("dave", "dave is a link, not a folder; hand in the folder itself."),
                           ("erin", "erin/answers/02.md is a link; hand in the file itself.")):
        items = students[name]["written"]["02"]["items"]
        assert {(i["points"], i["comment"], i["answer"]) for i in items} == {(0, sentence, "")}, name
        assert students[name]["written"]["02"]["file"] is None
        with open(tmp_path / "book_written.csv", newline="") as f:
            assert [name, "02", "C1", "0", "1", sentence, ""] in list(csv.reader(f))
        assert f"\n    {sentence}\n" in (tmp_path / "fb" / f"{name}.md").read_text()
    assert "CAROL" not in (tmp_path / "book_written.csv").read_text().replace("carol,02,C1,,1,,CAROL'S OWN ANSWER", "")
    assert students["carol"]["written"]["02"]["items"][0]["answer"] == "CAROL'S OWN ANSWER"  # her own, read
    assert "CAROL" not in (tmp_path / "fb" / "dave.md").read_text() + (tmp_path / "fb" / "erin.md").read_text()
