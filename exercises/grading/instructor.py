r"""Grade a class: one row per student, one column per exercise.

    python -m exercises grade-folder submissions/ --out report      # report.csv and report.json

``submissions/`` holds one entry per student: a folder (searched for ``<module>.py``, e.g.
``alice/exercises/rope.py``) or a single file (``bob.py``). Every student's code runs in its
own worker process with a time limit per exercise, so one student's infinite loop costs
that student one timeout and nothing else.
"""
import csv
import json
from pathlib import Path

from exercises.grading.grader import DEFAULT_TIMEOUT, grade_file, label_of, summary, targets_of


def students(folder, module):
    """``[(name, path or None)]`` for every entry of ``folder``."""
    out = []
    for entry in sorted(Path(folder).iterdir()):
        if entry.name.startswith((".", "_")):
            continue
        if entry.is_dir():
            found = sorted(entry.rglob(f"{module}.py"), key=lambda p: len(p.parts))
            out.append((entry.name, found[0] if found else None))
        elif entry.suffix == ".py":
            out.append((entry.stem, entry))
    return out


def grade_folder(folder, out, module="rope", timeout=DEFAULT_TIMEOUT):
    """Grade every student; write ``<out>.csv`` and ``<out>.json``; return the JSON report."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SystemExit(f"{folder} is not a folder; give the folder that holds one entry per student.")
    keys = targets_of(module)
    columns = [f"{label_of(k).split()[-1]} {k.split('.', 1)[1]}" for k in keys]
    report = {"module": module, "exercises": columns, "timeout_s": timeout, "students": []}
    for name, path in students(folder, module):
        if path is None:
            results = [{"target": k, "label": label_of(k), "status": "fail", "kind": "missing",
                        "misconception": None, "message": f"no {module}.py in this student's folder"}
                       for k in keys]
        else:
            results = grade_file(path, module, timeout=timeout)
        report["students"].append({
            "student": name, "file": str(path) if path else None,
            "passed": sum(r["status"] == "pass" for r in results), "total": len(results),
            "results": {c: {k: r[k] for k in ("status", "kind", "misconception", "message")}
                        for c, r in zip(columns, results)}})
    out = Path(out)
    if out.suffix in (".csv", ".json"):
        out = out.with_suffix("")
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_suffix(".csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student"] + columns + ["passed", "total"])
        for s in report["students"]:
            w.writerow([s["student"]] + [summary(dict(s["results"][c], target="", label=""))
                                         for c in columns] + [s["passed"], s["total"]])
    out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    return report
