r"""The written parts of a chapter: a template to fill, the ward graded against its key, the rest by hand.

    python -m exercises answers-template 12            # answers/12.md to fill (prints where it wrote it)
    python -m exercises rubric 12                      # the instructor's rubric, with the model answers

A student hands in ``answers/NN.md`` per chapter, from the template: one ``### ID`` heading per item,
the answer written under it. The items are read from the chapter itself:

* ``C1``, ``C2``, ...: the claim ledger's rows (a prediction before reading: yes or no, and why),
  1 point each, graded by hand for the reasoning, not for being right;
* ``Q1``, ``Q2``, ...: the "Check yourself" questions, 2 points each, graded by hand against the
  chapter's own answers (the cells tagged ``answer``, which a student release strips);
* ``ward`` (chapter 12 only): one line per patient, ``A: healthy`` or ``A: position_reset``, graded
  here against ``clinic.ward()``'s key, one point per patient.

``grade-folder ... --written 02 12`` collects the files, grades the ward, and writes
``<out>_written.csv``, one row per student and item graded by hand (``student, chapter, item,
points, out_of, comment, answer``). Fill ``points`` (and a ``comment`` if you like) and pass the
file back as ``--manual``: the gradebook merges it. A row left blank counts zero and is listed as not
graded yet. Extra criteria for a chapter go in ``exercises/grading/instructor_only/rubrics/NN.md``
(instructor-only: a release leaves ``instructor_only/`` out).
"""
import csv
import io
import re

from exercises.grading.errors import CommandError
from exercises.grading.class_csv import read_csv_rows
from exercises.grading.handed_in import student_file
from exercises.grading.paths import INSTRUCTOR_ONLY

LEDGER_POINTS = 1
QUESTION_POINTS = 2
WARD_POINTS_EACH = 1


def chapter_name(number):
    r"""``"12"``, ``"12_choosing_and_clinic"`` or ``12`` -> the chapter's stem."""
    from exercises.grading import notebooks
    text = str(number)
    names = notebooks.chapter_names()
    if text.isdigit():
        found = [n for n in names if n.split("_", 1)[0] == f"{int(text):02d}"]
        if found:
            return found[0]
    if text in names:
        return text
    raise CommandError(f"no chapter {number!r}; give its number, e.g. 12 (the chapters are {', '.join(names)}).")


def items(number):
    r"""``[{"id", "kind", "text", "answers", "out_of"}]`` of a chapter, in order; ``answers`` are the chapter's
    own (its cells tagged ``answer``), empty in a student copy."""
    from exercises.grading import notebooks
    name = chapter_name(number)
    nb = notebooks.read_chapter(name)
    out = []
    for cell in nb.cells:  # the claim ledger: the first table headed "| # | claim"
        if cell.cell_type != "markdown":
            continue
        rows = [line.strip() for line in cell.source.splitlines() if line.strip().startswith("|")]
        if rows and re.match(r"\|\s*#\s*\|\s*claim", rows[0]):
            for row in rows[2:]:
                cells = [c.strip() for c in row.strip("|").split("|")]
                if len(cells) >= 2 and re.fullmatch(r"C\d+[a-z]?", cells[0]):
                    out.append({"id": cells[0], "kind": "prediction", "text": cells[1], "answers": [],
                                "out_of": LEDGER_POINTS})
            break
    in_section = False
    for cell in nb.cells:  # "Check yourself": **1.** questions, each followed by its answer cells
        source = cell.source
        if cell.cell_type == "markdown" and notebooks.ANSWER_TAG not in notebooks.tags(cell):
            heading = re.search(r"^#{1,2} (.*)$", source, re.M)
            if heading:  # a section starts: it is "Check yourself" or it is not
                in_section = "Check yourself" in heading.group(1)
        if not in_section:
            continue
        if notebooks.ANSWER_TAG in notebooks.tags(cell):
            if out and out[-1]["kind"] == "question":
                out[-1]["answers"].append(source if cell.cell_type == "markdown" else f"```python\n{source}\n```")
            continue
        if cell.cell_type != "markdown":
            continue
        for m in re.finditer(r"^\*\*(\d+)\.\*\*\s*(.*?)(?=^\*\*\d+\.\*\*|\Z)", source, re.M | re.S):
            out.append({"id": f"Q{m.group(1)}", "kind": "question", "text": " ".join(m.group(2).split()),
                        "answers": [], "out_of": QUESTION_POINTS})
    if name.startswith("12_"):
        out.append({"id": "ward", "kind": "ward", "text": "For each patient A to G of clinic.ward(), write healthy "
                    "or the key of its bug.", "answers": [], "out_of": WARD_POINTS_EACH * len(ward_key())})
    return out


