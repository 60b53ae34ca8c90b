r"""Feedback levels, the files and Canvas CSV named by a roster, and Gradescope's results.json, on hand-made results."""
import csv
import io
import json
import pwd

import pytest

from exercises.grading import class_csv, feedback, feedback_files, grader, gradescope, instructor
from exercises.grading.errors import CommandError
from exercises.grading.grader import DEFAULT_TIMEOUT

MISCONCEPTION = {"target": "rope.rotate_half", "label": "Exercise 6.1", "status": "fail", "kind": "misconception",
                 "misconception": "sign_error",
                 "message": "misconception, sign error in rotate_half: the second half must be negated, not the "
                            "first. Input: x = [1, 2, 3, 4]"}
WEAK = {"target": "sinusoidal.test_sinusoidal_properties", "label": "Exercise 2.3", "status": "fail",
        "kind": "weak_test", "misconception": None, "caught": [6, 9],
        "escaped": ["sinusoidal_positional_encoding", "sinusoidal_positional_encoding", "shift_rotation"],
        "message": "weak test: caught 6 of 9 mutants; got away: base_ignored, positions_from_one, "
                   "angle_not_scaled_by_k.\n  - base_ignored (...). What catches it: base = 100"}


def test_formative_is_the_whole_message_and_summative_names_no_hint_input_or_mutant():
    assert feedback.text(MISCONCEPTION, "formative") == MISCONCEPTION["message"]
    summative = feedback.text(MISCONCEPTION, "summative")
    assert summative.startswith("fail: misconception, ") and "negated" not in summative and "Input" not in summative
    assert feedback.text(WEAK, "summative") == ("weak test: 3 of 9 mutants escaped your test (2 a wrong "
                                               "sinusoidal_positional_encoding, 1 a wrong shift_rotation).")
    numbers = dict(MISCONCEPTION, kind="numbers", misconception=None, failed_on="held-out")
    assert feedback.text(numbers, "summative") == "fail on the held-out cases: some outputs are wrong."
    with pytest.raises(CommandError, match="feedback level 'loud' is not one of: formative, summative"):
        feedback.text(WEAK, "loud")


def test_a_roster_names_the_canvas_rows_and_the_feedback_files(tmp_path):
    roster_path = tmp_path / "roster.csv"
    roster_path.write_text("student,name,id,sis_user_id,sis_login_id,section\n"
                           "alice,\"Liddell, Alice\",1001,S1,aliddell,Tuesday\n")
    roster = class_csv.read_roster(roster_path)
    student = {"student": "alice", "exercise_points": 1, "exercise_out_of": 1, "points": 1, "out_of": 1,
               "written": {}, "by_assignment": {"rope exercises": 1},
               "results": {"6.1 rotate_half": dict(MISCONCEPTION, status="pass", kind="pass", points=1, possible=1)}}
    book = {"students": [student], "assignments": [("rope exercises", 1)]}
    rows = list(csv.reader(io.StringIO(class_csv.canvas_csv(book, roster))))
    assert rows[2] == ["Liddell, Alice", "1001", "S1", "aliddell", "Tuesday", "1"]
    paths = feedback_files.write_files(book, tmp_path / "fb", "summative", roster)
    assert sorted(p.name for p in paths) == ["alice_1001.html", "alice_1001.md"]
    bad = tmp_path / "bad.csv"
    bad.write_text("name,id\nAlice,1\n")
    with pytest.raises(CommandError, match="needs a 'student' column"):
        class_csv.read_roster(bad)


