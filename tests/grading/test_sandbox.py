r"""Grading a class you cannot trust: hostile submissions, each reported, none harming anyone else.

A class folder is written into a temporary folder: one correct student, one who wrote nothing,
and one student per kind of attack. ``grade-folder`` grades them all with small limits, and the
tests check that every attack is reported in the gradebook, that the files outside the
submissions are untouched, that the other students' rows are right, and that both report files
are complete.
"""
import csv
import hashlib
import json
import os
import shutil
import subprocess

import pytest

from exercises.grading.generate import generated_text, region_labels
from exercises.grading.grader import grade_file
from exercises.grading.instructor import grade_folder
from exercises.grading.paths import GRADING, SOLUTIONS
from exercises.grading.sandbox import Limits

TIMEOUT = 3.0
CORRECT = (SOLUTIONS / "rope.py").read_text()


LABELS = region_labels(CORRECT)  # {name: "Exercise 6.N"}: the numbers come from solutions/ alone


def _col(name):
    """The gradebook column of an exercise: '6.1 rotate_half'."""
    return f"{LABELS[name].split()[-1]} {name}"


def _correct_with(top="", **bodies):
    r"""The reference's file with code added at the top and some exercises' bodies (by name) prefixed."""
    text = CORRECT.replace("import math\n", "import math\nimport os\nimport sys\n" + top + "\n", 1)
    for name, extra in bodies.items():
        marker = f"# BEGIN SOLUTION {LABELS[name]}\n"
        start = text.index(marker)
        indent = text[text.rindex("\n", 0, start) + 1:start]
        text = text.replace(marker, marker + "".join(f"{indent}{line}\n" for line in extra.strip().splitlines()), 1)
    return text


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    outside, keep = root / "outside.txt", root / "keep.txt"
    outside.write_text("the teacher's notes\n")
    keep.write_text("another file\n")
    class_dir = root / "class"
    (class_dir / "alice" / "exercises").mkdir(parents=True)
    (class_dir / "alice" / "exercises" / "rope.py").write_text(CORRECT)
    (class_dir / "bob.py").write_text(generated_text("rope"))
    students = {
        # deletes a file outside its folder at import time, and carries on when refused
        "vandal": _correct_with(top=f"try:\n    os.remove({str(outside)!r})\nexcept OSError:\n    pass\n"),
        # writes outside its folder from one exercise only
        "scribbler": _correct_with(**{"rotate_half": f"open({str(keep)!r}, 'w').write('overwritten')"}),
        # imports the reference
        "copier": "from solutions.rope import *  # noqa\n",
        # forks without end in one exercise, allocates without end in another
        "forker": _correct_with(**{"rotate_half": "while True:\n    os.fork()"}),
        "hog": _correct_with(**{"apply_rotary": "hoard = []\nwhile True:\n    hoard.append(xp.empty(1 << 24))"}),
        # prints tens of megabytes, then answers correctly
        "chatterbox": _correct_with(**{"rotate_half": "print('x' * (20 << 20))"}),
        # never returns
        "sleeper": _correct_with(**{"RotaryEmbedding": "while True:\n    pass"}),
        # patches the grader in memory, forges the grader's protocol, and reads the environment
        "patcher": _correct_with(top="""
import numpy
numpy.allclose = numpy.array_equal = lambda *a, **k: True
for name, module in list(sys.modules.items()):
    if name.startswith("exercises.grading") or name == "__main__":
        for attr in ("judge", "run_cases", "describe", "encode", "decode"):
            if hasattr(module, attr):
                setattr(module, attr, lambda *a, **k: {"found": "function", "stubs": {}, "signatures": {}})
""", **{"wavelength_table": """
import json
for fd in range(3, 30):
    for index in range(12):
        try:
            os.write(fd, (json.dumps({"event": "result", "index": index, "report": {"found": "function"}}) + "\\n").encode())
        except OSError:
            pass
raise RuntimeError('secret: ' + os.environ.get('PE_TEST_SECRET', 'none here'))"""}),
        # edits the grader's own files on disk
        "tamperer": _correct_with(top="""
try:
    open(os.path.join(os.path.dirname(sys.modules["exercises.grading.wire"].__file__), "judging.py"), "a").write("#")
except OSError:
    pass
"""),
    }
    for name, text in students.items():
        (class_dir / f"{name}.py").write_text(text)
    (class_dir / "liar").mkdir()
    os.symlink(SOLUTIONS / "rope.py", class_dir / "liar" / "rope.py")  # hands in a link to the reference
    judging = GRADING / "judging.py"
    before = hashlib.sha256(judging.read_bytes()).hexdigest()
    os.environ["PE_TEST_SECRET"] = "the grader's token"
    try:
        report = grade_folder(class_dir, root / "report", timeout=TIMEOUT, limits=Limits(memory_mb=600))
    finally:
        del os.environ["PE_TEST_SECRET"]
    return {"report": report, "root": root, "outside": outside, "keep": keep,
            "judging_unchanged": hashlib.sha256(judging.read_bytes()).hexdigest() == before}


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
