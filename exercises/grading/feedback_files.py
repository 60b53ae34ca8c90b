r"""One feedback file per student, in Markdown and in HTML, at either level of ``feedback.text``.

``grade-folder ... --feedback DIR`` writes ``DIR/<student>.md`` and ``DIR/<student>.html`` (a tiny
template, every value escaped with ``html.escape``, since the grader's messages quote what the student
wrote), or ``<student>_<ID>`` when the roster (``class_csv.read_roster``) gives an ID.
"""
import html
from pathlib import Path

from exercises.grading.feedback import text
from mini_transformer.engine.files import atomic_write


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