def ward_key():
    r"""``{letter: diagnosis}`` of the chapter's ward (``clinic.ward()``, seed 0, as chapter 12 builds it)."""
    from mini_transformer.evaluation import clinic
    return clinic.ward()[1]


def ward_bugs():
    from mini_transformer.evaluation import clinic
    return ("healthy",) + tuple(clinic.BUGS)


def template(number):
    r"""The text of ``answers/NN.md`` for chapter ``number``, to fill."""
    name = chapter_name(number)
    out = [f"# Answers, chapter {name}", "",
           "Write each answer under its heading; keep the headings (`### C1`, `### Q1`, ...) as they are.", ""]
    kinds = {"prediction": "## Ledger: your predictions (before you run the chapter: yes or no, and one "
                           "sentence why)",
             "question": "## Check yourself", "ward": "## The ward: your diagnosis"}
    said = set()
    for item in items(number):
        if item["kind"] not in said:
            said.add(item["kind"])
            out += [kinds[item["kind"]], ""]
        out += [f"### {item['id']}", "", f"> {item['text']}", ""]
        if item["kind"] == "ward":
            out += [f"{letter}: " for letter in ward_key()]
            out += ["", f"(one of: {', '.join(ward_bugs())})"]
        out.append("")
    return "\n".join(out)


def parse(text):
    r"""``{item id: answer}`` of a filled template: the text under each ``### ID``, less the quoted item."""
    found = {}
    for m in re.finditer(r"^### (\S+)[ \t]*\n(.*?)(?=^#{2,3} |\Z)", text, re.M | re.S):
        body = "\n".join(line for line in m.group(2).splitlines() if not line.startswith(">"))
        found[m.group(1)] = body.strip()
    return found


def grade_ward(answer):
    r"""``(points, out_of, comment)``: one point per patient whose diagnosis matches the key."""
    key = ward_key()
    said = {}
    for line in (answer or "").splitlines():
        m = re.match(r"\s*([A-G])\s*[:=-]\s*`?([a-z_]+)`?", line)
        if m:
            said[m.group(1)] = m.group(2)
    right = [letter for letter in key if said.get(letter) == key[letter]]
    wrong = [letter for letter in key if said.get(letter) and said[letter] != key[letter]]
    blank = [letter for letter in key if not said.get(letter)]
    comment = f"{len(right)} of {len(key)} patients diagnosed right"
    if wrong:
        comment += f"; wrong: {', '.join(wrong)}"
    if blank:
        comment += f"; not answered: {', '.join(blank)}"
    return len(right) * WARD_POINTS_EACH, len(key) * WARD_POINTS_EACH, comment + "."


def answers_file(entry, number):
    r"""``(path, None)`` or ``(None, Problem)``: the shallowest ``answers/NN.md`` (or ``NN.md``) in one student's
    folder, by the rule the exercises are found by: no link is followed (``handed_in.student_file``)."""
    return student_file(entry, f"{chapter_name(number).split('_', 1)[0]}.md")


def collect(entry, chapters, manual=None, student=None):
    r"""One student's written work: ``{chapter: {"points", "out_of", "ungraded", "items": [...]}}``.

    ``manual``: ``{(student, chapter, item): (points, comment)}`` from the instructor's CSV.
    """
    manual = manual or {}
    out = {}
    for number in chapters:
        stem = chapter_name(number).split("_", 1)[0]
        path, problem = answers_file(entry, number)
        given = parse(path.read_text(errors="replace")) if path else {}
        refused = problem.sentence if problem and problem.link else None  # said on every item, not "not answered"
        graded = []
        for item in items(number):
            answer = given.get(item["id"], "")
            if item["kind"] == "ward":
                pts, of, comment = grade_ward(answer)
                graded.append({"item": item["id"], "points": pts, "out_of": of, "comment": refused or comment,
                               "auto": True, "answer": answer})
                continue
            pts, comment = manual.get((student, stem, item["id"]), (None, ""))
            if pts is None and not answer:
                pts, comment = 0, refused or "not answered"
            graded.append({"item": item["id"], "points": pts, "out_of": item["out_of"], "comment": comment,
                           "auto": False, "answer": answer})
        out[stem] = {"points": sum(i["points"] or 0 for i in graded), "out_of": sum(i["out_of"] for i in graded),
                     "ungraded": sum(i["points"] is None for i in graded), "file": str(path) if path else None,
                     "items": graded}
    return out


