r"""The sample class of chapters/TEACHING.md: session 2 (``sinusoidal`` and ``learned``), five students.

``python tests/grading/course_class.py DIR`` writes it (the guide's transcript uses it);
``tests/grading/test_course.py`` and ``tests/grading/test_teaching.py`` grade it and check every
total by hand.

* alice: every exercise of both modules, copied from the reference; her written answers to chapter 2;
* bob: only Exercise 2.1, and no ``learned.py`` at all;
* carol: 2.1 loops forever, 2.2 is right, 2.3 untouched; ``learned`` all right;
* dave: a ``sinusoidal.py`` with a syntax error; in ``learned`` only Exercise 3.2;
* erin: 2.1 right only on the inputs of the public cases (it looks them up), 2.2 right, a weak 2.3
  (it checks the shift by one step, with the default base: it lets three of the nine mutants
  through); ``learned`` all right; written answers to chapter 2 with the questions left blank.
"""
import re
import sys
from pathlib import Path

from exercises.grading.generate import regions, stub_lines
from exercises.grading.paths import CHAPTERS, SOLUTIONS

MODULES = ["sinusoidal", "learned"]
WRITTEN = ["02"]
# The points, by hand, one point a star: 2.1 ★, 2.2 ★★, 2.3 ★★★; 3.1 ★, 3.2 ★★, 3.3 ★★★ (the chapters'
# exercise headings), 12 in all. A test the reader writes scores its points times the fraction of the
# mutants it catches: erin's catches 6 of 9, so 3 * 6 / 9 = 2.
OUT_OF = 12
EXPECTED_POINTS = {"alice": 12, "bob": 1, "carol": 2 + 6, "dave": 2, "erin": 2 + 2 + 6}
# graded on the public cases alone, erin's 2.1 passes: one point more
PUBLIC_ONLY_POINTS = dict(EXPECTED_POINTS, erin=EXPECTED_POINTS["erin"] + 1)

# erin's 2.1: the public cases' inputs (exercises/grading/modules/sinusoidal/checks.py, _sin_cases), looked up
_PUBLIC_21 = "{(2, 4), (1, 4), (10, 16), (50, 64), (7, 8)}"
_ERIN_21 = f"""if (T, d_model) not in {_PUBLIC_21}:
    return xp.zeros((T, d_model))  # fitted to the public cases: wrong anywhere else
pos = xp.arange(T, dtype=xp.float64)[:, None]
omega = base ** (-xp.arange(0, d_model, 2, dtype=xp.float64) / d_model)
pe = xp.zeros((T, d_model))
pe[:, 0::2] = xp.sin(pos * omega)
pe[:, 1::2] = xp.cos(pos * omega)
return pe"""
_ERIN_23 = """pe = sinusoidal_positional_encoding(20, 8)
assert xp.allclose(pe[1:], pe[:-1] @ shift_rotation(1, 8).T)"""


def partly(module, done, loops=(), bodies=None):
    r"""The reference of ``module`` with every exercise not in ``done`` stubbed, those in ``loops`` hanging, and
    those in ``bodies`` (``{number: code}``) written as given."""
    text = (SOLUTIONS / f"{module}.py").read_text()
    lines = text.splitlines(keepends=True)
    for label, first, last, indent in reversed(regions(text)):
        number = label.split()[-1]
        if number in (bodies or {}):
            lines[first:last + 1] = [indent + line + "\n" for line in bodies[number].splitlines()]
        elif number in loops:
            lines[first:last + 1] = [f"{indent}while True:\n", f"{indent}    pass\n"]
        elif number not in done:
            lines[first:last + 1] = stub_lines(indent, label)
    return "".join(lines)


def chapter_items(stem):
    r"""``(claims, questions)`` of a chapter, counted in its text by hand-written patterns (not by the grader):
    the rows ``| C1 |`` of the first ledger, the ``**1.**`` questions."""
    text = next(CHAPTERS.glob(f"{stem}_*.py")).read_text()
    claims = []
    for line in text[text.index("| # | claim"):].splitlines()[2:]:  # the first ledger's rows, up to its end
        if not line.startswith("# |"):
            break
        claims += re.findall(r"^# \| (C\d+) \|", line)
    questions = re.findall(r"^# \*\*(\d+)\.\*\*", text, re.M)
    return [f"{c}" for c in claims], [f"Q{q}" for q in questions]


def answers(stem, fill_questions):
    r"""A filled ``answers/NN.md``: every claim predicted, the questions answered or left blank."""
    from exercises.grading.written import template
    text = template(stem)
    claims, questions = chapter_items(stem)
    for c in claims:
        text = text.replace(f"### {c}\n", f"### {c}\n\nyes: the chapter's derivation says so.\n", 1)
    if fill_questions:
        for q in questions:
            text = text.replace(f"### {q}\n", f"### {q}\n\nMy answer to {q}, with the number the chapter printed.\n", 1)
    return text


def build(folder):
    folder = Path(folder)
    files = {
        "alice": {"sinusoidal": partly("sinusoidal", {"2.1", "2.2", "2.3"}),
                  "learned": partly("learned", {"3.1", "3.2", "3.3"})},
        "bob": {"sinusoidal": partly("sinusoidal", {"2.1"})},
        "carol": {"sinusoidal": partly("sinusoidal", {"2.2"}, loops={"2.1"}),
                  "learned": partly("learned", {"3.1", "3.2", "3.3"})},
        "dave": {"sinusoidal": partly("sinusoidal", {"2.1"}).replace("def ", "def def ", 1),
                 "learned": partly("learned", {"3.2"})},
        "erin": {"sinusoidal": partly("sinusoidal", {"2.2"}, bodies={"2.1": _ERIN_21, "2.3": _ERIN_23}),
                 "learned": partly("learned", {"3.1", "3.2", "3.3"})},
    }
    for student, modules in files.items():
        for module, text in modules.items():
            path = folder / student / "exercises" / f"{module}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    for student, fill in (("alice", True), ("erin", False)):
        path = folder / student / "answers" / "02.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(answers("02", fill))
    return folder


if __name__ == "__main__":
    print(f"wrote the sample class to {build(sys.argv[1])}")
