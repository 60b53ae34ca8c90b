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

Here every exercise is one test worth one point, named by its label (``6.2 apply_rotary``),
whose ``output`` is the grader's layered feedback; a test the reader writes says in its output
how many mutants it caught. The grading is the one of ``grade-folder``: each exercise in a fresh
sandboxed worker (``sandbox.py``), the reference compiled afresh in the grader's own process.
"""
import argparse
import json
import os
import shutil
import stat
import sys
import time
from pathlib import Path

from exercises.grading.grader import DEFAULT_TIMEOUT
from exercises.grading.paths import ROOT
from mini_transformer.model.checkpoint import atomic_write

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
BUNDLED = ("exercises/", "solutions/", "mini_transformer/", "pyproject.toml", "requirements.txt")


def results_json(results, execution_time=None, visibility="visible"):
    r"""One student's grading (``grade_student``'s results, every module) -> Gradescope's results dict."""
    from exercises.grading.instructor import gradebook_row
    row = gradebook_row(results)
    tests = []
    for col, r in sorted(row["results"].items(), key=lambda item: _order(item[0])):
        passed = r["status"] == "pass"
        module = r["target"].split(".", 1)[0]
        output = r.get("message") or (f"not attempted: write it in exercises/{module}.py" if
                                      r["status"] == "not attempted" else r["status"])
        if r.get("caught"):
            output = f"mutants caught: {r['caught'][0]} of {r['caught'][1]}\n{output}"
        tests.append({"name": col, "number": col.split()[0], "score": 1.0 if passed else 0.0, "max_score": 1.0,
                      "status": "passed" if passed else "failed", "output": output, "visibility": visibility})
    missing = sorted({r["target"].split(".", 1)[0] for r in results if r.get("kind") == "missing"})
    lines = [f"{row['points']} of {row['out_of']} exercises pass."]
    if missing:
        lines.append(f"Not handed in (each of their exercises scores zero): "
                     f"{', '.join(m + '.py' for m in missing)}.")
    out = {"score": float(row["points"]), "output": "\n".join(lines), "tests": tests}
    if execution_time is not None:
        out["execution_time"] = round(float(execution_time), 3)
    return out


def _order(col):
    return tuple(int(p) if p.isdigit() else 10 ** 6 for p in col.split()[0].split("."))


def grade_submission(submission, results_path, modules, timeout=DEFAULT_TIMEOUT, visibility="visible"):
    r"""Grade the folder ``submission`` over ``modules`` and write ``results_path``; returns the dict.

    Whatever goes wrong in the grader itself still leaves a results.json that says so, with score 0,
    so the student sees a sentence instead of Gradescope's "the autograder failed to produce output".
    """
    from exercises.grading.instructor import grade_student
    start = time.monotonic()
    submission = Path(submission).resolve()
    try:
        results = grade_student(submission, modules, timeout=timeout, folder=submission, name="submission")
        data = results_json(results, time.monotonic() - start, visibility)
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
exec "$PYTHON" -m exercises.grading.gradescope "$ROOT/submission" "$ROOT/results/results.json" \\
  --module {modules} --timeout {timeout:g} --visibility {visibility}
"""


def bundle(out_dir, modules, timeout=DEFAULT_TIMEOUT, visibility="visible"):
    r"""Write the autograder into ``out_dir`` (new or empty) and ``out_dir.zip``; returns ``out_dir``."""
    from exercises.grading.release import _tracked_files
    if visibility not in VISIBILITIES:
        raise SystemExit(f"visibility {visibility!r} is not one of Gradescope's: {', '.join(VISIBILITIES)}.")
    out = Path(out_dir).resolve()
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} is not empty; give a new folder for the autograder bundle.")
    if out == ROOT or ROOT in out.parents:
        raise SystemExit(f"{out} is inside the workbook; write the bundle elsewhere (it holds solutions/).")
    for rel in _tracked_files():
        if rel.startswith(BUNDLED) or rel in BUNDLED:
            dst = out / "workbook" / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dst)
    for name, text in (("setup.sh", _SETUP), ("run_autograder", _RUN.format(
            modules=" ".join(modules), timeout=timeout, visibility=visibility))):
        (out / name).write_text(text)
        (out / name).chmod((out / name).stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (out / "README.txt").write_text(
        "Gradescope autograder for the positional-encodings workbook, written by `python -m exercises gradescope`.\n"
        f"Modules graded: {', '.join(modules)}. Each exercise is one test worth one point.\n"
        "Upload the .zip next to this folder (its files are at the zip's root, as Gradescope requires).\n"
        "Students submit their exercises/<module>.py files.\n")
    shutil.make_archive(str(out), "zip", root_dir=out)
    return out


def main(argv=None):
    r"""``python -m exercises.grading.gradescope SUBMISSION RESULTS --module M ...``: what run_autograder runs."""
    p = argparse.ArgumentParser(prog="python -m exercises.grading.gradescope", description=main.__doc__)
    p.add_argument("submission")
    p.add_argument("results")
    p.add_argument("--module", nargs="+", required=True)
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    p.add_argument("--visibility", default="visible", choices=VISIBILITIES)
    args = p.parse_args(argv)
    data = grade_submission(args.submission, args.results, args.module, args.timeout, args.visibility)
    print(data["output"])
    for t in data["tests"]:
        print(f"{t['name']:<48} {t['score']:g} / {t['max_score']:g}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.exit(main())
