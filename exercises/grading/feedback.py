r"""Feedback at two levels, one file per student, and the gradebook in Canvas's import shape.

* **formative** (the default, for a reader working alone): the grader's whole layered message: the
  misconception and its hint, the failing case and its input, each mutant a weak test let through
  and what would catch it.
* **summative** (for assessed work): what failed and of which kind, never how to fix it: the
  misconception's name without its hint or the input, the number of mutants that escaped a test and
  which implementations they break, never the mutant or the input that would catch it.

``grade-folder ... --feedback DIR`` writes ``DIR/<student>.md`` and ``DIR/<student>.html`` (a tiny
template, every value escaped with ``html.escape``); ``--canvas FILE`` writes the gradebook as a CSV
that Canvas's gradebook import reads: ``Student, ID, SIS User ID, SIS Login ID, Section``, one column
per assignment (each module, and each chapter's written answers), a ``Points Possible`` row first.
"""
import csv
import html
import io
from pathlib import Path

from mini_transformer.model.checkpoint import atomic_write

LEVELS = ("formative", "summative")

# summative sentences: the kind of failure, without the case or the input
_KIND = {
    "numbers": "some outputs are wrong", "shape": "an output has the wrong shape",
    "dtype": "an output has the wrong dtype", "type": "an output is of the wrong type",
    "nan": "an output holds NaN or Inf", "raised": "your code raises an error on a graded case",
    "mutated": "your code writes into its input", "no_error": "your code returns where it must raise an error",
    "timeout": "your code ran past the time limit", "crashed": "the process running your code died",
    "unfinished": "part of it still raises NotImplementedError", "signature": "the signature differs from the stub's",
    "missing": "it is not in your file", "link": "a link was handed in instead of the file",
    "import": "your file does not load", "reference_import": "your code imports the reference",
    "sandbox": "your code did something the grader does not allow",
    "fails_reference": "your test fails on correct implementations", "waiting": "it needs its implementations first",
}


def text(result, level="formative"):
    r"""The feedback of one result at ``level`` (``"formative"`` or ``"summative"``)."""
    if level not in LEVELS:
        raise SystemExit(f"feedback level {level!r} is not one of: {', '.join(LEVELS)}.")
    if level == "formative" or result["status"] == "not attempted":
        return result.get("message") or result["status"]
    held = " on the held-out cases" if result.get("failed_on") == "held-out" else ""
    if result["status"] == "pass":
        caught = result.get("caught")
        return f"pass: catches all {caught[1]} mutants." if caught else "pass."
    kind = result["kind"]
    if kind == "weak_test":
        caught, n = result["caught"]
        counts = {}
        for w in result.get("escaped", []):
            counts[w] = counts.get(w, 0) + 1
        broke = ", ".join(f"{c} a wrong {w}" for w, c in counts.items())
        return (f"weak test: {n - caught} of {n} mutants escaped your test"
                + (f" ({broke})." if broke else "."))
    if kind == "misconception":
        title = _misconception_title(result)
        return f"fail{held}: misconception, {title}." if title else f"fail{held}: a known misconception."
    if kind == "import":
        first = (result.get("message") or "").splitlines()[:1]
        return f"fail: your file does not load ({first[0]})" if first else "fail: your file does not load."
    return f"fail{held}: {_KIND.get(kind, kind.replace('_', ' '))}."


def _misconception_title(result):
    from exercises.grading.knowledge import knowledge
    module, name = result["target"].split(".", 1)
    try:
        c = knowledge(module).check(name)
    except (LookupError, KeyError):
        return None
    return next((m["title"] for m in getattr(c, "misconceptions", []) if m["key"] == result.get("misconception")),
                None)


# ---------------------------------------------------------------------------
# One file per student
# ---------------------------------------------------------------------------

def student_report(student, level):
    r"""``(title, [(heading, verdict, points, text)], summary lines)`` of one gradebook student."""
    from exercises.grading.points import fmt
    rows = []
    for col, r in student["results"].items():
        where = ""
        if r.get("held_out") is not None:
            where = f" (public cases: {r['public']}; held-out cases: {r['held_out']})"
        rows.append((col, r["status"] + where, _of(r["points"], r["possible"]), text(r, level)))
    lines = [f"Exercises: {fmt(student['exercise_points'])} of {fmt(student['exercise_out_of'])} points."]
    for chapter, w in sorted(student.get("written", {}).items()):
        lines.append(f"Written answers, chapter {chapter}: {fmt(w['points'])} of {fmt(w['out_of'])} points"
                     + (f" ({w['ungraded']} items not graded yet)." if w.get("ungraded") else "."))
        rows += [(f"written {chapter} {i['item']}", "graded" if i["points"] is not None else "not graded yet",
                  _of(i["points"] or 0, i["out_of"]), i.get("comment") or "") for i in w["items"]]
    lines.append(f"Total: {fmt(student['points'])} of {fmt(student['out_of'])} points.")
    return f"Feedback for {student['student']}", rows, lines


