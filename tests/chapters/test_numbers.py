r"""A measured number in the book's prose is a number a cell printed or a record holds (issue 34, item 3).

What is read: the markdown cells of every chapter (answers and hints included), every card in
``chapters/cards/``, the README's "What we measured" table and ``chapters/TEACHING.md``. Code cells, fenced
code, inline code (``...``), math (``$...$``, ``$$...$$``), link targets, HTML tags, and labels are skipped:
a section (§7.1), a claim (C3a), an exercise (Exercise 6.2, exercises 6.2 to 6.4, and the exercise columns
of TEACHING.md's tables).

**A measured number** is, outside those: a decimal with a fractional part (0.91, 1.20), a number in
scientific notation (1e-14, 3.6·10^-12), both sides of a ± interval (0.91 ± 0.11, 12 ± 3), and a percentage
(20%). Integers alone (sizes, steps, seeds, counts) are not read.

**Where it must come from.** A measured number passes when its magnitude, at the digits quoted, is

* a number printed in the stored outputs of its chapter (``chapters/expected_outputs/NN_name.ipynb``): a
  printed 0.9134 supports a quoted 0.91 (it rounds to it), a printed 0.9 does not support a quoted 0.90
  (the prose may drop digits, never add them); a percentage is supported by a printed percentage or by a
  printed fraction (0.2034 supports 20%);
* or a value of a claim record the same unit cites (``result NAME/KEY`` or ``NAME/KEY``, as in the
  ledgers; ``results/NAME.json`` cites the whole file): its values, mean, interval ends, half-width,
  threshold, counts. A unit is a paragraph of prose, or one row of a table.

A card's chapter is its file's; a README row's is its "ch N" label; a line of TEACHING.md belongs to the
chapters its session names (its table row, or the "**Session N (chapters ...)**" paragraph and what follows).

**Marked as not measured, where it stands** (never by a list in this file): a formula is math (``$...$``); a
value of code or configuration is inline code (```1e-6```); a quote of a source is a sentence, or a table
cell, that cites the source in parentheses: "(book §2.5)", "(survey §4)", "(Press et al.)", "(the RoFormer
paper)", "(Llama 2's config)". "et al." anywhere in the sentence also names a source.

The positive controls at the end change one digit in a chapter's prose, a card and the README table, on
copies in ``tmp_path``, and see the checker fail each.
"""
import json
import math
import re
from pathlib import Path

import nbformat
import pytest

from exercises.grading import notebooks
from experiments.common import RESULTS
from test_ledgers import settled_ledger, split_row  # the ledgers' own parsers: one reading of a table

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = notebooks.chapter_names()
CARDS = sorted((ROOT / "chapters" / "cards").glob("*.md"))

# --- what is skipped before any number is read -------------------------------------------------------
FENCE = re.compile(r"^\s*(```|~~~)")
SKIP = [
    re.compile(r"\$\$.*?\$\$", re.S),  # display math
    re.compile(r"(?<!\\)\$[^$\n]+?(?<!\\)\$"),  # inline math
    re.compile(r"`[^`\n]*`"),  # inline code
    re.compile(r"\]\([^)\s]*\)"),  # a link's target (its text stays)
    re.compile(r"https?://\S+"),
    re.compile(r"<[^<>\n]*>"),  # HTML tags (<details>, <summary>)
    re.compile(r"[\w./-]+\.(?:py|md|json|ipynb|npz|png|toml|txt|yml|yaml)(?::\d+)?"),  # file names, file:line
    re.compile(r"\b(?:Python|Llama|NumPy|CUDA)[- ]\d+(?:\.\d+)+"),  # a version is part of a name
]
LABEL = r"\d{1,2}\.\d{1,2}[a-z]?"
LABELS = re.compile(  # §7.1, Exercise 6.2, exercises 6.2 to 6.4, sections 7.1 and 7.2
    rf"(?:§|\b[Ee]xercises?\s+|\b[Ss]ections?\s+|\bch(?:apters?)?\s+)§?{LABEL}"
    rf"(?:(?:,\s*|\s+(?:and|to|or)\s+|\s*-\s*){LABEL})*")

