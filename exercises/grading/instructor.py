r"""Grade a class: one row per student, one column per exercise, code you cannot trust.

    python -m exercises grade-folder submissions/ --out report      # report.csv and report.json
    python -m exercises grade-folder submissions/ --out book --all-modules   # one gradebook, every module
    python -m exercises grade-folder submissions/ --out book --module sinusoidal rope

``submissions/`` holds one entry per student: a folder (searched for ``<module>.py``, e.g.
``alice/exercises/rope.py``) or a single file (``bob.py``). Every exercise of every student runs
in a fresh worker process in its own throwaway folder, with a scrubbed environment, resource
limits and the guard of ``sandbox.py``; the reference is never importable there, and the verdict
is reached in this process. One student's infinite loop, crash, flood of output or attempt to
touch other files costs that student and no one else. Both report files are written whole or
not at all.

**A gradebook over several modules** (``grade_folder_modules``): each student is a folder, searched
for every module's file (``alice/exercises/rope.py``, ``alice/exercises/sinusoidal.py``, ...). One
CSV row per student: a column per exercise, named by its label (``6.2 apply_rotary``), a column per
test the reader writes with the mutants it caught (``6.5 test_rope_properties mutants``:
``6 of 8``; empty where the test never ran on the mutants), then ``points`` and ``out_of``. An
exercise is worth one point and scores it when it passes; a module whose file is missing scores
zero for each of its exercises (``fail: missing``), and the other modules are graded as usual.
"""
import concurrent.futures
import csv
import io
import json
import os
from pathlib import Path

from exercises.grading.grader import DEFAULT_TIMEOUT, grade_file, summary, targets_of
from exercises.grading.knowledge import knowledge
from mini_transformer.model.checkpoint import atomic_write


def _write(path, text):
    atomic_write(path, lambda f: f.write(text.encode()))  # whole or not at all


def module_file(entry, module, folder):
    r"""``(path or None, problem or None)``: the shallowest ``<module>.py`` inside one student's folder."""
    found = sorted(Path(entry).rglob(f"{module}.py"), key=lambda p: (len(p.parts), str(p)))
    if found and (found[0].is_symlink() or Path(entry).resolve() not in found[0].resolve().parents):
        return None, f"{found[0].relative_to(folder)} is a link; hand in the file itself."
    return (found[0], None) if found else (None, f"no {module}.py in this student's folder")


def students(folder, module, single_files=True):
    """``[(name, path or None, problem or None)]`` for every entry of ``folder``."""
    out = []
    for entry in sorted(Path(folder).iterdir()):
        if entry.name.startswith((".", "_")):
            continue
        if entry.is_symlink():
            out.append((entry.stem if entry.suffix == ".py" else entry.name, None,
                        f"{entry.name} is a link, not a file or a folder; hand in the file itself."))
        elif entry.is_dir():
            out.append((entry.name, *module_file(entry, module, folder)))
        elif entry.suffix == ".py":
            out.append((entry.stem, entry, None) if single_files else
                       (entry.stem, None, f"{entry.name} is a single file; a gradebook over several modules needs "
                                          f"a folder per student holding exercises/{module}.py"))
    return out


def _grade_one(folder, name, path, problem, keys, module, timeout, limits, wrap):
    k = knowledge(module)
    if path is None:
        kind = "link" if problem and "is a link" in problem else "missing"
        return [{"target": key, "label": k.labels[key.split(".", 1)[1]], "status": "fail", "kind": kind,
                 "misconception": None, "message": problem} for key in keys]
    display = str(Path(path).relative_to(folder.parent)) if folder.parent in Path(path).parents else str(path)
    try:
        return grade_file(path, module, timeout=timeout, limits=limits, wrap=wrap,
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
    _write(out.with_suffix(".csv"), text.getvalue())
    _write(out.with_suffix(".json"), json.dumps(report, indent=1))
    return dict(report, csv=str(out.with_suffix(".csv")), json=str(out.with_suffix(".json")))


# ---------------------------------------------------------------------------
# One gradebook over several modules
# ---------------------------------------------------------------------------

def modules_named(names):
    r"""The exercise modules ``names`` stand for: ``["all"]`` is every one; an unknown name is a sentence."""
    from exercises.grading.grader import exercise_module_names
    known = exercise_module_names()
    if list(names) == ["all"]:
        return known
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"no exercise module {', '.join(unknown)}; the modules are {', '.join(known)} (or `all`).")
    return list(dict.fromkeys(names))


