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
``6 of 8``; empty where the test never ran on the mutants), the points of each module's exercises
(``rope exercises``) and of each chapter's written answers (``chapter 12 written``), then ``points``
and ``out_of``. An exercise is worth its points in the instructor's table (``points.py``: one point
a star by default) and scores them when it passes; a test the reader writes scores its points times
the fraction of its mutants it caught. Every target that passes its public cases is graded on its
held-out cases too, and fails where they fail (``fail (held-out): numbers``). A module whose file is
missing scores zero for each of its exercises (``fail: missing``), and the other modules are graded
as usual. ``--written``, ``--manual``, ``--feedback``, ``--level`` and ``--canvas`` add the written
answers (``written.py``), the per-student feedback files (``feedback_files.py``) and the Canvas CSV (``class_csv.py``).
"""
import concurrent.futures
import csv
import io
import json
import os
from pathlib import Path

from exercises.grading.errors import CommandError
from exercises.grading.grader import DEFAULT_TIMEOUT, grade_file, summary, targets_of
from exercises.grading.handed_in import Problem, student_file
from exercises.grading.knowledge import knowledge
from mini_transformer.engine.files import atomic_write


def _write(path, text):
    atomic_write(path, lambda f: f.write(text.encode()))  # whole or not at all


def module_file(entry, module, folder):
    r"""``(path, None)`` or ``(None, Problem)``: the shallowest ``<module>.py`` inside one student's folder, by
    ``handed_in``'s rule (no link followed)."""
    return student_file(entry, f"{module}.py", folder)


def students(folder, module, single_files=True):
    """``[(name, path or None, Problem or None)]`` for every entry of ``folder``."""
    out = []
    for entry in sorted(Path(folder).iterdir()):
        if entry.name.startswith((".", "_")):
            continue
        if entry.is_symlink():
            out.append((entry.stem if entry.suffix == ".py" else entry.name, None,
                        Problem(f"{entry.name} is a link, not a file or a folder; hand in the file itself.",
                                link=True)))
        elif entry.is_dir():
            out.append((entry.name, *module_file(entry, module, folder)))
        elif entry.suffix == ".py":
            out.append((entry.stem, entry, None) if single_files else
                       (entry.stem, None, Problem(f"{entry.name} is a single file; a gradebook over several modules "
                                                  f"needs a folder per student holding exercises/{module}.py",
                                                  link=False)))
    return out


def _grade_one(folder, name, path, problem, keys, module, timeout, limits, wrap, held_out=True):
    k = knowledge(module)
    if path is None:
        return [{"target": key, "label": k.labels[key.split(".", 1)[1]], "status": "fail",
                 "kind": "link" if problem.link else "missing", "misconception": None, "message": problem.sentence}
                for key in keys]
    display = str(Path(path).relative_to(folder.parent)) if folder.parent in Path(path).parents else str(path)
    try:
        return grade_file(path, module, timeout=timeout, limits=limits, wrap=wrap, held_out=held_out,
                          private_dirs=[folder], display={str(Path(path).resolve()): display})
    except Exception as e:  # a grader failure on one student must not lose the others' grades
        return [{"target": key, "label": k.labels[key.split(".", 1)[1]], "status": "fail", "kind": "crashed",
                 "misconception": None, "message": f"the grader failed on this submission: {type(e).__name__}: {e}"}
                for key in keys]


def grade_folder(folder, out, module="rope", timeout=DEFAULT_TIMEOUT, limits=None, wrap=None, workers=None):
    """Grade every student; write ``<out>.csv`` and ``<out>.json``; return the JSON report."""
    folder = Path(folder).resolve()
    if not folder.is_dir():
        raise CommandError(f"{folder} is not a folder; give the folder that holds one entry per student.")
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
        raise CommandError(f"no exercise module {', '.join(unknown)}; the modules are {', '.join(known)} (or `all`).")
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


def gradebook_row(results, table=None):
    r"""One student's results (every module's, any order) -> the cells of their gradebook row.

    ``{"cells": {exercise column: summary}, "mutants": {mutant column: "6 of 8" or ""}, "points", "out_of",
    "by_module": {module: points}, "results": {exercise column: result with "points" and "possible"}}``.
    ``table`` is the points table (``points.py``; default: one point a star); a passing exercise scores its
    points, a test the reader writes its points times the fraction of its mutants it caught.
    """
    from exercises.grading.points import default_table, worth
    if table is None:
        table = default_table(sorted({r["target"].split(".", 1)[0] for r in results}))
    by_column = {}
    by_module = {}
    for r in results:
        got, possible = worth(table, r)
        by_column[column(r["target"])] = dict(r, points=got, possible=possible)
        module = r["target"].split(".", 1)[0]
        by_module[module] = by_module.get(module, 0) + got
    cells = {c: summary(r) for c, r in by_column.items()}
    mutants = {f"{c} mutants": (f"{r['caught'][0]} of {r['caught'][1]}" if r.get("caught") else "")
               for c, r in by_column.items()
               if r["target"].split(".", 1)[1] in knowledge(r["target"].split(".", 1)[0]).tests}
    return {"cells": cells, "mutants": mutants, "points": round(sum(r["points"] for r in by_column.values()), 2),
            "out_of": sum(r["possible"] for r in by_column.values()),
            "by_module": {m: round(v, 2) for m, v in by_module.items()}, "results": by_column}


