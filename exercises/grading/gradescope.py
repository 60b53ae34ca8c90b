r"""A Gradescope autograder for the exercises: the bundle, and one submission's results.json.

    python -m exercises gradescope --out gs_rope --module rope      # gs_rope/ and gs_rope.zip
    python -m exercises gradescope --out gs_all                     # every exercise module

Upload the ``.zip`` as the assignment's autograder (a "Programming Assignment", "Zip file upload").
Students submit their ``exercises/<module>.py`` files (the files alone, or the ``exercises/``
folder): each module is looked for anywhere in the submission, the shallowest copy wins, and a
module not handed in scores zero for its exercises.

What Gradescope expects, from its "Autograder Specifications"
(https://gradescope-autograders.readthedocs.io/en/latest/specs/, read when this was written):

* the zip holds ``setup.sh`` (a Bash script that installs the dependencies on Gradescope's Ubuntu
  image) and ``run_autograder`` (an executable script with a ``#!`` line) at its root, not inside
  a folder; its contents are extracted to ``/autograder/source``;
* when the autograder runs, the working folder is ``/autograder``, the student's files are in
  ``/autograder/submission``, and the script must write ``/autograder/results/results.json``
  (what the script prints goes to ``/autograder/results/stdout``, shown to instructors only);
* ``results.json`` holds an optional top-level ``score`` (required when the tests carry no
  scores), ``execution_time`` (seconds), ``output`` (text about the whole submission),
  ``visibility`` and ``stdout_visibility``, ``extra_data``, and a ``tests`` list, each test with
  optional ``score``, ``max_score``, ``status`` (``"passed"`` or ``"failed"``), ``name``,
  ``number``, ``output``, ``tags`` and ``visibility`` (``"hidden"``, ``"after_due_date"``,
  ``"after_published"`` or ``"visible"``).

Here every exercise is one test, named by its label (``6.2 apply_rotary``), worth its points in the
instructor's table (``points.py``: one point a star unless ``--points`` says otherwise; a test the reader
writes scores the fraction of its mutants it caught), whose ``output`` is the feedback at the chosen
level (``feedback.py``: formative or summative), the same text as the per-student feedback files. The
grading is the one of ``grade-folder``, held-out cases included: each exercise in a fresh sandboxed
worker (``sandbox.py``), the reference compiled afresh in the grader's own process.

**No root for student code.** Gradescope runs ``run_autograder`` as root. When it is root, the script
makes sure an unprivileged user exists (``pe_student``, or ``$AUTOGRADER_USER``), locks ``solutions/``,
every grading file a student copy does not hold (the checks with their held-out cases, the
known-wrong files) and ``instructor_only/`` to root alone (``lock_down``), and the grader runs every
worker process as that user (``grader.RUN_AS``): the student's code can read none of them, cannot
write the results, and cannot signal the grader. The grader itself stays root, so a hang, a crash or a
flood of output in the student's code still ends in a complete ``results.json``.
"""
import argparse
import json
import os
import shutil
import stat
import sys
import time
from pathlib import Path

from exercises.grading.errors import CommandError
from exercises.grading.grader import DEFAULT_TIMEOUT
from exercises.grading.paths import ROOT
from mini_transformer.engine.files import atomic_write

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
BUNDLED = ("exercises/", "solutions/", "mini_transformer/", "pyproject.toml", "requirements.txt")
LEFT_OUT = ("exercises/grading/instructor_only/",)  # rubrics and the capstone's reference: not for the autograder
POINTS_FILE = "points.json"  # in the bundle's workbook: the instructor's table, fixed when the bundle is written


