r"""The instructor guide, run: every command of ``chapters/TEACHING.md`` in an empty course folder, once a session.

``guide_run`` runs each line of the guide's ``bash`` blocks in order (with ``python`` the interpreter of
the tests and ``WORKBOOK`` this repository), does the one step the guide leaves to the instructor
(filling the sheet of hand-graded answers, before the block that merges it), and returns what every
command printed. ``tests/grading/test_teaching.py`` checks the guide against it, and
``tests/grading/test_course.py`` reads the sample class's gradebook from it.
"""
import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "chapters" / "TEACHING.md"


def guide_blocks(text=None):
    r"""``[(language, [lines])]``: the fenced blocks of the guide, in order."""
    text = GUIDE.read_text() if text is None else text
    return [(m.group(1), m.group(2).splitlines()) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)]


def commands(lines):
    r"""The command lines of a bash block: not blank, not a comment; a trailing ``# note`` dropped."""
    out = []
    for line in lines:
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def transcript(lines):
    r"""``[(command, expected output lines)]`` of a text block written as a terminal session (``$ command``)."""
    out = []
    for line in lines:
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return out


def fill_sheet(path):
    r"""The instructor's step: alice gets every point of every hand-graded item, erin a point per prediction."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        if r["student"] == "alice":
            r["points"], r["comment"] = r["out_of"], "full marks"
        elif r["student"] == "erin" and r["item"].startswith("C"):
            r["points"], r["comment"] = "1", "a reason given"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def environment():
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               WORKBOOK=str(ROOT), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    env.pop("PYTHONPATH", None)
    return env


def run_line(line, folder, timeout=600):
    done = subprocess.run(["bash", "-c", line], cwd=folder, env=environment(), capture_output=True, text=True,
                          timeout=timeout)
    return done


@pytest.fixture(scope="session")
def guide_run(tmp_path_factory):
    r"""``{"folder", "ran": [(command, CompletedProcess)]}``: the guide's bash blocks, run in order."""
    folder = tmp_path_factory.mktemp("course")
    ran = []
    for language, lines in guide_blocks():
        if language != "bash":
            continue
        for line in commands(lines):
            if "--manual week2_written.csv" in line:
                fill_sheet(folder / "week2_written.csv")
            done = run_line(line, folder)
            assert done.returncode == 0, f"$ {line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            ran.append((line, done))
    return {"folder": folder, "ran": ran}