# --- what is a measured number ---------------------------------------------------------------------
SIGN = r"[-−]?"
DECIMAL = r"\d[\d,]*\.\d+|\d+"
SCI = re.compile(rf"(?<![\w.]){SIGN}(\d+(?:\.\d+)?)\s*(?:e|E|\s*[·×x]\s*10\s*\^\s*\{{?)([-−+]?\d+)\}}?(?!\w|\.\d)")
PM = re.compile(rf"(?<![\w.]){SIGN}({DECIMAL})\s*±\s*({DECIMAL})(?![\w])")
PERCENT = re.compile(rf"(?<![\w.]){SIGN}(\d+(?:\.\d+)?)\s?%")
FRACTIONAL = re.compile(rf"(?<![\w.§]){SIGN}(\d[\d,]*\.\d+)(?![\w]|\.\d)")
PRINTED = re.compile(r"(?<![\w.])[-−]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")

# --- where a number may come from ------------------------------------------------------------------
CITATION = re.compile(r"\b([a-z][a-z0-9_]*)/([A-Za-z0-9_.\-]+)")
WHOLE_FILE = re.compile(r"\b([a-z0-9_]+)\.json\b")
CHAPTER_NAMED = re.compile(r"\b(?:[Cc]hapters?|ch)\s+(\d{1,2})\b")
EXERCISE_LABELS = {m for c in notebooks.chapter_names()  # from the chapters' "### Exercise 6.7 and 6.8" headings
                   for line in re.findall(r"^# #+ Exercises? .*", notebooks.chapter_path(c).read_text(), re.M)
                   for m in re.findall(r"\b\d+\.\d+\b", line.split(":")[0])}