SHEET_COLUMNS = ["student", "chapter", "item", "points", "out_of", "comment", "answer"]


def sheet(book):
    r"""The manual-score sheet: one row per student and item graded by hand (the ward is graded already)."""
    out = io.StringIO(newline="")
    w = csv.writer(out)
    w.writerow(SHEET_COLUMNS)
    for s in book["students"]:
        for chapter, wr in sorted(s.get("written", {}).items()):
            for i in wr["items"]:
                if not i["auto"]:
                    w.writerow([s["student"], chapter, i["item"], "" if i["points"] is None else i["points"],
                                i["out_of"], i["comment"], i["answer"]])
    return out.getvalue()


def read_manual(path):
    r"""``{(student, chapter, item): (points or None, comment)}`` from a filled sheet; a bad cell is a sentence."""
    if path is None:
        return {}
    rows = read_csv_rows(path, "--manual")
    out = {}
    for n, row in enumerate(rows, start=2):
        missing = [c for c in ("student", "chapter", "item", "points") if c not in row]
        if missing:
            raise CommandError(f"--manual {path}: no column {', '.join(missing)}; the sheet's columns are "
                             f"{', '.join(SHEET_COLUMNS)}.")
        cell = (row["points"] or "").strip()
        try:
            pts = None if cell == "" else float(cell)
        except ValueError:
            raise CommandError(f"--manual {path}, line {n}: points {cell!r} is not a number.") from None
        limit = float(row.get("out_of") or 1000)
        if pts is not None and not 0 <= pts <= limit:
            raise CommandError(f"--manual {path}, line {n}: points {cell} is outside 0 to {limit:g} "
                             f"({row['student']}, {row['chapter']} {row['item']}).")
        chapter = f"{int(row['chapter']):02d}" if row["chapter"].strip().isdigit() else row["chapter"].strip()
        out[row["student"], chapter, row["item"]] = (pts, row.get("comment") or "")
    return out


# ---------------------------------------------------------------------------
# The rubric
# ---------------------------------------------------------------------------

_CRITERIA = {
    "prediction": f"{LEDGER_POINTS} point: a yes or a no, with one sentence of reasoning that uses the chapter's "
                  "ideas. Graded for the reasoning, not for being right (the settled ledger gives the outcome); "
                  "0: blank, or no reason.",
    "question": f"{QUESTION_POINTS} points: the model answer's mechanism and the number the chapter measured (to "
                "its rounding); 1: the mechanism without the number, or the number without the why; 0: "
                "blank or wrong.",
    "ward": f"{WARD_POINTS_EACH} point per patient whose diagnosis matches the key; graded automatically.",
}


def rubric(number):
    r"""The instructor's rubric of a chapter as Markdown: each item, its points, criteria and model answer."""
    name = chapter_name(number)
    found = items(number)
    if any(i["kind"] == "question" for i in found) and not any(i["answers"] for i in found):
        raise CommandError(f"chapters/{name}.py has no answer cells here (a student copy): the rubric's model answers "
                         "are in the instructor's copy of the workbook.")
    out = [f"# Rubric, chapter {name}", "", f"Out of {sum(i['out_of'] for i in found)} points.", ""]
    said = set()
    heads = {"prediction": "## The ledger's predictions", "question": "## Check yourself", "ward": "## The ward"}
    for item in found:
        if item["kind"] not in said:
            said.add(item["kind"])
            out += [heads[item["kind"]], "", f"Criteria: {_CRITERIA[item['kind']]}", ""]
        out += [f"### {item['id']} ({item['out_of']} point{'s' if item['out_of'] != 1 else ''})", "",
                f"> {item['text']}", ""]
        if item["kind"] == "ward":
            out += ["Key: " + ", ".join(f"{letter}: {d}" for letter, d in ward_key().items()), ""]
        for answer in item["answers"]:
            out += ["Model answer:", "", re.sub(r"</?details>|<summary>.*?</summary>", "", answer).strip(), ""]
    extra = INSTRUCTOR_ONLY / "rubrics" / f"{name.split('_', 1)[0]}.md"
    if extra.is_file():
        out += ["## The instructor's notes", "", extra.read_text().strip(), ""]
    return "\n".join(out)