def results_json(results, execution_time=None, visibility="visible", table=None, level="formative"):
    r"""One student's grading (``grade_student``'s results, every module) -> Gradescope's results dict."""
    from exercises.grading.feedback import text
    from exercises.grading.instructor import gradebook_row
    from exercises.grading.points import fmt
    row = gradebook_row(results, table)
    tests = []
    for col, r in sorted(row["results"].items(), key=lambda item: _order(item[0])):
        passed = r["status"] == "pass"
        module = r["target"].split(".", 1)[0]
        output = text(r, level) if r.get("message") else (
            f"not attempted: write it in exercises/{module}.py" if r["status"] == "not attempted" else r["status"])
        if r.get("caught"):
            output = f"mutants caught: {r['caught'][0]} of {r['caught'][1]}\n{output}"
        if r.get("held_out") is not None:
            output = f"public cases: {r['public']}; held-out cases: {r['held_out']}\n{output}"
        tests.append({"name": col, "number": col.split()[0], "score": float(r["points"]),
                      "max_score": float(r["possible"]), "status": "passed" if passed else "failed",
                      "output": output, "visibility": visibility})
    missing = sorted({r["target"].split(".", 1)[0] for r in results if r.get("kind") == "missing"})
    passing = sum(r["status"] == "pass" for r in results)
    lines = [f"{passing} of {len(results)} exercises pass: {fmt(row['points'])} of {fmt(row['out_of'])} points."]
    if missing:
        lines.append(f"Not handed in (each of their exercises scores zero): "
                     f"{', '.join(m + '.py' for m in missing)}.")
    out = {"score": float(row["points"]), "output": "\n".join(lines), "tests": tests}
    if execution_time is not None:
        out["execution_time"] = round(float(execution_time), 3)
    return out


def _order(col):
    return tuple(int(p) if p.isdigit() else 10 ** 6 for p in col.split()[0].split("."))


