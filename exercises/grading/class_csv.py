r"""The class's CSV files: the roster an instructor hands in, and the gradebook in Canvas's import shape.

``--roster FILE`` names each student folder's Canvas name, ID and section; ``--canvas FILE`` writes the
gradebook as a CSV that Canvas's gradebook import reads: ``Student, ID, SIS User ID, SIS Login ID,
Section``, one column per assignment (each module, and each chapter's written answers), a
``Points Possible`` row first.
"""
import csv
import io

from exercises.grading.errors import CommandError


def read_csv_rows(path, option):
    r"""The rows of an instructor's CSV as dicts; a file that cannot be read is a sentence naming ``option``."""
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        raise CommandError(f"{option} {path}: cannot read it ({e.strerror}).") from None


def read_roster(path):
    r"""``{student folder: {"name", "id", "sis_user_id", "sis_login_id", "section"}}`` from a CSV with a
    ``student`` column (the folder's name) and any of the others; None gives an empty roster."""
    if path is None:
        return {}
    rows = read_csv_rows(path, "--roster")
    if rows and "student" not in rows[0]:
        raise CommandError(f"--roster {path}: it needs a 'student' column (the folder's name); it has "
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