def column(key):
    r"""``"rope.apply_rotary"`` -> ``"6.2 apply_rotary"``: the exercise's number, then its name."""
    module, name = key.split(".", 1)
    return f"{knowledge(module).labels[name].split()[-1]} {name}"


def _number(col):
    return tuple(int(p) if p.isdigit() else 10 ** 6 for p in col.split()[0].split("."))


def gradebook_columns(modules):
    r"""``(exercise columns, mutant columns)`` in exercise order (chapter, then number)."""
    keys = sorted((k for m in modules for k in targets_of(m)), key=lambda k: _number(column(k)))
    tests = [k for k in keys if k.split(".", 1)[1] in knowledge(k.split(".", 1)[0]).tests]
    return [column(k) for k in keys], [f"{column(k)} mutants" for k in tests]


def gradebook_row(results):
    r"""One student's results (every module's, any order) -> the cells of their gradebook row.

    ``{"cells": {exercise column: summary}, "mutants": {mutant column: "6 of 8" or ""}, "points", "out_of",
    "results": {exercise column: result}}``; an exercise is worth one point and scores it when it passes.
    """
    by_column = {column(r["target"]): r for r in results}
    cells = {c: summary(r) for c, r in by_column.items()}
    mutants = {f"{c} mutants": (f"{r['caught'][0]} of {r['caught'][1]}" if r.get("caught") else "")
               for c, r in by_column.items()
               if r["target"].split(".", 1)[1] in knowledge(r["target"].split(".", 1)[0]).tests}
    return {"cells": cells, "mutants": mutants, "points": sum(r["status"] == "pass" for r in results),
            "out_of": len(results), "results": by_column}


def grade_student(entry, modules, timeout=DEFAULT_TIMEOUT, limits=None, wrap=None, folder=None, name=None):
    r"""Every result of one student's folder ``entry`` over ``modules``; a missing file scores zero."""
    folder = Path(folder or Path(entry).parent).resolve()
    out = []
    for m in modules:
        path, problem = module_file(entry, m, folder)
        out += _grade_one(folder, name or Path(entry).name, path, problem, targets_of(m), m, timeout, limits, wrap)
    return out


def grade_folder_modules(folder, out, modules, timeout=DEFAULT_TIMEOUT, limits=None, wrap=None, workers=None):
    r"""Grade every student over every module of ``modules``; write ``<out>.csv`` and ``<out>.json``."""
    folder = Path(folder).resolve()
    if not folder.is_dir():
        raise SystemExit(f"{folder} is not a folder; give the folder that holds one entry per student.")
    modules = list(modules)
    exercise_cols, mutant_cols = gradebook_columns(modules)
    found = {m: students(folder, m, single_files=False) for m in modules}
    names = [e[0] for e in found[modules[0]]]
    pairs = [(name, m, *found[m][i][1:]) for i, name in enumerate(names) for m in modules]
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        graded = list(pool.map(lambda p: _grade_one(folder, p[0], p[2], p[3], targets_of(p[1]), p[1], timeout,
                                                    limits, wrap), pairs))
    per_student = {name: [] for name in names}
    files = {name: {} for name in names}
    for (name, m, path, _), results in zip(pairs, graded):
        per_student[name] += results
        files[name][m] = str(path) if path else None
    book = {"modules": modules, "exercises": exercise_cols, "mutant_columns": mutant_cols, "timeout_s": timeout,
            "points_per_exercise": 1, "students": []}
    for name in names:
        row = gradebook_row(per_student[name])
        book["students"].append({
            "student": name, "files": files[name], "points": row["points"], "out_of": row["out_of"],
            "mutants": row["mutants"],
            "results": {c: {k: r[k] for k in ("status", "kind", "misconception", "message", "caught") if k in r}
                        for c, r in row["results"].items()}})
        book["students"][-1]["_cells"] = row["cells"]
    out = Path(out)
    if out.suffix in (".csv", ".json"):
        out = out.with_suffix("")
    text = io.StringIO(newline="")
    w = csv.writer(text)
    order = [c for e in exercise_cols for c in (e, f"{e} mutants") if c in exercise_cols or c in mutant_cols]
    w.writerow(["student"] + order + ["points", "out_of"])  # a test's mutants right after the test
    for s in book["students"]:
        cells = dict(s.pop("_cells"), **s["mutants"])
        w.writerow([s["student"]] + [cells[c] for c in order] + [s["points"], s["out_of"]])
    _write(out.with_suffix(".csv"), text.getvalue())
    _write(out.with_suffix(".json"), json.dumps(book, indent=1))
    return dict(book, csv=str(out.with_suffix(".csv")), json=str(out.with_suffix(".json")))