def test_the_canvas_csv_keeps_fractional_points_to_two_decimals_as_the_gradebook_gives_them():
    # a 4-point test catching 2 of 3 mutants scores 4 * 2/3 = 2.67 (points.worth); a half-point exercise 0.5;
    # the numbers as the gradebook holds them, printed with every digit of their two decimals
    assignments = [("rope exercises", 4.5), ("t5 exercises", 0.5), ("chapter 12 written", 12345.67)]
    student = {"student": "alice", "by_assignment": {"rope exercises": 2.67, "t5 exercises": 0.5,
                                                      "chapter 12 written": 1234.25}}
    rows = list(csv.reader(io.StringIO(class_csv.canvas_csv({"students": [student], "assignments": assignments}))))
    assert rows[1][5:] == ["4.5", "0.5", "12345.67"]  # Points Possible
    assert rows[2][5:] == ["2.67", "0.5", "1234.25"]  # not 3, 0 and 1234 (whole points), nor 12345.7 (six digits)


# a weak test's formative message names the mutants that escaped and the input that catches each
SECRETS = ("base_ignored", "positions_from_one", "angle_not_scaled_by_k", "What catches it", "base = 100")
WEAK_FULL = dict(WEAK, message="weak test: caught 6 of 9 mutants; got away: base_ignored, positions_from_one, "
                               "angle_not_scaled_by_k.\n  - base_ignored (sinusoidal_positional_encoding: the base "
                               "is never used). What catches it: base = 100\n  - positions_from_one (...). What "
                               "catches it: T = 1\n  - angle_not_scaled_by_k (...). What catches it: k = 3")
MISCONCEPTION_21 = dict(MISCONCEPTION, target="sinusoidal.sinusoidal_positional_encoding", label="Exercise 2.1",
                        misconception="positions_from_one",
                        message="misconception, positions counted from one. Hint: row 0 is position 0. "
                                "Input: T = 4, d_model = 8")


def _every_string(data):
    if isinstance(data, dict):
        return [s for v in data.values() for s in _every_string(v)] + [k for k in data if isinstance(k, str)]
    if isinstance(data, list):
        return [s for v in data for s in _every_string(v)]
    return [data] if isinstance(data, str) else []


@pytest.mark.parametrize("level", ["summative", "formative"])
def test_gradescope_results_json_at_the_summative_level_names_no_mutant_and_no_catching_input(
        monkeypatch, tmp_path, level):
    """The leak the summative level prevents, through the command run_autograder runs: at the summative
    level no field of results.json names an escaped mutant or an input that catches one (or the hint and
    the input of a misconception); at the formative level they are there."""
    import json
    from exercises.grading import gradescope, instructor
    monkeypatch.setattr(instructor, "grade_student", lambda *a, **k: [WEAK_FULL, MISCONCEPTION_21])
    results = tmp_path / "results.json"
    assert gradescope.main([str(tmp_path), str(results), "--module", "sinusoidal", "--level", level]) == 0
    strings = " ".join(_every_string(json.loads(results.read_text())))
    leaked = [s for s in SECRETS + ("Hint: row 0", "T = 4") if s in strings]
    if level == "summative":
        assert leaked == []
        tests = json.loads(results.read_text())["tests"]
        assert [t["output"] for t in tests] == [
            "fail: misconception, positions start at 1.",  # the check's title of positions_from_one
            "mutants caught: 6 of 9\nweak test: 3 of 9 mutants escaped your test (2 a wrong "
            "sinusoidal_positional_encoding, 1 a wrong shift_rotation)."]
    else:
        assert leaked == list(SECRETS + ("Hint: row 0", "T = 4"))


def test_the_gradescope_bundle_runs_the_grader_at_its_level_visibility_and_points(tmp_path):
    import json
    import zipfile
    from exercises.grading import gradescope
    points = tmp_path / "points.json"
    points.write_text(json.dumps({"sinusoidal": {"2.3": 4.5}}))
    out = gradescope.bundle(tmp_path / "gs", ["sinusoidal"], timeout=3, visibility="after_published",
                            points=points, level="summative")
    run = (out / "run_autograder").read_text()
    assert ("--module sinusoidal --timeout 3 --visibility after_published --points points.json --level summative"
            in run)
    assert "feedback level: summative" in (out / "README.txt").read_text()
    assert json.loads((out / "workbook" / "points.json").read_text()) == {"sinusoidal": {"2.1": 1, "2.2": 2,
                                                                                         "2.3": 4.5}}
    with zipfile.ZipFile(tmp_path / "gs.zip") as z:
        assert {"run_autograder", "setup.sh", "workbook/exercises/grading/feedback.py"} <= set(z.namelist())
    assert not (out / "workbook" / "exercises" / "grading" / "instructor_only").exists()
    with pytest.raises(CommandError, match="visibility 'students' is not one of Gradescope's: hidden, after_due_date, "
                                         "after_published, visible."):
        gradescope.bundle(tmp_path / "gs2", ["sinusoidal"], visibility="students")
    assert not (tmp_path / "gs2").exists()  # refused before anything is written