def grade_student(entry, modules, timeout=DEFAULT_TIMEOUT, limits=None, wrap=None, folder=None, name=None,
                  held_out=True):
    r"""Every result of one student's folder ``entry`` over ``modules``; a missing file scores zero."""
    folder = Path(folder or Path(entry).parent).resolve()
    out = []
    for m in modules:
        path, problem = module_file(entry, m, folder)
        out += _grade_one(folder, name or Path(entry).name, path, problem, targets_of(m), m, timeout, limits, wrap,
                          held_out)
    return out


def module_assignment(module):
    r"""The gradebook's and Canvas's name of a module's exercises: ``"sinusoidal exercises"``."""
    return f"{module} exercises"


def written_assignment(chapter):
    return f"chapter {chapter} written"


def grade_folder_modules(folder, out, modules, timeout=DEFAULT_TIMEOUT, limits=None, wrap=None, workers=None,
                         points=None, written=(), manual=None, feedback=None, level="formative", canvas=None,
                         roster=None):
    r"""Grade every student over every module of ``modules``; write ``<out>.csv`` and ``<out>.json``.

    ``points``: a points file (``points.py``; default one point a star). ``written``: chapters whose
    ``answers/NN.md`` are collected (``written.py``); the sheet of what is graded by hand is written to
    ``<out>_written.csv``, and ``manual`` (that sheet, filled) is merged. ``feedback``: a folder for one
    Markdown and one HTML file per student at ``level``. ``canvas``: a CSV in Canvas's gradebook-import shape
    (``roster``: a CSV naming each student folder's Canvas name, ID and section).
    """
    from exercises.grading.class_csv import canvas_csv, read_roster
    from exercises.grading.feedback import LEVELS
    from exercises.grading.feedback_files import write_files
    from exercises.grading import points as pts
    from exercises.grading import written as wr
    if level not in LEVELS:
        raise CommandError(f"--level {level!r} is not one of: {', '.join(LEVELS)}.")
    table = pts.load(points, modules)
    chapters = [wr.chapter_name(c).split("_", 1)[0] for c in written]
    scores = wr.read_manual(manual)
    people = read_roster(roster)
    folder = Path(folder).resolve()
    if not folder.is_dir():
        raise CommandError(f"{folder} is not a folder; give the folder that holds one entry per student.")
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
    possible = {m: sum(table[m].values()) for m in modules}
    assignments = [(module_assignment(m), possible[m]) for m in modules]
    book = {"modules": modules, "exercises": exercise_cols, "mutant_columns": mutant_cols, "timeout_s": timeout,
            "points": table, "written_chapters": chapters, "feedback_level": level, "students": []}
    kept = ("status", "kind", "misconception", "message", "caught", "escaped", "public", "held_out", "failed_on",
            "points", "possible", "target", "label")
    for name in names:
        row = gradebook_row(per_student[name], table)
        work = wr.collect(folder / name, chapters, scores, name) if chapters else {}
        s = {"student": name, "files": files[name], "exercise_points": row["points"],
             "exercise_out_of": row["out_of"], "mutants": row["mutants"],
             "results": {c: {k: r[k] for k in kept if k in r} for c, r in row["results"].items()},
             "written": work,
             "by_assignment": dict({module_assignment(m): row["by_module"].get(m, 0) for m in modules},
                                   **{written_assignment(c): w["points"] for c, w in work.items()})}
        s["points"] = round(row["points"] + sum(w["points"] for w in work.values()), 2)
        s["out_of"] = row["out_of"] + sum(w["out_of"] for w in work.values())
        s["_cells"] = row["cells"]
        book["students"].append(s)
    for c in chapters:
        assignments.append((written_assignment(c), max([s["written"][c]["out_of"] for s in book["students"]] or [0])))
    book["assignments"] = assignments
    out = Path(out)
    if out.suffix in (".csv", ".json"):
        out = out.with_suffix("")
    text = io.StringIO(newline="")
    w = csv.writer(text)
    order = [c for e in exercise_cols for c in (e, f"{e} mutants") if c in exercise_cols or c in mutant_cols]
    totals = [a for a, _ in assignments]
    w.writerow(["student"] + order + totals + ["points", "out_of"])  # a test's mutants right after the test
    for s in book["students"]:
        cells = dict(s.pop("_cells"), **s["mutants"])
        w.writerow([s["student"]] + [cells[c] for c in order] + [pts.fmt(s["by_assignment"][a]) for a in totals]
                   + [pts.fmt(s["points"]), pts.fmt(s["out_of"])])
    written_files = {}
    if chapters:
        written_files["written"] = str(out.parent / f"{out.name}_written.csv")
        _write(Path(written_files["written"]), wr.sheet(book))
    if canvas:
        written_files["canvas"] = str(Path(canvas))
        _write(Path(canvas), canvas_csv(book, people))
    if feedback:
        written_files["feedback"] = [str(p) for p in write_files(book, feedback, level, people)]
    _write(out.with_suffix(".csv"), text.getvalue())
    _write(out.with_suffix(".json"), json.dumps(book, indent=1))
    return dict(book, csv=str(out.with_suffix(".csv")), json=str(out.with_suffix(".json")), **written_files)
