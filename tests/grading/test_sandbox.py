r"""Grading a class you cannot trust: hostile submissions, each reported, none harming anyone else.

A class folder is written into a temporary folder (``hostile_class.py``): one correct student, one who wrote
nothing, and one student per kind of attack. ``grade_folder`` grades them all with small limits, in a process
of its own beside the other tests, and the
tests check that every attack is reported in the gradebook, that the files outside the
submissions are untouched, that the other students' rows are right, and that both report files
are complete.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from exercises.grading.grader import grade_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import background  # noqa: E402
import hostile_class  # noqa: E402
from hostile_class import CORRECT, LABELS, TIMEOUT  # noqa: E402


def _col(name):
    """The gradebook column of an exercise: '6.1 rotate_half'."""
    return f"{LABELS[name].split()[-1]} {name}"


@pytest.fixture(scope="module")
def graded():
    r"""The hostile class written and graded (``hostile_class.py``), beside the other tests from the end of
    collection (``conftest.py``, ``tests/background.py``)."""
    return background.result("hostile class", hostile_class.job(background.snapshot()))


def _row(graded, name):
    return next(s for s in graded["report"]["students"] if s["student"] == name)


def _kinds(graded, name):
    return {c: r["kind"] for c, r in _row(graded, name)["results"].items()}


@pytest.mark.slow
def test_nothing_outside_the_submissions_changed(graded):
    assert graded["outside"].read_text() == "the teacher's notes\n"
    assert graded["keep"].read_text() == "another file\n"
    assert graded["judging_unchanged"]


@pytest.mark.slow
def test_the_other_students_rows_are_right(graded):
    assert set(_kinds(graded, "alice").values()) == {"pass"}
    assert _row(graded, "alice")["passed"] == len(graded["report"]["exercises"]) >= 9
    assert set(_kinds(graded, "bob").values()) == {"not attempted"}


@pytest.mark.slow
def test_deleting_or_writing_outside_is_reported(graded):
    vandal = _row(graded, "vandal")["results"]
    assert {r["kind"] for r in vandal.values()} == {"sandbox"}
    assert all(f"delete {graded['outside']}" in r["message"] for r in vandal.values())
    scribbler = _row(graded, "scribbler")["results"]
    assert scribbler[_col("rotate_half")]["kind"] == "sandbox"
    assert f"write {graded['keep']} (outside its own folder)" in scribbler[_col("rotate_half")]["message"]
    assert scribbler[_col("apply_rotary")]["status"] == "pass"  # only the exercise that tried it fails


@pytest.mark.slow
def test_importing_the_reference_is_reported(graded):
    copier = _row(graded, "copier")["results"]
    assert {r["kind"] for r in copier.values()} == {"reference_import"}
    assert "import solutions" in copier[_col("rotate_half")]["message"]
    liar = _row(graded, "liar")["results"]
    assert {r["kind"] for r in liar.values()} == {"link"} and "is a link" in liar[_col("rotate_half")]["message"]


@pytest.mark.slow
def test_forking_and_hoarding_memory_are_stopped(graded):
    forker = _row(graded, "forker")["results"][_col("rotate_half")]
    assert forker["kind"] == "sandbox" and "start a process (os.fork)" in forker["message"]
    hog = _row(graded, "hog")["results"][_col("apply_rotary")]
    assert hog["kind"] == "raised" and "MemoryError" in hog["message"], hog["message"]
    assert _row(graded, "hog")["results"][_col("rotate_half")]["status"] == "pass"


@pytest.mark.slow
def test_megabytes_of_output_cost_nothing_but_a_note(graded):
    r = _row(graded, "chatterbox")["results"][_col("rotate_half")]
    assert r["status"] == "pass" and "printed 100.0 MB" in r["message"]  # 20 MB on each of 5 cases


@pytest.mark.slow
def test_a_submission_that_never_returns_times_out(graded):
    r = _row(graded, "sleeper")["results"][_col("RotaryEmbedding")]
    assert r["kind"] == "timeout", r["message"]
    assert _row(graded, "sleeper")["results"][_col("relative_score")]["status"] == "pass"


@pytest.mark.slow
def test_patching_the_grader_gains_nothing(graded):
    patcher = _row(graded, "patcher")["results"]
    assert "pass" not in {r["status"] for r in patcher.values()}, patcher  # the verdicts are reached elsewhere
    assert "the grader's token" not in json.dumps(patcher)  # the environment was scrubbed
    tamperer = _row(graded, "tamperer")["results"]
    assert {r["kind"] for r in tamperer.values()} == {"sandbox"}
    assert "judging.py (outside its own folder)" in tamperer[_col("rotate_half")]["message"]


@pytest.mark.slow
def test_the_gradebook_is_complete(graded):
    root, report = graded["root"], graded["report"]
    columns = report["exercises"]
    expected = {"alice", "bob", "vandal", "scribbler", "copier", "forker", "hog", "chatterbox", "sleeper", "patcher",
                "tamperer", "liar"}
    with open(root / "report.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["student"] for r in rows} == expected and len(rows) == len(expected)
    assert all(r[c] for r in rows for c in columns)
    data = json.loads((root / "report.json").read_text())
    assert {s["student"] for s in data["students"]} == expected
    assert all(set(s["results"]) == set(columns) for s in data["students"])
    assert not [p for p in root.iterdir() if p.name.startswith(".tmp-")]  # no half-written report left behind


def test_a_wrapper_command_runs_every_graded_process(tmp_path):
    """--wrap puts a real sandbox (bwrap, unshare, docker) in front of each graded process."""
    marker = tmp_path / "wrapped"
    wrapper = tmp_path / "wrapper.sh"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {marker}\nexec "$@"\n')
    wrapper.chmod(0o755)
    source = tmp_path / "ada.py"
    source.write_text(CORRECT)
    names = ["rotate_half", "apply_rotary"]
    results = grade_file(source, "rope", names=names, timeout=TIMEOUT, wrap=str(wrapper))
    assert [r["status"] for r in results] == ["pass", "pass"]
    runs = marker.read_text().splitlines()
    assert len(runs) == 2 and all("worker.py" in line for line in runs)  # one wrapped process per exercise
    if shutil.which("unshare") and subprocess.run(["unshare", "--net", "true"], capture_output=True).returncode == 0:
        results = grade_file(source, "rope", names=names[:1], timeout=TIMEOUT, wrap="unshare --net --")
        assert results[0]["status"] == "pass"  # the same grade without a network
