r"""Where the workbook's folders are: the one place that knows the repository's layout."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"  # the reference answers (absent from a student copy)
EXERCISES = ROOT / "exercises"  # the reader's files
CHAPTERS = ROOT / "chapters"
GRADING = EXERCISES / "grading"
MODULES = GRADING / "modules"  # one folder per exercise module: everything the grader knows about it
STORED = GRADING / "stored"  # a student copy's compiled checks (written by `release --repo`)
INSTRUCTOR_ONLY = GRADING / "instructor_only"  # rubrics' notes, the capstone's rubric and reference: never shipped

#: the files under ``modules/`` that a student copy carries: the mutants are code that wraps the reader's
#: own implementations, so no stored form can stand in for them, and they hold no answer
SHIPPED = ("__init__.py", "mutants.py")


def module_folder(module):
    r"""``exercises/grading/modules/<module>/``: its ``checks.py``, ``mutants.py``, ``wrong/`` and reader tests."""
    return MODULES / module


def answer_paths():
    r"""What gives the answers away: ``solutions/``, ``instructor_only/`` and every file under ``modules/`` not named
    in ``SHIPPED``.

    The graded process may read none of them; a student copy holds none of them.
    """
    held_back = [p for p in sorted(MODULES.rglob("*")) if p.is_file() and p.name not in SHIPPED
                 and "__pycache__" not in p.parts] if MODULES.is_dir() else []
    return [SOLUTIONS, INSTRUCTOR_ONLY] + held_back


def is_answer_import(name):
    r"""True for an import of what the graded process may not read and a student copy does not hold:
    ``solutions`` or a file under ``modules/`` not in ``SHIPPED`` (a module's ``checks``, say)."""
    parts = name.split(".")
    if parts[0] == "solutions":
        return True
    if parts[:3] != ["exercises", "grading", "modules"] or len(parts) == 3:
        return False
    path = MODULES.joinpath(*parts[3:]).with_suffix(".py")  # a folder is its __init__.py, which ships
    return path.is_file() and path.name not in SHIPPED
