r"""Feedback levels, and the files and Canvas CSV named by a roster, on hand-made results."""
import csv
import io

import pytest

from exercises.grading import feedback

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
    with pytest.raises(SystemExit, match="feedback level 'loud' is not one of: formative, summative"):
        feedback.text(WEAK, "loud")


def test_a_roster_names_the_canvas_rows_and_the_feedback_files(tmp_path):
    roster_path = tmp_path / "roster.csv"
    roster_path.write_text("student,name,id,sis_user_id,sis_login_id,section\n"
                           "alice,\"Liddell, Alice\",1001,S1,aliddell,Tuesday\n")
    roster = feedback.read_roster(roster_path)
    student = {"student": "alice", "exercise_points": 1, "exercise_out_of": 1, "points": 1, "out_of": 1,
               "written": {}, "by_assignment": {"rope exercises": 1},
               "results": {"6.1 rotate_half": dict(MISCONCEPTION, status="pass", kind="pass", points=1, possible=1)}}
    book = {"students": [student], "assignments": [("rope exercises", 1)]}
    rows = list(csv.reader(io.StringIO(feedback.canvas_csv(book, roster))))
    assert rows[2] == ["Liddell, Alice", "1001", "S1", "aliddell", "Tuesday", "1"]
    paths = feedback.write_files(book, tmp_path / "fb", "summative", roster)
    assert sorted(p.name for p in paths) == ["alice_1001.html", "alice_1001.md"]
    bad = tmp_path / "bad.csv"
    bad.write_text("name,id\nAlice,1\n")
    with pytest.raises(SystemExit, match="needs a 'student' column"):
        feedback.read_roster(bad)


def test_the_canvas_csv_keeps_fractional_points_to_two_decimals_as_the_gradebook_gives_them():
    # a 4-point test catching 2 of 3 mutants scores 4 * 2/3 = 2.67 (points.worth); a half-point exercise 0.5;
    # the numbers as the gradebook holds them, printed with every digit of their two decimals
    assignments = [("rope exercises", 4.5), ("t5 exercises", 0.5), ("chapter 12 written", 12345.67)]
    student = {"student": "alice", "by_assignment": {"rope exercises": 2.67, "t5 exercises": 0.5,
                                                      "chapter 12 written": 1234.25}}
    rows = list(csv.reader(io.StringIO(feedback.canvas_csv({"students": [student], "assignments": assignments}))))
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
    with pytest.raises(SystemExit, match="visibility 'students' is not one of Gradescope's: hidden, after_due_date, "
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
    assert feedback.markdown(ERIN, "summative") == ERIN_SUMMATIVE
    page = feedback.page(ERIN, "summative")
    assert "<title>Feedback for erin</title>" in page and "<p>Total: 3.67 of 11 points.</p>" in page
    assert ("<h2>2.1 sinusoidal_positional_encoding</h2>\n<p><strong>fail (public cases: pass; held-out cases: "
            "fail)</strong>, 0 of 1 point.</p>\n<pre>fail on the held-out cases: some outputs are wrong.</pre>") in page
    assert "<h2>written 02 Q1</h2>\n<p><strong>not graded yet</strong>, 0 of 2 points.</p>\n</body>" in page
    assert not [s for s in SECRETS if s in page]
    done = dict(ERIN, written={"02": dict(ERIN["written"]["02"], ungraded=0)})
    assert "Written answers, chapter 02: 1 of 6 points.\n" in feedback.markdown(done, "summative")
    formative = feedback.markdown(ERIN, "formative")
    assert all(s in formative for s in SECRETS)  # the same student at the formative level: the whole message


def test_write_files_names_each_student_by_the_roster_and_writes_both_pages(tmp_path):
    roster = {"erin": {"id": "1005"}, "zed": {"name": "Zed"}}
    paths = feedback.write_files({"students": [ERIN, dict(ERIN, student="zed")]}, tmp_path / "fb", "summative", roster)
    assert [p.name for p in paths] == ["erin_1005.md", "erin_1005.html", "zed.md", "zed.html"]
    assert (tmp_path / "fb" / "erin_1005.md").read_text() == ERIN_SUMMATIVE
    assert (tmp_path / "fb" / "erin_1005.html").read_text() == feedback.page(ERIN, "summative")
    assert feedback.write_files({"students": [ERIN]}, tmp_path / "plain", "formative")[0].name == "erin.md"
    assert feedback.read_roster(None) == {}
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert feedback.read_roster(empty) == {}
    with pytest.raises(SystemExit, match=r"--roster .*missing.csv: cannot read it \(No such file or directory\)\."):
        feedback.read_roster(tmp_path / "missing.csv")


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
    with pytest.raises(SystemExit, match=r"--run-as pe_student: only root can run code as another user; this runs "
                                         r"as uid 1000\."):
        gradescope.run_as("pe_student")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    with pytest.raises(SystemExit, match=r"--run-as no_such_user_kit: no such user; create it \(useradd --system "
                                         r"no_such_user_kit\) first\."):
        gradescope.run_as("no_such_user_kit")
    with pytest.raises(SystemExit, match=r"--run-as root: that user is root; give an unprivileged one\."):
        gradescope.run_as("root")