ERIN = {"student": "erin", "exercise_points": 2.67, "exercise_out_of": 5, "points": 3.67, "out_of": 11,
        "written": {"02": {"points": 1, "out_of": 6, "ungraded": 1, "items": [
            {"item": "C1", "points": 1, "out_of": 1, "comment": "a reason given"},
            {"item": "Q1", "points": None, "out_of": 2, "comment": ""}]}},
        "results": {
            "2.1 sinusoidal_positional_encoding": dict(MISCONCEPTION_21, kind="numbers", misconception=None,
                                                       failed_on="held-out", public="pass", held_out="fail",
                                                       points=0, possible=1),
            "2.3 test_sinusoidal_properties": dict(WEAK_FULL, points=2.67, possible=4)}}

ERIN_SUMMATIVE = """# Feedback for erin

Exercises: 2.67 of 5 points.
Written answers, chapter 02: 1 of 6 points (1 items not graded yet).
Total: 3.67 of 11 points.

## 2.1 sinusoidal_positional_encoding

**fail (public cases: pass; held-out cases: fail)**, 0 of 1 point.

    fail on the held-out cases: some outputs are wrong.

## 2.3 test_sinusoidal_properties

**fail**, 2.67 of 4 points.

    weak test: 3 of 9 mutants escaped your test (2 a wrong sinusoidal_positional_encoding, 1 a wrong shift_rotation).

## written 02 C1

**graded**, 1 of 1 point.

    a reason given

## written 02 Q1

**not graded yet**, 0 of 2 points.
"""


def test_a_students_feedback_file_by_hand_at_the_summative_level():
    assert feedback_files.markdown(ERIN, "summative") == ERIN_SUMMATIVE
    page = feedback_files.page(ERIN, "summative")
    assert "<title>Feedback for erin</title>" in page and "<p>Total: 3.67 of 11 points.</p>" in page
    assert ("<h2>2.1 sinusoidal_positional_encoding</h2>\n<p><strong>fail (public cases: pass; held-out cases: "
            "fail)</strong>, 0 of 1 point.</p>\n<pre>fail on the held-out cases: some outputs are wrong.</pre>") in page
    assert "<h2>written 02 Q1</h2>\n<p><strong>not graded yet</strong>, 0 of 2 points.</p>\n</body>" in page
    assert not [s for s in SECRETS if s in page]
    done = dict(ERIN, written={"02": dict(ERIN["written"]["02"], ungraded=0)})
    assert "Written answers, chapter 02: 1 of 6 points.\n" in feedback_files.markdown(done, "summative")
    formative = feedback_files.markdown(ERIN, "formative")
    assert all(s in formative for s in SECRETS)  # the same student at the formative level: the whole message


def test_write_files_names_each_student_by_the_roster_and_writes_both_pages(tmp_path):
    roster = {"erin": {"id": "1005"}, "zed": {"name": "Zed"}}
    paths = feedback_files.write_files({"students": [ERIN, dict(ERIN, student="zed")]}, tmp_path / "fb", "summative",
                                       roster)
    assert [p.name for p in paths] == ["erin_1005.md", "erin_1005.html", "zed.md", "zed.html"]
    assert (tmp_path / "fb" / "erin_1005.md").read_text() == ERIN_SUMMATIVE
    assert (tmp_path / "fb" / "erin_1005.html").read_text() == feedback_files.page(ERIN, "summative")
    assert feedback_files.write_files({"students": [ERIN]}, tmp_path / "plain", "formative")[0].name == "erin.md"
    assert class_csv.read_roster(None) == {}
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert class_csv.read_roster(empty) == {}
    with pytest.raises(CommandError, match=r"--roster .*missing.csv: cannot read it \(No such file or directory\)\."):
        class_csv.read_roster(tmp_path / "missing.csv")


