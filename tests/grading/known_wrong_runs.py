r"""The known-wrong implementations, all graded in one subprocess: a job for the background threads.

``rows()`` reads every ``KNOWN_WRONG`` table (``exercises/grading/modules/<module>/wrong/``); ``job(env)`` returns
the function that grades them all with ``grader.grade_jobs`` in a fresh Python (so nothing a test patches in this
process reaches it) and returns ``({name: result}, seconds)``. ``tests/grading/conftest.py`` submits it when a
selected test asks for ``wrong_results``; ``tests/grading/test_grader.py`` checks each result.
"""
import ast
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import background  # noqa: E402

from exercises.grading.modules import known_wrong_files  # noqa: E402

TIMEOUT = 5.0  # seconds per exercise: only the hanging implementation reaches it, even on a busy machine
ROOT = Path(__file__).resolve().parents[2]
GRADE = ("import json, sys\n"
         "from exercises.grading.grader import grade_jobs\n"
         "jobs = json.load(open(sys.argv[1]))\n"
         "json.dump(grade_jobs(jobs, timeout=float(sys.argv[3])), open(sys.argv[2], 'w'))\n")


def rows():
    """Every row of every ``KNOWN_WRONG`` table in exercises/grading/modules/<module>/wrong/, as (file, name, target,
    kind, misconception). The tables are literals, read without importing the files."""
    out = []
    for path in known_wrong_files():
        tree = ast.parse(path.read_text())
        tables = [n.value for n in tree.body if isinstance(n, ast.Assign)
                  and [getattr(t, "id", None) for t in n.targets] == ["KNOWN_WRONG"]]
        assert tables, f"{path} has no KNOWN_WRONG table; see exercises/grading/README.md"
        for row in ast.literal_eval(tables[0]):
            attr, target, kind, misconception, *where = row
            out.append((path.parent / where[0] if where else path, attr, target, kind, misconception))
    return out


def source(path, folder):
    """The wrong implementation's file; one that must not parse is kept as .txt (so no tool tries to
    compile it) and copied to a .py in a temporary folder for the grader."""
    if path.suffix != ".txt":
        return path
    copy = folder / path.stem
    copy.write_text(path.read_text())
    return copy


def job(env, timeout=TIMEOUT):
    r"""The tables read now; ``run()`` grades every row in a subprocess: ``({name: result}, seconds)``."""
    table = rows()

    def run():
        folder = Path(background.folder("wrong"))
        jobs = [{"target": t, "source": str(source(f, folder)), "attr": a} for f, a, t, _, _ in table]
        (folder / "jobs.json").write_text(json.dumps(jobs))
        start = time.monotonic()
        done = background.run([sys.executable, "-c", GRADE, str(folder / "jobs.json"), str(folder / "results.json"),
                               str(timeout)], env=env, cwd=str(ROOT), timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        results = json.loads((folder / "results.json").read_text())
        return {row[1]: r for row, r in zip(table, results)}, time.monotonic() - start
    return run
