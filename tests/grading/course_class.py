r"""A sample class for the course tools: four students, built from the reference and the stubs.

``python tests/grading/course_class.py DIR`` writes it (the instructor guide's transcript uses it);
``tests/grading/test_course.py`` grades it and checks every total by hand.

* alice: every exercise of ``sinusoidal`` and ``t5``, copied from the reference;
* bob: only Exercise 2.1 of ``sinusoidal``, and no ``t5.py`` at all;
* carol: 2.1 loops forever, 2.2 is right, 2.3 untouched; ``t5`` all right;
* dave: a ``sinusoidal.py`` with a syntax error; in ``t5`` only Exercise 5.2.
"""
import sys
from pathlib import Path

from exercises.grading.generate import regions, stub_lines
from exercises.grading.paths import SOLUTIONS

MODULES = ["sinusoidal", "t5"]
# points by hand: one per exercise that passes, out of the six exercises of the two modules
EXPECTED_POINTS = {"alice": 6, "bob": 1, "carol": 4, "dave": 1}


def partly(module, done, loops=()):
    r"""The reference of ``module`` with every exercise not in ``done`` stubbed, and those in ``loops`` hanging."""
    text = (SOLUTIONS / f"{module}.py").read_text()
    lines = text.splitlines(keepends=True)
    for label, first, last, indent in reversed(regions(text)):
        number = label.split()[-1]
        if number in loops:
            lines[first:last + 1] = [f"{indent}while True:\n", f"{indent}    pass\n"]
        elif number not in done:
            lines[first:last + 1] = stub_lines(indent, label)
    return "".join(lines)


def build(folder):
    folder = Path(folder)
    files = {
        "alice": {"sinusoidal": partly("sinusoidal", {"2.1", "2.2", "2.3"}), "t5": partly("t5", {"5.1", "5.2", "5.3"})},
        "bob": {"sinusoidal": partly("sinusoidal", {"2.1"})},
        "carol": {"sinusoidal": partly("sinusoidal", {"2.2"}, loops={"2.1"}), "t5": partly("t5", {"5.1", "5.2", "5.3"})},
        "dave": {"sinusoidal": partly("sinusoidal", {"2.1"}).replace("def ", "def def ", 1),
                 "t5": partly("t5", {"5.2"})},
    }
    for student, modules in files.items():
        for module, text in modules.items():
            path = folder / student / "exercises" / f"{module}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return folder


if __name__ == "__main__":
    print(f"wrote the sample class to {build(sys.argv[1])}")