def test_lock_down_leaves_the_answers_to_their_owner_alone(monkeypatch, tmp_path):
    import os
    from exercises.grading import gradescope, paths
    (tmp_path / "solutions" / "sub").mkdir(parents=True)
    (tmp_path / "solutions" / "sub" / "rope.py").write_text("x")
    (tmp_path / "checks.py").write_text("x")
    monkeypatch.setattr(paths, "answer_paths", lambda: [tmp_path / "solutions", tmp_path / "checks.py",
                                                        tmp_path / "absent"])
    gradescope.lock_down()
    modes = {p.relative_to(tmp_path).as_posix(): os.stat(p).st_mode & 0o777
             for p in [tmp_path / "solutions", tmp_path / "solutions" / "sub",
                       tmp_path / "solutions" / "sub" / "rope.py", tmp_path / "checks.py"]}
    assert modes == {"solutions": 0o700, "solutions/sub": 0o700, "solutions/sub/rope.py": 0o600, "checks.py": 0o600}


def test_run_as_refuses_what_cannot_run_the_students_code(monkeypatch):
    import os
    from exercises.grading import gradescope
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(CommandError, match=r"--run-as pe_student: only root can run code as another user; this runs "
                                         r"as uid 1000\."):
        gradescope.run_as("pe_student")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    with pytest.raises(CommandError, match=r"--run-as no_such_user_kit: no such user; create it \(useradd --system "
                                         r"no_such_user_kit\) first\."):
        gradescope.run_as("no_such_user_kit")
    with pytest.raises(CommandError, match=r"--run-as root: that user is root; give an unprivileged one\."):
        gradescope.run_as("root")


def test_the_canvas_csv_has_canvas_header_and_points_possible_row_and_blank_roster_cells(tmp_path):
    # Canvas's import reads these five columns by name and the "Points Possible" row by its label
    # (indented, as Canvas's own export writes it); a student the roster does not name gets the folder's
    # name as Student and SIS Login ID, and empty ID, SIS User ID and Section
    book = {"students": [{"student": "bob", "by_assignment": {"rope exercises": 3}}],
            "assignments": [("rope exercises", 4)]}
    for roster in (None, {"bob": {"student": "bob"}}):  # no roster, and a roster row with no other column
        rows = list(csv.reader(io.StringIO(class_csv.canvas_csv(book, roster))))
        assert rows == [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "rope exercises"],
                        ["    Points Possible", "", "", "", "", "4"],
                        ["bob", "", "", "bob", "", "3"]]


def test_the_canvas_csv_ends_every_record_with_crlf_and_keeps_a_line_break_in_a_name():
    # RFC 4180's record separator is CRLF, as csv.writer writes it; a universal-newline buffer would turn every
    # \r\n, the one inside a quoted name too, into \n
    book = {"students": [{"student": "alice", "by_assignment": {"rope": 1}}], "assignments": [("rope", 2)]}
    text = class_csv.canvas_csv(book, {"alice": {"name": "Liddell\r\nAlice"}})
    assert text == ('Student,ID,SIS User ID,SIS Login ID,Section,rope\r\n'
                    '    Points Possible,,,,,2\r\n'
                    '"Liddell\r\nAlice",,,alice,,1\r\n')


