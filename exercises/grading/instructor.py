r"""Grade a class: one row per student, one column per exercise, code you cannot trust.

    python -m exercises grade-folder submissions/ --out report      # report.csv and report.json

``submissions/`` holds one entry per student: a folder (searched for ``<module>.py``, e.g.
``alice/exercises/rope.py``) or a single file (``bob.py``). Every exercise of every student runs
in a fresh worker process in its own throwaway folder, with a scrubbed environment, resource
limits and the guard of ``sandbox.py``; the reference is never importable there, and the verdict
is reached in this process. One student's infinite loop, crash, flood of output or attempt to
touch other files costs that student and no one else. Both report files are written whole or
not at all.
"""
import concurrent.futures
import csv
import io
import json
import os
from pathlib import Path

from exercises.grading.grader import DEFAULT_TIMEOUT, grade_file, summary, targets_of
from exercises.grading.knowledge import knowledge
from exercises.grading.atomic import write_atomic


def students(folder, module):
    """``[(name, path or None, problem or None)]`` for every entry of ``folder``."""
    out = []
    for entry in sorted(Path(folder).iterdir()):
        if entry.name.startswith((".", "_")):
            continue
        if entry.is_symlink():
            out.append((entry.stem if entry.suffix == ".py" else entry.name, None,
                        f"{entry.name} is a link, not a file or a folder; hand in the file itself."))
        elif entry.is_dir():
            found = sorted(entry.rglob(f"{module}.py"), key=lambda p: len(p.parts))
            if found and (found[0].is_symlink() or entry.resolve() not in found[0].resolve().parents):
                out.append((entry.name, None, f"{found[0].relative_to(folder)} is a link; hand in the file itself."))
            else:
                out.append((entry.name, found[0] if found else None,
                            None if found else f"no {module}.py in this student's folder"))
        elif entry.suffix == ".py":
            out.append((entry.stem, entry, None))
    return out


def _grade_one(folder, name, path, problem, keys, module, timeout, limits, wrap):
    k = knowledge(module)
    if path is None:
        kind = "link" if problem and "is a link" in problem else "missing"
        return [{"target": key, "label": k.labels[key.split(".", 1)[1]], "status": "fail", "kind": kind,
                 "misconception": None, "message": problem} for key in keys]
    display = str(Path(path).relative_to(folder.parent)) if folder.parent in Path(path).parents else str(path)
    try:
        return grade_file(path, module, timeout=timeout, isolation="job", limits=limits, wrap=wrap,
                          private_dirs=[folder], display={str(Path(path).resolve()): display})
    except Exception as e:  # a grader failure on one student must not lose the others' grades
        return [{"target": key, "label": k.labels[key.split(".", 1)[1]], "status": "fail", "kind": "crashed",
                 "misconception": None, "message": f"the grader failed on this submission: {type(e).__name__}: {e}"}
                for key in keys]


def grade_folder(folder, out, module="rope", timeout=DEFAULT_TIMEOUT, limits=None, wrap=None, workers=None):
    """Grade every student; write ``<out>.csv`` and ``<out>.json``; return the JSON report."""
    folder = Path(folder).resolve()
    if not folder.is_dir():
        raise SystemExit(f"{folder} is not a folder; give the folder that holds one entry per student.")
    keys = targets_of(module)
    labels = knowledge(module).labels
    columns = [f"{labels[k.split('.', 1)[1]].split()[-1]} {k.split('.', 1)[1]}" for k in keys]
    entries = students(folder, module)
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        graded = list(pool.map(lambda e: _grade_one(folder, *e, keys, module, timeout, limits, wrap), entries))
    report = {"module": module, "exercises": columns, "timeout_s": timeout, "students": []}
    for (name, path, _), results in zip(entries, graded):
        report["students"].append({
            "student": name, "file": str(path) if path else None,
            "passed": sum(r["status"] == "pass" for r in results), "total": len(results),
            "results": {c: {k: r[k] for k in ("status", "kind", "misconception", "message", "caught") if k in r}
                        for c, r in zip(columns, results)}})
    out = Path(out)
    if out.suffix in (".csv", ".json"):
        out = out.with_suffix("")
    text = io.StringIO(newline="")
    w = csv.writer(text)
    w.writerow(["student"] + columns + ["passed", "total"])
    for s in report["students"]:
        w.writerow([s["student"]] + [summary(dict(s["results"][c], target="", label=""))
                                     for c in columns] + [s["passed"], s["total"]])
    write_atomic(out.with_suffix(".csv"), text.getvalue())
    write_atomic(out.with_suffix(".json"), json.dumps(report, indent=1))
    return dict(report, csv=str(out.with_suffix(".csv")), json=str(out.with_suffix(".json")))