def _of(got, possible):
    from exercises.grading.points import fmt
    return f"{fmt(got)} of {fmt(possible)} point{'' if possible == 1 else 's'}"


def markdown(student, level):
    title, rows, lines = student_report(student, level)
    out = [f"# {title}", "", *lines, ""]
    for heading, verdict, pts, body in rows:
        out += [f"## {heading}", "", f"**{verdict}**, {pts}.", ""]
        if body:  # an indented block: what the grader said, verbatim (no fence a student's text could close)
            out += ["    " + line for line in body.splitlines()] + [""]
    return "\n".join(out)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;max-width:50em;margin:2em auto}}pre{{white-space:pre-wrap;background:#f4f4f4;padding:.5em}}</style>
</head><body>
<h1>{title}</h1>
{summary}
{sections}
</body></html>
"""


def page(student, level):
    e = html.escape
    title, rows, lines = student_report(student, level)
    summary = "\n".join(f"<p>{e(line)}</p>" for line in lines)
    sections = "\n".join(f"<h2>{e(h)}</h2>\n<p><strong>{e(v)}</strong>, {e(p)}.</p>"
                         + (f"\n<pre>{e(b)}</pre>" if b else "") for h, v, p, b in rows)
    return _PAGE.format(title=e(title), summary=summary, sections=sections)


def upload_name(student, roster):
    r"""The stem of a student's feedback files: ``<student>``, or ``<student>_<ID>`` when the roster gives an ID."""
    who = roster.get(student, {})
    return f"{student}_{who['id']}" if who.get("id") else student


def write_files(book, folder, level, roster=None):
    r"""``folder/<name>.md`` and ``folder/<name>.html`` for every student; returns the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for s in book["students"]:
        stem = upload_name(s["student"], roster or {})
        for suffix, body in ((".md", markdown(s, level)), (".html", page(s, level))):
            path = folder / f"{stem}{suffix}"
            atomic_write(path, lambda f, b=body: f.write(b.encode()))
            paths.append(path)
    return paths


# ---------------------------------------------------------------------------
# Canvas
# ---------------------------------------------------------------------------

def read_csv_rows(path, option):
    r"""The rows of an instructor's CSV as dicts; a file that cannot be read is a sentence naming ``option``."""
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        raise SystemExit(f"{option} {path}: cannot read it ({e.strerror}).") from None


def read_roster(path):
    r"""``{student folder: {"name", "id", "sis_user_id", "sis_login_id", "section"}}`` from a CSV with a
    ``student`` column (the folder's name) and any of the others; None gives an empty roster."""
    if path is None:
        return {}
    rows = read_csv_rows(path, "--roster")
    if rows and "student" not in rows[0]:
        raise SystemExit(f"--roster {path}: it needs a 'student' column (the folder's name); it has "
                         f"{', '.join(rows[0])}.")
    return {r["student"]: r for r in rows}


def canvas_csv(book, roster=None):
    r"""The gradebook as Canvas imports it: one column per assignment, a ``Points Possible`` row first."""
    roster = roster or {}
    assignments = book["assignments"]  # [(column name, points possible)]
    out = io.StringIO(newline="")
    w = csv.writer(out)
    w.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] + [a for a, _ in assignments])
    w.writerow(["    Points Possible", "", "", "", ""] + [_num(p) for _, p in assignments])
    for s in book["students"]:
        who = roster.get(s["student"], {})
        w.writerow([who.get("name") or s["student"], who.get("id", ""), who.get("sis_user_id", ""),
                    who.get("sis_login_id") or s["student"], who.get("section", "")]
                   + [_num(s["by_assignment"][a]) for a, _ in assignments])
    return out.getvalue()


def _num(x):
    from exercises.grading.points import fmt
    return fmt(x)  # two decimals, as the gradebook keeps them (points.py): Canvas gets 2.67, not 3
