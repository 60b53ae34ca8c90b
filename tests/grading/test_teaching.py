r"""``chapters/TEACHING.md`` is true: every command in it runs (``conftest.guide_run``), its transcript is
what they print, its examples grade the modules of their own session, and its table is the syllabus's.

The sample class's totals are counted by hand in ``course_class.py``; the written answers' points by hand
here (chapter 2's ledger has 7 claims at 1 point, its "Check yourself" 6 questions at 2, counted in the
chapter's text by ``course_class.chapter_items``).
"""
import csv
import json
import re
import sys
from pathlib import Path

import pytest
from conftest import GUIDE, commands, guide_blocks, run_line, transcript

from exercises.grading import notebooks, syllabus

sys.path.insert(0, str(Path(__file__).resolve().parent))
import course_class  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _rows():
    r"""``{session: cells}`` of the guide's plan table (sessions 1 to 6 and the capstone's first week)."""
    rows = {}
    for line in GUIDE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and (cells[0].isdigit() or cells[0] == "capstone, week 1"):
            rows[cells[0]] = cells
    return rows


def _plan():
    r"""``{session: (chapters, modules)}`` from the guide's plan table."""
    return {s: ([int(n) for n in re.findall(r"(?:^|, )(\d+) ", cells[1])], re.findall(r"`(\w+)`", cells[2]))
            for s, cells in _rows().items()}


@pytest.mark.slow
def test_every_command_in_the_guide_ran(guide_run):
    ran = [line for line, _ in guide_run["ran"]]
    every = [line for language, lines in guide_blocks() if language == "bash" for line in commands(lines)]
    assert ran == every and len(every) >= 15
    # the transcript's commands are the guide's commands, or plain reads of what they wrote
    for language, lines in guide_blocks():
        if language == "text":
            for command, _ in transcript(lines):
                assert command in every or command.split()[0] in ("cat", "head"), command
    # no command hides in the prose either: every `python -m exercises ...` span is a command run, a
    # command named in general form (MODULE, NN); the site build (`python -m book`), which takes minutes, is
    # no such span: `.ci/run` runs it on the whole book and tests/book checks what it built
    assert "python -m book --out" in (ROOT / ".ci" / "run").read_text()
    spans = re.findall(r"`(python -m exercises [^`]*)`", GUIDE.read_text())
    for span in spans:
        assert any(line.startswith(span) for line in every) or re.search(r"\b(MODULE|NN)\b", span), span
    assert "`python -m book --out site/`" in GUIDE.read_text()


@pytest.mark.slow
def test_the_transcript_is_what_the_commands_print(guide_run):
    outputs = {line: done.stdout for line, done in guide_run["ran"]}
    blocks = [lines for language, lines in guide_blocks() if language == "text"]
    assert blocks, "the guide has a transcript"
    for command, expected in (t for lines in blocks for t in transcript(lines)):
        got = outputs[command] if command in outputs else run_line(command, guide_run["folder"]).stdout
        assert [l.rstrip() for l in got.rstrip("\n").splitlines()] == [l.rstrip() for l in expected], command


def test_every_example_grades_the_modules_of_its_own_session():
    plan = _plan()
    assert plan["2"] == ([2, 3], ["sinusoidal", "learned"])
    assert course_class.MODULES == plan["2"][1]  # the sample class is session 2's
    text = GUIDE.read_text()
    examples = [line for language, lines in guide_blocks() if language == "bash" for line in commands(lines)]
    examples += [c for language, lines in guide_blocks() if language == "text" for c, _ in transcript(lines)]
    graded = [line for line in examples if "--module" in line and "--module all" not in line]
    assert len(graded) >= 3
    for line in graded:
        modules = re.search(r"--module ((?:\w+ ?)+?)(?: --|$)", line).group(1).split()
        assert modules == plan["2"][1], line
    assert "release 02_sinusoidal 03_learned" in text and "answers-template 02" in text and "rubric 02" in text
    # every session's modules are the modules that grade its chapters
    by_chapter = syllabus.graded_modules_by_chapter()
    for session, (chapters, modules) in plan.items():
        assert modules == [m for c in chapters for m in by_chapter.get(c, [])], session