def test_a_student_without_written_answers_has_only_the_exercise_and_total_lines():
    plain = {k: v for k, v in ERIN.items() if k != "written"}
    assert feedback_files.markdown(plain, "summative").splitlines()[:5] == [
        "# Feedback for erin", "", "Exercises: 2.67 of 5 points.", "Total: 3.67 of 11 points.", ""]


def test_the_page_puts_each_summary_line_and_each_section_on_its_own_lines():
    page = feedback_files.page(ERIN, "summative")
    assert ("<h1>Feedback for erin</h1>\n<p>Exercises: 2.67 of 5 points.</p>\n<p>Written answers, chapter 02: 1 "
            "of 6 points (1 items not graded yet).</p>\n<p>Total: 3.67 of 11 points.</p>\n<h2>2.1 ") in page
    assert "some outputs are wrong.</pre>\n<h2>2.3 test_sinusoidal_properties</h2>" in page


def test_write_files_makes_the_folder_with_its_parents_and_writes_into_it_again(tmp_path):
    folder = tmp_path / "term" / "feedback"  # neither exists yet
    first = feedback_files.write_files({"students": [ERIN]}, folder, "summative")
    again = feedback_files.write_files({"students": [ERIN]}, folder, "summative")  # a rerun into the same folder
    assert first == again == [folder / "erin.md", folder / "erin.html"]
    assert (folder / "erin.md").read_text() == ERIN_SUMMATIVE


def test_an_instructors_csv_keeps_a_line_break_inside_a_quoted_cell_as_written(tmp_path):
    # csv needs the file opened with newline="": otherwise a \r\n inside a quoted cell becomes \n
    path = tmp_path / "roster.csv"
    path.write_bytes(b'student,name\r\nalice,"Liddell\r\nAlice"\r\n')
    assert class_csv.read_csv_rows(path, "--roster") == [{"student": "alice", "name": "Liddell\r\nAlice"}]


