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
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import background  # noqa: E402
import hostile_class  # noqa: E402
import known_wrong_runs  # noqa: E402
import release_copy  # noqa: E402

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


def environment(base=None):
    r"""The guide's commands' environment: ``base`` (default: this process's now) with the tests' Python first on
    ``PATH`` and ``WORKBOOK`` set."""
    base = os.environ if base is None else base
    env = dict(base, PATH=f"{Path(sys.executable).parent}{os.pathsep}{base.get('PATH', '')}",
               WORKBOOK=str(ROOT), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    env.pop("PYTHONPATH", None)
    return env


def run_line(line, folder, timeout=600, env=None):
    r"""One command line of the guide, run by bash in ``folder``."""
    return background.run(["bash", "-c", line], cwd=str(folder), env=environment(env), timeout=timeout)


def guide_job(env):
    r"""The guide's bash blocks read now; ``run()`` runs them in order in a new folder, with ``env``."""
    lines = [line for language, block in guide_blocks() if language == "bash" for line in commands(block)]

    def run():
        folder = Path(background.folder("course"))
        ran = []
        for line in lines:
            if "--manual week2_written.csv" in line:
                fill_sheet(folder / "week2_written.csv")
            done = run_line(line, folder, env=env)
            assert done.returncode == 0, f"$ {line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            ran.append((line, done))
        return {"folder": folder, "ran": ran}
    return run


@pytest.fixture(scope="session")
def guide_run():
    r"""``{"folder", "ran": [(command, CompletedProcess)]}``: the guide's bash blocks, run in order, beside the
    other tests from the end of collection (``tests/background.py``)."""
    return background.result("guide", guide_job(background.snapshot()))


def all_modules_job(env, timeout="2"):
    r"""Every module's reference read now; ``run()`` hands them in as student zoe (and nothing as yann) and grades
    the folder with ``grade-folder --all-modules``: ``(CompletedProcess, folder)``, the gradebook in
    ``folder / "book.csv"``. ``timeout``: seconds per exercise."""
    references = {p.name: p.read_text() for p in (ROOT / "solutions").glob("[a-z]*.py")}

    def run():
        folder = Path(background.folder("all-modules"))
        (folder / "submissions" / "zoe" / "exercises").mkdir(parents=True)
        for name, text in references.items():   # every module's reference, as a student would hand it in
            (folder / "submissions" / "zoe" / "exercises" / name).write_text(text)
        (folder / "submissions" / "yann" / "exercises").mkdir(parents=True)   # handed in nothing
        out = background.run([sys.executable, "-m", "exercises", "grade-folder", str(folder / "submissions"),
                              "--out", str(folder / "book"), "--all-modules", "--timeout", timeout],
                             env=env, cwd=str(ROOT), timeout=600)
        return out, folder
    return run


@pytest.fixture(scope="session")
def all_modules_graded():
    r"""``(CompletedProcess, folder)`` of ``all_modules_job``, run beside the other tests (``tests/background.py``)."""
    return background.result("all modules", all_modules_job(background.snapshot()))


def pytest_collection_finish(session):
    r"""Start what the selected tests will ask for (``tests/background.py``): the guide, the known-wrong grading,
    every module's reference graded, the hostile class graded, the student copy made and its own tests run."""
    jobs = {"guide_run": ("guide", guide_job),
            "wrong_results": ("known wrong", lambda env: known_wrong_runs.job(env, known_wrong_runs.TIMEOUT)),
            "all_modules_graded": ("all modules", all_modules_job),
            "copy_and_own_tests": ("release copy", release_copy.job)}
    for fixture, (key, make) in jobs.items():
        first = background.first_use(session.items, background.uses(fixture))
        if first is not None:
            background.submit(key, make(background.snapshot()), priority=first)
    # test_sandbox.py's own fixture is named ``graded``, as other modules' are
    first = background.first_use(session.items, lambda item: item.path.name == "test_sandbox.py"
                                 and "graded" in getattr(item, "fixturenames", ()))
    if first is not None:
        background.submit("hostile class", hostile_class.job(background.snapshot()), priority=first)