def test_the_plan_table_is_the_syllabus():
    r"""Minutes, stars and lines per session, from the chapters' headings (10.4 optional in session 6)."""
    rows = {s: (int(c[4].split("=")[-1]), int(c[5].split("=")[-1])) for s, c in _rows().items()}
    assert len(rows) == 7
    for session, (chapters, _) in _plan().items():
        minutes, lines = 0, []
        for c in chapters:
            name = notebooks.chapter_names()[c]
            text = notebooks.chapter_path(name).read_text()
            minutes += sum(e.minutes for e in syllabus.exercises_in(text) if e.number != "10.4")
            lines.append(len(text.splitlines()))
        assert rows[session][0] == minutes, (session, rows[session], minutes)
        # the lines to read are quoted, not estimated: each chapter's count as `wc -l` gives it, then the sum
        quoted = _rows()[session][5]
        want = " + ".join(map(str, lines)) + (f" = {sum(lines)}" if len(lines) > 1 else "")
        assert quoted == want, (f"session {session}: TEACHING.md says {quoted!r} lines to read; the chapters "
                                f"have {want!r}: update the table row and the run-sheet heading")
        assert minutes <= 155
    # each run-sheet's heading repeats its session's minutes and lines
    text = GUIDE.read_text()
    for session, cells in _rows().items():
        title = "Session " + session if session.isdigit() else "Capstone, week 1"
        heading = re.search(rf"\*\*{title} \(chapters? [^;]*; (\d+) minutes[^,]*, (\d+) lines\)", text)
        assert heading, title
        assert (int(heading.group(1)), int(heading.group(2))) == rows[session], (title, heading.group(0))


@pytest.mark.slow
def test_the_sample_class_gradebook_after_the_manual_sheet(guide_run):
    folder = guide_run["folder"]
    with open(folder / "week2.csv", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    claims, questions = course_class.chapter_items("02")
    written = len(claims) * 1 + len(questions) * 2
    assert (len(claims), len(questions), written) == (7, 6, 19)
    expected_written = {"alice": written, "bob": 0, "carol": 0, "dave": 0, "erin": len(claims)}
    for s, r in rows.items():
        assert float(r["chapter 02 written"]) == expected_written[s], s
        assert float(r["points"]) == course_class.EXPECTED_POINTS[s] + expected_written[s], s
        assert float(r["out_of"]) == course_class.OUT_OF + written
    book = json.loads((folder / "week2.json").read_text())
    alice = next(s for s in book["students"] if s["student"] == "alice")
    assert alice["written"]["02"]["ungraded"] == 0 and alice["written"]["02"]["items"][0]["comment"] == "full marks"


@pytest.mark.slow
def test_the_student_copy_grades_at_the_summative_level(guide_run):
    line, done = next((l, d) for l, d in guide_run["ran"] if "grade sinusoidal --feedback summative" in l)
    assert "2.1" in done.stdout and "not attempted" in done.stdout
    assert (guide_run["folder"] / "student_copy" / "answers" / "02.md").is_file()


@pytest.mark.slow
def test_the_capstone_reference_prints_its_ledger(guide_run):
    _, done = next((l, d) for l, d in guide_run["ran"] if "capstone --reference" in l)
    assert "| P1 |" in done.stdout and "llama3 (from Llama-3.1-8B)" in done.stdout
    # one seed gives no interval, so no verdict; "not tested here" is for conditions out of reach (README's rule)
    assert "not tested here" not in done.stdout and done.stdout.count("| no verdict: one seed, no interval") == 3
    _, rubric = next((l, d) for l, d in guide_run["ran"] if "capstone --rubric" in l)
    assert "20 points" in rubric.stdout


@pytest.mark.slow
def test_the_bundle_tried_on_erin_gives_her_exercise_points(guide_run):
    results = json.loads((guide_run["folder"] / "try" / "results" / "results.json").read_text())
    assert results["score"] == course_class.EXPECTED_POINTS["erin"]
    first = results["tests"][0]
    assert first["name"] == "2.1 sinusoidal_positional_encoding" and "held-out cases: fail" in first["output"]
