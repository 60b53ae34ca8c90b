r"""Your exercises, graded.

``python -m pytest tests/reader/test_exercises.py`` grades every exercise of ``exercises/*.py``. One you
have not touched is skipped as "not attempted"; one you have written is graded for real, and a
failure prints the grader's layered feedback. ``python -m exercises grade`` prints the same
feedback as a report. A file that does not import fails once, in ``test_exercise_file_imports``,
with the line; its exercises are skipped until it imports.

This file also runs in a student copy of the workbook (no ``solutions/``), where the grader reads
its cases and expected values from ``exercises/grading/stored/``.
"""
import pytest

from exercises.grading import generate as gen
from exercises.grading.grader import exercise_module_names, grade_exercises, label_of, targets_of

MODULES = exercise_module_names()
TARGETS = [k for m in MODULES for k in targets_of(m)]


def _id(key):
    return f"{label_of(key).split()[-1]}-{key.split('.', 1)[1]}"


@pytest.fixture(scope="module")
def results():
    return grade_exercises()


@pytest.mark.parametrize("module", MODULES)
def test_exercise_file_imports(module, results):
    broken = [r for k, r in results.items() if k.startswith(f"{module}.") and r["kind"] == "import"]
    assert not broken, broken[0]["message"]


@pytest.mark.parametrize("target", TARGETS, ids=_id)
def test_exercise(target, results):
    r = results[target]
    if r["status"] == "not attempted":
        pytest.skip("not attempted")
    if r["kind"] == "import":
        pytest.skip(f"exercises/{target.split('.')[0]}.py does not import: see test_exercise_file_imports")
    assert r["status"] == "pass", f"{r['label']} ({target.split('.', 1)[1]}):\n{r['message']}"


@pytest.mark.parametrize("module", MODULES)
def test_exercises_match_solutions(module):
    problems = gen.drift(module)
    assert not problems, "\n".join(problems) + (
        "\nexercises/ no longer says what solutions/ would generate: run `python -m exercises generate` "
        "(it refuses to overwrite your code; your function bodies are never compared).")