SOURCE = re.compile(r"\((?=[^()]*(?:\bbook\b|\bsurvey\b|et al\.|\bpaper\b|\bconfig\b))[^()]*\)|\bet al\.")
SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\bal\.)(?<!e\.g\.)(?<!i\.e\.)\s+(?=[A-Z*(\"'])")


class Number:
    """One measured number as quoted: its text, its magnitude, and how many digits it states."""

    def __init__(self, text, value, places=None, significant=None, percent=False):
        self.text, self.value, self.places, self.significant, self.percent = text, value, places, significant, percent
        self.half = None  # for the mean of a quoted "m ± h": the Number h

    def rounds_from(self, x, printed_places=None):
        """Whether ``x`` (a printed or stored value) is this number at the digits quoted."""
        candidates = [(abs(x), printed_places)]
        if self.percent:  # a share printed as a fraction: 0.2034 is 20.34%
            candidates.append((abs(x) * 100, None if printed_places is None else printed_places - 2))
        for y, have in candidates:
            if self.significant is not None:  # scientific: compare at the significant digits quoted
                if y == self.value == 0 or y > 0 and math.isclose(float(f"{y:.{self.significant - 1}e}"), self.value,
                                                                   rel_tol=1e-9):
                    return True
            elif (have is None or have >= self.places) and abs(y - self.value) <= 0.5 * 10 ** -self.places + 1e-12:
                return True
        return False


def _decimal(text, percent=False):
    digits = text.replace(",", "")
    return Number(text, float(digits), places=len(digits.partition(".")[2]), percent=percent)


def blank(text, pattern):
    """``text`` with each match of ``pattern`` replaced by spaces (so columns and lines stay where they were)."""
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def prose_only(text):
    """Markdown with fenced code, math, inline code, links' targets, tags, file names and labels blanked."""
    lines, fenced = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else line)
    text = "\n".join(lines)
    for pattern in SKIP + [LABELS]:
        text = blank(text, pattern)
    return text


def measured_numbers(text):
    """The measured numbers of one unit of prose (already ``prose_only``), in order."""
    found, taken = [], []

    def free(m):
        return not any(a < m.end() and m.start() < b for a, b in taken)

    for m in SCI.finditer(text):
        mantissa, exponent = m.group(1), int(m.group(2).replace("−", "-"))
        significant = len(mantissa.replace(".", "").lstrip("0")) or 1
        found.append(Number(m.group(0).strip(), float(mantissa) * 10 ** exponent, significant=significant))
        taken.append(m.span())
    for m in PM.finditer(text):
        if free(m):
            mean, half = _decimal(m.group(1)), _decimal(m.group(2))
            mean.half = half  # a pair is one quotation: its two numbers must come from one place
            found += [mean, half]
            taken.append(m.span())
    for m in PERCENT.finditer(text):
        if free(m):
            found.append(_decimal(m.group(1), percent=True))
            found[-1].text += "%"
            taken.append(m.span())
    for m in FRACTIONAL.finditer(text):
        if free(m):
            found.append(_decimal(m.group(1)))
    return found


def printed_values(text):
    """``(value, places)`` for every number in printed output."""
    out = []
    for m in PRINTED.finditer(text):
        digits = m.group(0).replace(",", "").replace("−", "-")
        try:
            value = float(digits)
        except ValueError:
            continue
        mantissa = re.split(r"[eE]", digits)[0]
        out.append((value, len(mantissa.partition(".")[2]) if "e" not in digits.lower() else 99))
    return out


def outputs_text(chapter, root=ROOT):
    """Everything the stored outputs of ``chapter`` print, as one string."""
    path = root / "chapters" / "expected_outputs" / f"{chapter}.ipynb"
    if not path.exists():
        return ""
    parts = []
    for cell in nbformat.read(path, as_version=4).cells:
        for out in cell.get("outputs", []):
            text = out.get("text") or out.get("data", {}).get("text/plain", "")
            parts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(parts)


def _numbers_in(obj):
    if isinstance(obj, bool):
        return []
    if isinstance(obj, (int, float)):
        return [float(obj)]
    if isinstance(obj, dict):
        return [x for v in obj.values() for x in _numbers_in(v)]
    if isinstance(obj, (list, tuple)):
        return [x for v in obj for x in _numbers_in(v)]
    return []


_RESULTS = {}


def result_file(name, results=None):
    path = Path(results or RESULTS) / f"{name}.json"
    if path not in _RESULTS:
        _RESULTS[path] = json.loads(path.read_text()) if path.exists() else None
    return _RESULTS[path]


def cited_values(unit, results=None):
    """The values of every record ``unit`` cites (``NAME/KEY``, ``result NAME/KEY``, ``results/NAME.json``)."""
    values = []
    for m in CITATION.finditer(unit):
        data = result_file(m.group(1), results)
        record = (data or {}).get("claims", {}).get(m.group(2).rstrip("."))
        if record is not None:
            values += _numbers_in(record)
            if "successes" in record and "trials" in record:
                values += _numbers_in([s / t for s, t in zip(*(record[k] if isinstance(record[k], list)
                                                              else [record[k]] for k in ("successes", "trials")))])
    for m in WHOLE_FILE.finditer(unit):
        values += _numbers_in(result_file(m.group(1), results))
    return values


def source_spans(unit):
    """Spans of ``unit`` that quote a source: each sentence (or table cell) holding a citation of one."""
    spans = []
    if unit.lstrip().startswith("|"):
        pieces, start = [], 0
        for m in re.finditer(r"(?<!\\)\|", unit):
            pieces.append((start, m.start()))
            start = m.end()
        pieces.append((start, len(unit)))
    else:
        pieces, start = [], 0
        for m in SENTENCE_END.finditer(unit):
            pieces.append((start, m.start()))
            start = m.end()
        pieces.append((start, len(unit)))
    return [(a, b) for a, b in pieces if SOURCE.search(unit[a:b])]


def units(text):
    """``(first line index, unit)`` pairs: each table row alone, each paragraph of other lines."""
    out, lines, start = [], [], None
    for i, line in enumerate(text.split("\n") + [""]):
        if line.lstrip().startswith("|"):
            if lines:
                out.append((start, "\n".join(lines)))
                lines = []
            out.append((i, line))
        elif line.strip():
            if not lines:
                start = i
            lines.append(line)
        elif lines:
            out.append((start, "\n".join(lines)))
            lines = []
    return out


def unsupported(text, printed, results=None, root=ROOT):
    """``(line index, quoted text)`` of each measured number in markdown ``text`` that nothing supports.

    ``printed(line index)``: the stored outputs' text the line may quote (its chapter's); a unit that names
    "chapter N" may also quote chapter N's."""
    clean, raw_lines, bad = prose_only(text), text.split("\n"), []
    for start, unit in units(clean):
        raw_unit = "\n".join(raw_lines[start:start + unit.count("\n") + 1])
        quoted_sources = source_spans(raw_unit)
        shown, values, pairs, named = None, None, None, set()
        for number, where in _with_positions(unit):
            if any(a <= where < b for a, b in quoted_sources) or is_label(number, raw_unit, unit, where):
                continue
            if shown is None:
                named = {chapter_of(n) for n in CHAPTER_NAMED.findall(raw_unit)} - {None}
                shown = printed_values(printed(start) + "\n".join(outputs_text(c, root) for c in sorted(named)))
            if number.half is not None:  # "m ± h": printed together, or one cited record's mean and half-width
                if pairs is None:
                    pairs = printed_pairs(printed(start) + "\n".join(outputs_text(c, root) for c in sorted(named)))
                    pairs += cited_pairs(raw_unit, results)
                if not any(number.rounds_from(m, mp) and number.half.rounds_from(h, hp) for m, mp, h, hp in pairs):
                    bad.append((start + unit[:where].count("\n"), f"{number.text} ± {number.half.text}"))
                continue
            if any(number.rounds_from(x, places) for x, places in shown):
                continue
            if values is None:
                values = cited_values(raw_unit, results)
            if any(number.rounds_from(x) for x in values):
                continue
            bad.append((start + unit[:where].count("\n"), number.text))
    return bad


def printed_pairs(text):
    """``(mean, places, half, places)`` for every ``m ± h`` in printed output."""
    out = []
    for m in PM.finditer(text):
        a, b = m.group(1).replace(",", ""), m.group(2).replace(",", "")
        sign = -1 if re.match(r"\s*[-−]", m.group(0)) else 1
        out.append((sign * float(a), len(a.partition(".")[2]), float(b), len(b.partition(".")[2])))
    return out


def cited_pairs(unit, results=None):
    """``(mean, None, half-width, None)`` of every claim record ``unit`` cites."""
    out = []
    for m in CITATION.finditer(unit):
        record = (result_file(m.group(1), results) or {}).get("claims", {}).get(m.group(2).rstrip("."))
        if record is not None and "mean" in record and "interval" in record:
            lo, hi = record["interval"]
            out.append((record["mean"], None, (hi - lo) / 2, None))
    return out


def is_label(number, raw_unit, unit, where):
    """An exercise's label (6.2) where the unit speaks of exercises, heads a table row, or is a heading."""
    if number.text not in EXERCISE_LABELS:
        return False
    line = unit[:where].rpartition("\n")[2]
    whole_line = line + unit[where:].partition("\n")[0]
    in_exercise_row = re.match(rf"\s*\|\s*(?:{LABEL})\s*\|", whole_line) is not None  # the exercise table
    return "xercise" in raw_unit or in_exercise_row or line.lstrip().startswith("#")


def _with_positions(unit):
    """Measured numbers with the offset where each stands (``measured_numbers`` in order of position)."""
    numbers = measured_numbers(unit)
    out, cursor = [], {}
    for number in numbers:
        needle = number.text.rstrip("%")
        at = unit.find(needle, cursor.get(needle, 0))
        cursor[needle] = at + 1 if at >= 0 else 0
        out.append((number, max(at, 0)))
    return out


# --- the files read -----------------------------------------------------------------------------------

def chapter_markdown(text):
    """The chapter's markdown cells as one text with the file's line numbers: other lines are blank."""
    lines, markdown = [], False
    for line in text.split("\n"):
        if line.startswith("# %%"):
            markdown = "[markdown]" in line
            lines.append("")
        elif markdown and (line.startswith("# ") or line == "#"):
            lines.append(line[2:])
        else:
            lines.append("")
    return "\n".join(lines)


def chapter_problems(chapter, text, root=ROOT, results=None):
    printed = outputs_text(chapter, root)
    return [f"chapters/{chapter}.py:{i + 1}: {q}"
            for i, q in unsupported(chapter_markdown(text), lambda i: printed, results, root)]


def chapter_of(number):
    return next((c for c in CHAPTERS if int(c[:2]) == int(number)), None)


def card_problems(card, text, root=ROOT, results=None):
    """A card quotes its file's chapter, the chapters of its own "- chapter:" line, or a record it cites."""
    own, chapters_at = [Path(card).stem], []
    for line in text.split("\n"):
        if line.startswith("## "):
            own = [Path(card).stem]
        elif line.startswith("- chapter:"):
            own = [Path(card).stem] + [chapter_of(n) for n in re.findall(r"(?<![§.\d])\d+", line.split("(")[0])]
        chapters_at.append([c for c in own if c])
    return [f"chapters/cards/{Path(card).name}:{i + 1}: {q}"
            for i, q in unsupported(text, lambda i: "\n".join(outputs_text(c, root) for c in chapters_at[i]),
                                    results, root)]


def readme_problems(text, root=ROOT, results=None):
    """The README's "What we measured" table: each row against its record and its chapter's outputs."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("## What we measured"))
    header, rows = settled_ledger("\n".join("# " + line for line in lines), heading=r"# ## What we measured")
    assert header is not None and rows, "the README has no 'What we measured' table"
    bad = []
    for i in range(start, len(lines)):
        if lines[i].startswith("| ch "):
            chapter = chapter_of(split_row("# " + lines[i])[0].split()[1])
            printed = outputs_text(chapter, root)
            bad += [f"README.md:{i + 1}: {q}" for _, q in unsupported(lines[i], lambda _: printed, results, root)]
    return bad


SESSION = re.compile(r"^\*\*(?:Session \d+|Capstone[^(]*) \(chapters? ([\d, ]+)")


def teaching_problems(text, root=ROOT, results=None):
    """TEACHING.md: a table row or a session's paragraphs against the outputs of the chapters they name.

    The syllabus table's exercise column holds labels (0.1 to 0.4), blanked before reading."""
    lines, chapters, chapters_at, columns = text.split("\n"), [], [], set()
    for i, line in enumerate(lines):
        m = SESSION.match(line)
        if m:
            chapters = [chapter_of(n) for n in re.findall(r"\d+", m.group(1))]
        elif line.startswith("#"):
            chapters = []
        here = chapters
        if line.startswith("|"):
            cells = line.split("|")
            if not columns:
                columns = {j for j, c in enumerate(cells) if "exercises" in c.lower()}
            lines[i] = "|".join(" " * len(c) if j in columns else c for j, c in enumerate(cells))
            here = [chapter_of(n) for n in re.findall(r"(?:^|, )(\d+) ", cells[2].strip())] if len(cells) > 2 else []
        else:
            columns = set()
        chapters_at.append([c for c in here if c])
    return [f"chapters/TEACHING.md:{i + 1}: {q}"
            for i, q in unsupported("\n".join(lines), lambda i: "\n".join(outputs_text(c, root)
                                                                          for c in chapters_at[i]), results, root)]


# --- the tests ------------------------------------------------------------------------------------------

def _say(problems):
    return (f"{len(problems)} measured numbers are neither printed by the chapter nor held by a record the "
            f"sentence cites; quote the printed digits, cite the record, or mark a constant (`code`), a formula "
            f"($...$) or a source quote ('(book §x)'), as chapters/README.md says:\n" + "\n".join(problems))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_a_chapters_numbers_are_printed_or_cited(chapter):
    problems = chapter_problems(chapter, (ROOT / "chapters" / f"{chapter}.py").read_text())
    assert not problems, _say(problems)


@pytest.mark.parametrize("card", CARDS, ids=lambda p: p.name)
def test_a_cards_numbers_are_printed_or_cited(card):
    problems = card_problems(card, card.read_text())
    assert not problems, _say(problems)


def test_the_readme_tables_numbers_are_cited():
    problems = readme_problems((ROOT / "README.md").read_text())
    assert not problems, _say(problems)


def test_teachings_numbers_are_printed():
    problems = teaching_problems((ROOT / "chapters" / "TEACHING.md").read_text())
    assert not problems, _say(problems)


# --- positive controls: one changed digit, on copies, fails each kind of file ------------------------------

def _copy_outputs(tmp_path, chapter):
    (tmp_path / "chapters" / "expected_outputs").mkdir(parents=True, exist_ok=True)
    source = ROOT / "chapters" / "expected_outputs" / f"{chapter}.ipynb"
    (tmp_path / "chapters" / "expected_outputs" / source.name).write_bytes(source.read_bytes())


def _changed_digit(text, old, new):
    assert text.count(old) >= 1, f"the control's sentence {old!r} is gone; pick another"
    return text.replace(old, new, 1)


def test_a_changed_digit_in_a_chapters_prose_fails(tmp_path):
    # no stored outputs in tmp_path: the cited record alone supports the numbers
    text = "\n".join(["# %% [markdown]", "# The rise at 4L is 0.006 ± 0.003 nats over five seeds",
                      "# (`result short_long_seeds/runs_long_alibi`).", "", "# %%", "x = 0.5", ""])
    assert chapter_problems("07_alibi", text, root=tmp_path) == []
    changed = _changed_digit(text, "0.006", "0.007")
    assert chapter_problems("07_alibi", changed, root=tmp_path) == ["chapters/07_alibi.py:2: 0.007 ± 0.003"]
    # a value in a code cell, math, inline code or a source quote is not read
    marked = text + "# %% [markdown]\n# $e = 0.777$, `lr = 0.777`, and 0.777 of the mass (book §2.5).\n"
    assert chapter_problems("07_alibi", marked, root=tmp_path) == []
    assert chapter_problems("07_alibi", marked.replace("(book §2.5)", "(§2.5)"), root=tmp_path) == \
        ["chapters/07_alibi.py:8: 0.777"]


def _unprinted_change(number, printed):
    """``number`` with its last digit changed to one whose value no output prints (a digit is a digit)."""
    for d in range(1, 10):
        wrong = number[:-1] + str((int(number[-1]) + d) % 10)
        places = len(wrong.partition(".")[2])
        shown = {f"{abs(float(x)):.{places}f}" for x in re.findall(r"-?\d+\.\d{%d,}" % places, printed)}
        if wrong not in shown:
            return wrong
    raise AssertionError(f"every change of {number}'s last digit is printed somewhere; pick another number")


def test_a_changed_digit_in_a_real_chapter_fails(tmp_path):
    # the chapter as committed, one quoted digit changed to a value no output prints
    _copy_outputs(tmp_path, "06_rope")
    text, printed = (ROOT / "chapters" / "06_rope.py").read_text(), outputs_text("06_rope")
    number = next(n for n in re.findall(r"(?<![\w.$`])0\.\d{3,}(?![\w.])", prose_only(chapter_markdown(text))) if n in printed)
    wrong = _unprinted_change(number, printed)
    before = set(chapter_problems("06_rope", text, root=tmp_path))
    after = set(chapter_problems("06_rope", text.replace(number, wrong), root=tmp_path))
    assert any(p.endswith(f": {wrong}") for p in after - before), (number, wrong)


def test_a_changed_digit_in_a_card_fails(tmp_path):
    card = ("## Does ALiBi run long?\n\n- chapter: 7 (§7)\n- source: book, question 3\n\n"
            "Trained short, its loss past L rises by 0.006 ± 0.003 nats (5 seeds,\n"
            "`short_long_seeds/runs_long_alibi`), while RoPE's rises by 0.47 ± 0.12\n"
            "(`short_long_seeds/breaks_rope`).\n")
    assert card_problems("07_alibi.md", card, root=tmp_path) == []
    assert card_problems("07_alibi.md", _changed_digit(card, "0.47", "0.41"), root=tmp_path) == \
        ["chapters/cards/07_alibi.md:7: 0.41 ± 0.12"]


@pytest.mark.slow
def test_a_changed_digit_in_the_readme_table_fails(tmp_path):
    readme = (ROOT / "README.md").read_text()
    for chapter in CHAPTERS:
        _copy_outputs(tmp_path, chapter)
    assert readme_problems(readme, root=tmp_path) == readme_problems(readme)
    # ch 7's row: ALiBi pays at L, 0.060 ± 0.016 (two-digit numbers are printed somewhere in most chapters)
    wrong = _unprinted_change("0.016", outputs_text("07_alibi"))
    changed = _changed_digit(readme, "0.060 ± 0.016", f"0.060 ± {wrong}")
    line = readme.split("\n").index(next(l for l in readme.split("\n") if "0.060 ± 0.016" in l)) + 1
    assert f"README.md:{line}: {wrong}" in readme_problems(changed, root=tmp_path)


def test_a_pair_is_quoted_from_one_place():
    # each number of "m ± h" is printed somewhere, but not together: the pair is not supported
    printed = "arm a: 0.25 ± 0.10 (5 seeds)\narm b: 0.40 ± 0.02 (5 seeds)\n"
    assert unsupported("Arm a's rise is 0.25 ± 0.10 nats.", lambda i: printed) == []
    assert unsupported("Arm a's rise is 0.25 ± 0.02 nats.", lambda i: printed) == [(0, "0.25 ± 0.02")]
    assert unsupported("Arm a's rise is 0.3 ± 0.1 nats.", lambda i: printed) == []  # fewer digits than printed


def test_rounding_supports_fewer_digits_never_more():
    number = measured_numbers("accuracy 0.91 here")[0]
    assert number.rounds_from(0.9134, 4) and not number.rounds_from(0.9, 1) and not number.rounds_from(0.92, 2)
    assert [n.text for n in measured_numbers("a 20% share, 1e-14 apart, 3.6·10^-12, 12 ± 3, 4 steps")] == \
        ["1e-14", "3.6·10^-12", "12", "3", "20%"]
    # a number at a sentence's end is still read: the full stop is not a digit
    assert [n.text for n in measured_numbers("equal to about 1e-9. Then 0.25.")] == ["1e-9", "0.25"]
    assert measured_numbers(prose_only("§7.1, `0.25`, $0.5$, Exercise 6.2, Python 3.11, [a](x/0.3.py)")) == []