def test_a_roster_without_a_student_column_is_refused_naming_the_columns_it_has(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("name,id\nAlice,1\n")
    with pytest.raises(CommandError, match=r"it needs a 'student' column \(the folder's name\); it has name, id\.$"):
        class_csv.read_roster(bad)



def _result(**fields):
    return dict({"target": "t5.relative_position_bucket", "label": "Exercise 5.1", "status": "fail",
                 "misconception": None, "message": ""}, **fields)


@pytest.mark.parametrize("result, summative", [
    (_result(status="pass", kind="pass", message="all cases pass"), "pass."),
    (_result(target="t5.test_buckets", status="pass", kind="pass", caught=[5, 5], message="catches all 5"),
     "pass: catches all 5 mutants."),
    (_result(status="not attempted", kind="unfinished", message="not attempted: write it first"),
     "not attempted: write it first"),  # not a failure to describe: the same words at both levels
    (_result(target="t5.test_buckets", kind="weak_test", caught=[1, 3], message="weak test: caught 1 of 3"),
     "weak test: 2 of 3 mutants escaped your test."),  # no list of what they break: no parentheses
    (_result(kind="misconception", misconception="no_such_key", message="misconception, ..."),
     "fail: a known misconception."),  # a key the check does not list: no title to give
    (_result(target="t5.test_buckets", kind="misconception", misconception="x", message="misconception, ..."),
     "fail: a known misconception."),  # a test the reader writes lists no misconceptions at all
    (_result(kind="import", message="SyntaxError: invalid syntax (t5.py, line 3)\n  x = = 1\n      ^"),
     "fail: your file does not load (SyntaxError: invalid syntax (t5.py, line 3))"),  # its first line only
    (_result(kind="import", message=""), "fail: your file does not load."),
    (_result(kind="out_of_memory", message="killed"), "fail: out of memory."),  # a kind without a sentence
], ids=["pass", "test-pass", "not-attempted", "weak-no-escaped", "unknown-misconception", "test-misconception",
        "import", "import-no-message", "new-kind"])
def test_each_kind_of_result_has_its_summative_sentence(result, summative):
    assert feedback.text(result, "summative") == summative
    assert feedback.text(result) == feedback.text(result, "formative") == (result["message"] or result["status"])


def test_a_formative_result_without_a_message_is_its_status():
    assert feedback.text(_result(kind="numbers"), "formative") == "fail"


# ---------------------------------------------------------------------------
# Gradescope's results.json field by field, the command run_autograder runs, and running as another user.
# Every expected value is worked by hand from the results below and the points table (points.worth: a
# passing exercise scores its points, a weak test its points times the fraction it caught, to 0.01).
# ---------------------------------------------------------------------------

# one student over sinusoidal, learned, t5 and rope (what grade_student returns), in no particular order
GS_RESULTS = [
    {"target": "rope.decode", "label": "Exercise 6.10", "status": "pass", "kind": "pass", "message": ""},
    {"target": "rope.apply_rotary", "label": "Exercise 6.2", "status": "not attempted", "kind": "unfinished",
     "message": ""},
    {"target": "rope.test_rope_properties", "label": "Exercise 6.5", "status": "fail", "kind": "weak_test",
     "caught": [1, 4], "escaped": ["rotate_half"] * 3, "message": "weak test: caught 1 of 4 mutants."},
    {"target": "sinusoidal.sinusoidal_positional_encoding", "label": "Exercise 2.1", "status": "fail",
     "kind": "numbers", "held_out": "fail", "public": "pass", "failed_on": "held-out",
     "message": "wrong numbers at T = 4"},
    {"target": "t5.relative_position_bucket", "label": "Exercise 5.1", "status": "fail", "kind": "missing",
     "message": "t5.py is not in the submission"},
    {"target": "learned.position_rows", "label": "Exercise 3.1", "status": "fail", "kind": "missing",
     "message": "learned.py is not in the submission"},
]
GS_RESULTS = [dict(r, misconception=None) for r in GS_RESULTS]  # every result names its misconception, None here
GS_TABLE = {"sinusoidal": {"2.1": 1}, "learned": {"3.1": 1}, "t5": {"5.1": 2},
            "rope": {"6.2": 1, "6.5": 3, "6.10": 2.5}}


def _test(name, score, max_score, passed, output, visibility):
    return {"name": name, "number": name.split()[0], "score": score, "max_score": max_score,
            "status": "passed" if passed else "failed", "output": output, "visibility": visibility}


def test_results_json_gives_each_exercise_its_score_status_output_and_visibility_in_number_order():
    data = gradescope.results_json(GS_RESULTS, 1.23456, "after_due_date", GS_TABLE, "formative")
    v = "after_due_date"
    # 6.10 after 6.2 (numbers, not text); 6.5 scores 3 * 1/4 = 0.75; the total 2.5 + 0.75 = 3.25 of
    # 1 + 1 + 2 + 1 + 3 + 2.5 = 10.5; one exercise of six passes; the two modules not handed in, by name
    assert data == {
        "score": 3.25, "execution_time": 1.235,
        "output": "1 of 6 exercises pass: 3.25 of 10.5 points.\n"
                  "Not handed in (each of their exercises scores zero): learned.py, t5.py.",
        "tests": [
            _test("2.1 sinusoidal_positional_encoding", 0.0, 1.0, False,
                  "public cases: pass; held-out cases: fail\nwrong numbers at T = 4", v),
            _test("3.1 position_rows", 0.0, 1.0, False, "learned.py is not in the submission", v),
            _test("5.1 relative_position_bucket", 0.0, 2.0, False, "t5.py is not in the submission", v),
            _test("6.2 apply_rotary", 0.0, 1.0, False, "not attempted: write it in exercises/rope.py", v),
            _test("6.5 test_rope_properties", 0.75, 3.0, False,
                  "mutants caught: 1 of 4\nweak test: caught 1 of 4 mutants.", v),
            _test("6.10 decode", 2.5, 2.5, True, "pass", v),
        ]}
    summative = gradescope.results_json(GS_RESULTS, None, "hidden", GS_TABLE, "summative")
    assert "execution_time" not in summative  # no time given: the optional field left out
    assert [t["output"] for t in summative["tests"]][3:] == [
        "not attempted: write it in exercises/rope.py",
        "mutants caught: 1 of 4\nweak test: 3 of 4 mutants escaped your test (3 a wrong rotate_half).", "pass"]


def test_results_json_defaults_to_visible_formative_and_one_point_a_star():
    one = [dict(GS_RESULTS[3], status="pass", kind="pass", held_out="pass", failed_on=None,
                message="all cases pass. Well done: T = 4")]
    assert gradescope.results_json(one) == {
        "score": 1.0, "output": "1 of 1 exercises pass: 1 of 1 points.",  # 2.1 is one star
        "tests": [_test("2.1 sinusoidal_positional_encoding", 1.0, 1.0, True,
                        "public cases: pass; held-out cases: pass\nall cases pass. Well done: T = 4", "visible")]}


def _graded(monkeypatch, results=None):
    seen = {}

    def grade_student(entry, modules, timeout=None, **kwargs):
        seen.update(modules=modules, timeout=timeout)
        return results or [dict(GS_RESULTS[2])]
    monkeypatch.setattr(instructor, "grade_student", grade_student)
    return seen


def test_the_command_takes_its_options_and_defaults_to_visible_formative_and_the_grader_timeout(
        monkeypatch, tmp_path, capsys):
    seen = _graded(monkeypatch)
    out = tmp_path / "results.json"
    assert gradescope.main([str(tmp_path), str(out), "--module", "rope"]) == 0
    data = json.loads(out.read_text())
    assert seen == {"modules": ["rope"], "timeout": DEFAULT_TIMEOUT}
    assert data["tests"][0]["visibility"] == "visible"
    assert data["tests"][0]["output"] == "mutants caught: 1 of 4\nweak test: caught 1 of 4 mutants."  # formative
    # one point a star: 6.5 is three stars, 3 * 1/4 = 0.75
    assert capsys.readouterr().out.splitlines()[-1] == f"{'6.5 test_rope_properties':<48} 0.75 / 3"
    assert gradescope.main([str(tmp_path), str(out), "--module", "rope", "--timeout", "2.5", "--visibility",
                            "hidden"]) == 0
    assert seen["timeout"] == 2.5 and isinstance(seen["timeout"], float)
    assert json.loads(out.read_text())["tests"][0]["visibility"] == "hidden"
    table = tmp_path / "points.json"
    table.write_text(json.dumps({"rope": {"6.5": 2}}))
    capsys.readouterr()
    assert gradescope.main([str(tmp_path), str(out), "--module", "rope", "--points", str(table)]) == 0
    assert json.loads(out.read_text())["tests"][0]["max_score"] == 2.0  # the file's 2 points, not the 3 stars
    # what run_autograder's stdout shows the instructor: the summary, then one line per test (2 * 1/4 = 0.5)
    assert capsys.readouterr().out == ("0 of 1 exercises pass: 0.5 of 2 points.\n"
                                       f"{'6.5 test_rope_properties':<48} 0.5 / 2\n")


def test_the_command_runs_the_workers_as_the_user_it_is_given(monkeypatch, tmp_path):
    users = []
    _graded(monkeypatch)
    monkeypatch.setattr(gradescope, "run_as", users.append)
    assert gradescope.main([str(tmp_path), str(tmp_path / "r.json"), "--module", "rope"]) == 0
    assert gradescope.main([str(tmp_path), str(tmp_path / "r.json"), "--module", "rope", "--run-as", "pe_x"]) == 0
    assert users == ["pe_x"]


def test_grade_submission_grades_the_resolved_folder_by_name_and_times_it(monkeypatch, tmp_path):
    import itertools
    from exercises.grading.gradescope import time
    calls = []

    def grade_student(*args, **kwargs):
        calls.append((args, kwargs))
        return [dict(GS_RESULTS[2])]
    monkeypatch.setattr(instructor, "grade_student", grade_student)
    clock = itertools.chain([100.0, 101.23456], itertools.repeat(200.0))
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    path = tmp_path / "deep" / "results" / "results.json"  # neither deep/ nor results/ exists yet
    data = gradescope.grade_submission("sub", path, ["rope"], timeout=4)
    assert calls == [((tmp_path / "sub", ["rope"]), {"timeout": 4, "folder": tmp_path / "sub", "name": "submission"})]
    assert json.loads(path.read_text()) == data
    assert data["execution_time"] == 1.235  # 101.23456 - 100, to the millisecond
    assert [(t["visibility"], t["output"]) for t in data["tests"]] == [  # the defaults: visible, formative
        ("visible", "mutants caught: 1 of 4\nweak test: caught 1 of 4 mutants.")]


def test_a_grader_failure_gives_the_student_a_sentence_and_the_time_it_took(monkeypatch, tmp_path):
    import itertools
    from exercises.grading.gradescope import time

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")
    monkeypatch.setattr(instructor, "grade_student", broken)
    clock = itertools.chain([100.0, 100.00151], itertools.repeat(200.0))
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    path = tmp_path / "deep" / "results" / "results.json"
    data = gradescope.grade_submission(tmp_path, path, ["rope"])
    assert data == json.loads(path.read_text()) == {
        "score": 0.0, "execution_time": 0.002, "tests": [],  # 0.00151 s to the millisecond
        "output": "The autograder itself failed (RuntimeError: disk full). This is not your fault: tell your "
                  "instructor, who can rerun it."}


@pytest.mark.parametrize("argv", [["--visibility", "students"], ["--level", "loud"], []],
                         ids=["visibility", "level", "no-module"])
def test_the_command_refuses_a_bad_option_before_grading(monkeypatch, tmp_path, argv):
    seen = _graded(monkeypatch)
    module = [] if argv == [] else ["--module", "rope"]
    with pytest.raises(SystemExit) as refused:
        gradescope.main([str(tmp_path), str(tmp_path / "results.json"), *module, *argv])
    assert refused.value.code == 2  # argparse's usage error, not a later sentence
    assert seen == {} and not (tmp_path / "results.json").exists()


def test_run_as_locks_the_answers_down_then_runs_the_workers_as_that_user(monkeypatch):
    import os
    calls = []
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(gradescope, "lock_down", lambda: calls.append(grader.RUN_AS))
    monkeypatch.setattr(grader, "RUN_AS", None)
    gradescope.run_as("nobody")
    entry = pwd.getpwnam("nobody")
    assert calls == [None]  # locked down first, while the workers still ran as this process
    assert grader.RUN_AS == (entry.pw_uid, entry.pw_gid)


def test_lock_down_goes_on_past_an_answer_path_that_does_not_exist(monkeypatch, tmp_path):
    import os
    from exercises.grading import paths
    (tmp_path / "checks.py").write_text("x")
    monkeypatch.setattr(paths, "answer_paths", lambda: [tmp_path / "absent", tmp_path / "checks.py"])
    gradescope.lock_down()
    assert os.stat(tmp_path / "checks.py").st_mode & 0o777 == 0o600


def test_the_bundle_defaults_to_the_grader_timeout_visible_and_formative_and_its_scripts_run(tmp_path):
    out = gradescope.bundle(tmp_path / "gs", ["t5", "sinusoidal"])
    assert (f"--module t5 sinusoidal --timeout {DEFAULT_TIMEOUT:g} --visibility visible --points points.json "
            "--level formative") in (out / "run_autograder").read_text()
    readme = (out / "README.txt").read_text()
    assert "Modules graded: t5, sinusoidal." in readme and "feedback level: formative" in readme
    for name in ("setup.sh", "run_autograder"):  # executable by everyone (Gradescope runs them), still readable
        mode = (out / name).stat().st_mode
        assert mode & 0o111 == 0o111 and mode & 0o400, (name, oct(mode))
