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