def grade_submission(submission, results_path, modules, timeout=DEFAULT_TIMEOUT, visibility="visible",
                     points=None, level="formative"):
    r"""Grade the folder ``submission`` over ``modules`` and write ``results_path``; returns the dict.

    Whatever goes wrong in the grader itself still leaves a results.json that says so, with score 0,
    so the student sees a sentence instead of Gradescope's "the autograder failed to produce output".
    """
    from exercises.grading.instructor import grade_student
    start = time.monotonic()
    submission = Path(submission).resolve()
    try:
        from exercises.grading.points import load
        results = grade_student(submission, modules, timeout=timeout, folder=submission, name="submission")
        data = results_json(results, time.monotonic() - start, visibility, load(points, modules), level)
    except Exception as e:  # the student must get a sentence, never an empty page
        data = {"score": 0.0, "execution_time": round(time.monotonic() - start, 3), "tests": [],
                "output": f"The autograder itself failed ({type(e).__name__}: {e}). This is not your fault: "
                          "tell your instructor, who can rerun it."}
    Path(results_path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write(Path(results_path), lambda f: f.write(json.dumps(data, indent=1).encode()))
    return data


_SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image (Ubuntu): the grader needs Python 3
# and NumPy. The workbook itself is in /autograder/source/workbook and is run from there, not installed.
set -euo pipefail
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y python3 python3-pip
python3 -m pip install "numpy>=1.24" || python3 -m pip install --break-system-packages "numpy>=1.24"
"""

_RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission (working folder /autograder). It grades the exercise files
# in /autograder/submission and writes /autograder/results/results.json. AUTOGRADER_ROOT and
# AUTOGRADER_PYTHON let you try it on your own machine (see chapters/TEACHING.md).
set -u
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PYTHON="${{AUTOGRADER_PYTHON:-python3}}"
mkdir -p "$ROOT/results"
cd "$ROOT/source/workbook"
RUN_AS=()
STUDENT="${{AUTOGRADER_USER-pe_student}}"  # set AUTOGRADER_USER= (empty) to try it as yourself, as root too
if [ "$(id -u)" = 0 ] && [ -n "$STUDENT" ]; then  # Gradescope runs this as root: student code runs unprivileged
  id -u "$STUDENT" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$STUDENT"
  RUN_AS=(--run-as "$STUDENT")
fi
exec "$PYTHON" -m exercises.grading.gradescope "$ROOT/submission" "$ROOT/results/results.json" \\
  --module {modules} --timeout {timeout:g} --visibility {visibility} --points {points} --level {level} ${{RUN_AS[@]+"${{RUN_AS[@]}}"}}
"""


def bundle(out_dir, modules, timeout=DEFAULT_TIMEOUT, visibility="visible", points=None, level="formative"):
    r"""Write the autograder into ``out_dir`` (new or empty) and ``out_dir.zip``; returns ``out_dir``."""
    from exercises.grading import points as pts
    from exercises.grading.release import tracked_files
    table = pts.load(points, modules)  # the chapters' stars are read here: the bundle has no chapters
    if visibility not in VISIBILITIES:
        raise CommandError(f"visibility {visibility!r} is not one of Gradescope's: {', '.join(VISIBILITIES)}.")
    out = Path(out_dir).resolve()
    if out.exists() and any(out.iterdir()):
        raise CommandError(f"{out} is not empty; give a new folder for the autograder bundle.")
    if out == ROOT or ROOT in out.parents:
        raise CommandError(f"{out} is inside the workbook; write the bundle elsewhere (it holds solutions/).")
    for rel in tracked_files():
        if (rel.startswith(BUNDLED) or rel in BUNDLED) and not rel.startswith(LEFT_OUT):
            dst = out / "workbook" / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dst)
    (out / "workbook" / POINTS_FILE).write_text(json.dumps(table, indent=1) + "\n")
    for name, text in (("setup.sh", _SETUP), ("run_autograder", _RUN.format(
            modules=" ".join(modules), timeout=timeout, visibility=visibility, points=POINTS_FILE, level=level))):
        (out / name).write_text(text)
        (out / name).chmod((out / name).stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (out / "README.txt").write_text(
        "Gradescope autograder for the positional-encodings workbook, written by `python -m exercises gradescope`.\n"
        f"Modules graded: {', '.join(modules)}. Each exercise is one test, worth its points in "
        f"workbook/{POINTS_FILE}; feedback level: {level}.\n"
        "Run as root (as Gradescope does), it runs the student's code as the unprivileged user pe_student.\n"
        "Upload the .zip next to this folder (its files are at the zip's root, as Gradescope requires).\n"
        "Students submit their exercises/<module>.py files.\n")
    shutil.make_archive(str(out), "zip", root_dir=out)
    return out


def lock_down():
    r"""Make ``solutions/``, ``instructor_only/`` and every grading file a student copy does not hold readable by
    their owner (root) alone: ``paths.answer_paths``, the same list the sandbox refuses to open."""
    from exercises.grading.paths import answer_paths
    for place in answer_paths():
        if not place.exists():
            continue
        for p in [place, *place.rglob("*")] if place.is_dir() else [place]:
            p.chmod(0o700 if p.is_dir() else 0o600)


def run_as(user):
    r"""Run every worker as ``user`` (this process must be root): lock the answers down, then set ``grader.RUN_AS``."""
    import pwd
    from exercises.grading import grader
    if os.geteuid() != 0:
        raise CommandError(f"--run-as {user}: only root can run code as another user; this runs as uid {os.geteuid()}.")
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise CommandError(f"--run-as {user}: no such user; create it (useradd --system {user}) first.") from None
    if entry.pw_uid == 0:
        raise CommandError(f"--run-as {user}: that user is root; give an unprivileged one.")
    lock_down()
    grader.RUN_AS = (entry.pw_uid, entry.pw_gid)


def main(argv=None):
    r"""``python -m exercises.grading.gradescope SUBMISSION RESULTS --module M ...``: what run_autograder runs."""
    p = argparse.ArgumentParser(prog="python -m exercises.grading.gradescope", description=main.__doc__)
    p.add_argument("submission")
    p.add_argument("results")
    p.add_argument("--module", nargs="+", required=True)
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    p.add_argument("--visibility", default="visible", choices=VISIBILITIES)
    p.add_argument("--points", default=None)
    p.add_argument("--level", default="formative", choices=("formative", "summative"))
    p.add_argument("--run-as", default=None, help="run the student's code as this unprivileged user (needs root)")
    args = p.parse_args(argv)
    try:
        if args.run_as:
            run_as(args.run_as)
        data = grade_submission(args.submission, args.results, args.module, args.timeout, args.visibility,
                                args.points, args.level)
    except CommandError as e:  # its own command line, as cli.main does: the sentence, not a traceback
        print(e, file=sys.stderr)
        return e.code
    print(data["output"])
    for t in data["tests"]:
        print(f"{t['name']:<48} {t['score']:g} / {t['max_score']:g}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.exit(main())
