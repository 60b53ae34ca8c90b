r"""A student copy of the workbook: no answers in it, and everything a student needs still works.

``python -m exercises release --repo`` writes the copy into a temporary folder once (``release_copy.py``, beside
the other tests from the end of collection, with the copy's own exercise tests); the tests then work inside it as
a student would, in subprocesses whose imports come from the copy alone
(``solutions`` is not importable there): grading a correct, a wrong and an unwritten file, the
copy's own exercise tests, and the first cells of the released chapter. What ships is decided by
folder (``release.ships``); a walk over the shipped tests' imports proves none needs the answers.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from exercises.grading import notebooks, release
from exercises.grading.drill import drills
from exercises.grading.generate import drill_text, exercise_modules, generated_text, region_labels, regions
from exercises.grading.modules import names as module_names
from exercises.grading.modules.exercise_text import fill, reference_body
from exercises.grading.paths import SHIPPED, SOLUTIONS, module_folder

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import background  # noqa: E402
import release_copy  # noqa: E402
from release_copy import in_copy as _in_copy, student_paths  # noqa: E402

DRILLS = drills()  # {name: Drill}, found in the module folders

ROPE_LABELS = region_labels((SOLUTIONS / "rope.py").read_text())   # {name: "Exercise 6.N"}
TEST_LABEL = ROPE_LABELS["test_rope_properties"]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def copy_and_own_tests():
    r"""The copy, released and first used beside the other tests from the end of collection (``release_copy.py``)."""
    return background.result("release copy", release_copy.job(background.snapshot()))


@pytest.fixture(scope="module")
def copy(copy_and_own_tests):
    return copy_and_own_tests["copy"]


@pytest.mark.parametrize("kept, path", [
    (True, ".venv/lib/python3.11/site-packages"),  # the README's venv at the repository's root: numpy is here
    (True, "venv/lib/python3/dist-packages"),
    (True, ".venv/lib/python3.11/lib-dynload"),  # under the venv's prefix
    (True, "/usr/lib/python3.11"), (True, "/opt/env/lib/python3.11/site-packages"),  # outside the repository
    (False, "."), (False, "solutions"), (False, "exercises"), (False, "exercises/grading/modules/rope"),
    (False, "tests/grading"), (False, ".venv-not-a-prefix/lib")])
def test_a_student_environment_keeps_installed_packages_and_drops_the_repositorys_own_folders(kept, path):
    root = Path("/work/repo")
    full = str(root / path) if not path.startswith("/") else path
    assert student_paths([full], root, [str(root / ".venv"), "/usr"]) == ([full] if kept else [])
    # a prefix that is the repository, or holds it, keeps nothing of the repository's own
    assert student_paths([str(root / "solutions")], root, [str(root), "/work"]) == []


def test_the_student_environment_of_this_run_cannot_import_the_answers():
    ours = student_paths([p for p in sys.path if p and os.path.isdir(p)], ROOT,
                         (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix))
    assert any(Path(p, "numpy").is_dir() for p in ours), ours  # the packages a student needs
    assert not [p for p in ours if Path(p, "solutions").is_dir() or Path(p, "exercises", "grading").is_dir()], ours


@pytest.mark.slow
def test_the_copy_holds_no_answers(copy):
    for gone in ("solutions", "exercises/grading/modules/rope/checks.py", "exercises/grading/modules/rope/wrong",
                 "chapters/expected_outputs", "tests/grading", "tests/solutions", "tests/chapters", "tests/adapters"):
        assert not (copy / gone).exists(), gone
    # every module folder is there with its mutants alone, and nothing else of the grader's
    for m in module_names():
        held = {p.name for p in (copy / module_folder(m).relative_to(ROOT)).rglob("*") if p.is_file()}
        assert held == {n for n in SHIPPED if (module_folder(m) / n).is_file()}, (m, held)
    assert (copy / "exercises" / "rope.py").read_text() == generated_text("rope")
    given = "".join(generated_text(m) for m in exercise_modules()) + "".join(
        drill_text(d.module, d.names, d.name, d.minutes) for d in DRILLS.values())  # signatures and docstrings
    answer_lines = set()
    for path in SOLUTIONS.glob("*.py"):
        text = path.read_text()
        lines = text.splitlines()
        answer_lines |= {lines[n].strip() for _, first, last, _ in regions(text) for n in range(first + 1, last)
                         if len(lines[n].strip()) > 20 and lines[n].strip() not in given}
    # what the release writes and the grader ships: exercises/ (the engine, the chapters and the engine's
    # tests are the authors' own text, where a short line may well match an answer)
    # (exercises/adapters/ is the authors' code that runs the reader's functions in the model, as the library is)
    shipped = {str(p.relative_to(copy)): p.read_text(errors="replace") for p in (copy / "exercises").rglob("*")
               if p.is_file() and "adapters" not in p.relative_to(copy).parts}
    leaks = [(name, line) for name, text in shipped.items() for line in answer_lines if line in text]
    assert not leaks, leaks[:5]


def repository_paths(text):
    r"""The repository's paths a Markdown page names: backticked paths and ``$WORKBOOK/...`` whose first part is
    a top-level entry of the repository, and its relative links (from ``chapters/``); placeholders skipped."""
    top = {p.name for p in ROOT.iterdir()} - {".git"}
    spans = (re.findall(r"`([^`\s]+)`", text) + re.findall(r"\$WORKBOOK/([^\s\"']+)", text)
             + [f"chapters/{link}" for link in re.findall(r"\]\(([^)#\s:]+)\)", text)])
    return sorted({s.rstrip("/") for s in spans if Path(s).parts and Path(s).parts[0] in top
                   and not re.search(r"<|NN|\*", s)})


@pytest.mark.slow
def test_every_repository_path_the_copys_instructor_guide_names_is_in_the_copy(copy):
    guide = (copy / release.GUIDE).read_text()
    named = repository_paths(guide)
    assert [p for p in named if not (copy / p).exists()] == []
    assert "chapters/TEACHING.md" in named and "full workbook" in guide  # it says where the guide lives
    # the full guide, which the release used to copy as it is, sends its reader to files the copy lacks
    missing = [p for p in repository_paths((ROOT / release.GUIDE).read_text()) if not (copy / p).exists()]
    assert {"tests/grading/course_class.py", "tests/grading/conftest.py", "solutions"} <= set(missing), missing


@pytest.mark.slow
def test_the_released_chapters_drop_answers_and_hints(copy):
    for chapter in (copy / "chapters").glob("[0-9]*.py"):
        nb = notebooks.read_chapter(chapter)
        dropped = [c for c in nb.cells if set(notebooks.tags(c)) & {"answer", "hint"}]
        assert not dropped and "reveal(" not in chapter.read_text().replace("import reveal", "")


def test_for_students_drops_every_answer_and_hint_cell():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("Exercise", metadata={"tags": []}),
                nbformat.v4.new_markdown_cell("<details>Hint 1</details>", metadata={"tags": ["hint"]}),
                nbformat.v4.new_code_cell("reveal('rope', 'x')", metadata={"tags": ["answer"]}),
                nbformat.v4.new_code_cell("print(1)", metadata={"tags": ["nbval-check-output"]})]
    kept = notebooks.for_students(nb)
    assert [c.source for c in kept.cells] == ["Exercise", "print(1)"]
    assert all(not notebooks.tags(c) for c in kept.cells)


@pytest.mark.slow
def test_grading_in_the_copy_works_from_stored_cases(copy, tmp_path):
    assert "No module named 'solutions'" in _in_copy(copy, "-c", "import solutions").stderr
    correct = tmp_path / "correct.py"
    correct.write_text((SOLUTIONS / "rope.py").read_text())
    done = _in_copy(copy, "-m", "exercises", "grade", "rope", "--file", str(correct))
    n = len(set(ROPE_LABELS.values()))
    assert done.returncode == 0 and f"{n} of {n} pass." in done.stdout, done.stdout + done.stderr

    wrong = tmp_path / "wrong.py"
    wrong.write_text(fill(generated_text("rope"), "Exercise 6.1",
                          "h = x.shape[-1] // 2\nreturn xp.concatenate([x[..., h:], -x[..., :h]], axis=-1)"))
    done = _in_copy(copy, "-m", "exercises", "grade", "rope", "--file", str(wrong))
    assert "misconception, sign error in rotate_half" in done.stdout, done.stdout + done.stderr

    done = _in_copy(copy, "-m", "exercises", "grade", "rope")  # the copy's own, unwritten exercises/rope.py
    assert done.stdout.count("not attempted") == len(set(ROPE_LABELS.values())) and "Traceback" not in done.stdout + done.stderr, done.stdout


@pytest.mark.slow
def test_drills_work_in_the_copy(copy, tmp_path):
    env_dir = tmp_path / "attempts"
    done = _in_copy(copy, "-c", f"import os; os.environ['PE_DRILL_DIR'] = {str(env_dir)!r}; "
                               f"os.environ['PE_DRILL_HISTORY'] = {str(tmp_path / 'h.json')!r}; "
                               "from exercises.grading.cli import main; main(['drill', 't5'])")
    assert done.returncode == 0, done.stderr
    assert "def relative_position_bucket(" in (env_dir / "t5.py").read_text()
    (env_dir / "t5.py").write_text((SOLUTIONS / "t5.py").read_text())
    done = _in_copy(copy, "-c", f"import os; os.environ['PE_DRILL_DIR'] = {str(env_dir)!r}; "
                               f"os.environ['PE_DRILL_HISTORY'] = {str(tmp_path / 'h.json')!r}; "
                               "from exercises.grading.cli import main; main(['drill', 't5', '--grade'])")
    assert "Drill 't5' passes" in done.stdout, done.stdout + done.stderr


@pytest.mark.slow
def test_a_reader_test_waits_for_its_implementations_in_the_copy(copy, tmp_path):
    path = tmp_path / "rope.py"
    path.write_text(fill(generated_text("rope"), TEST_LABEL, reference_body("rope", TEST_LABEL)))
    done = _in_copy(copy, "-m", "exercises", "grade", "rope", "--file", str(path))
    assert re.search(rf"{TEST_LABEL}\s+test_rope_properties\s+FAIL", done.stdout), done.stdout
    assert "runs your test on your own apply_rotary, RotaryEmbedding" in done.stdout


def _shipped_tests(root):
    return [str(p.relative_to(root)) for p in (root / "tests").rglob("*.py")]


@pytest.mark.slow
def test_no_shipped_test_imports_the_answers(copy):
    shipped = _shipped_tests(copy)
    # the reader's own test and the library's, one folder per floor, ship; the walk has something to walk
    assert "tests/reader/test_exercises.py" in shipped
    floors = {p.name for p in (ROOT / "mini_transformer").iterdir() if p.is_dir() and not p.name.startswith("_")}
    assert floors and {Path(rel).parts[1] for rel in shipped if len(Path(rel).parts) > 2} == floors | {"reader"}
    assert release.refused_tests(copy, shipped) == []


@pytest.mark.slow
def test_the_import_walk_catches_a_test_that_needs_the_answers(copy, tmp_path):
    """Plant two violations in a copy of the shipped tests: the walk finds both, and nothing else."""
    shutil.copytree(copy / "tests", tmp_path / "tests")
    (tmp_path / "tests" / "engine" / "test_planted.py").write_text("import numpy\nfrom solutions import rope\n")
    (tmp_path / "tests" / "reader" / "test_planted_checks.py").write_text(
        "def test_it():\n    from exercises.grading.modules.rope import checks\n")
    assert sorted(release.refused_tests(tmp_path, _shipped_tests(tmp_path))) == [
        ("tests/engine/test_planted.py", "solutions"),
        ("tests/reader/test_planted_checks.py", "exercises.grading.modules.rope.checks")]


@pytest.mark.slow
def test_the_copys_own_exercise_tests_pass(copy_and_own_tests):
    done = copy_and_own_tests["own_tests"]   # in_copy(copy, *release_copy.OWN_TESTS), run when the copy was made
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    # one skipped "not attempted" per exercise of every module
    n_exercises = sum(len(set(region_labels((SOLUTIONS / f"{m}.py").read_text()).values())) for m in exercise_modules())
    assert re.search(rf"\d+ passed, {n_exercises} skipped", done.stdout), done.stdout


@pytest.mark.slow
def test_the_released_chapter_runs_and_names_the_exercise_to_write(copy, tmp_path):
    """Run the copy's chapter 6 up to the first cell that needs an exercise the student has not written."""
    nb = notebooks.read_chapter(copy / "chapters" / "06_rope.py")
    first_use = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "use(" in c.source)
    needs_it = next(i for i, c in enumerate(nb.cells) if i > first_use and c.cell_type == "code")
    nb.cells = nb.cells[:needs_it + 1]
    path = tmp_path / "first_cells.ipynb"
    nbformat.write(nb, path)
    done = _in_copy(copy, "-m", "nbconvert", "--to", "notebook", "--execute", "--allow-errors",
                    "--output", str(tmp_path / "ran.ipynb"), str(path), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    ran = nbformat.read(tmp_path / "ran.ipynb", as_version=4)
    errors = [(i, o) for i, c in enumerate(ran.cells) if c.cell_type == "code"
              for o in c.get("outputs", []) if o.output_type == "error"]
    assert [i for i, _ in errors] == [needs_it], [(i, o.ename, o.evalue) for i, o in errors]
    error = errors[0][1]
    assert error.ename == "ExerciseNotWritten"
    assert "Exercise 6.1 (rotate_half) is not written yet: write it in exercises/rope.py" in error.evalue
    printed = "".join(o.get("text", "") for c in ran.cells[:needs_it] for o in c.get("outputs", []))
    assert re.search(r"rotate_half\s+missing\s+\(not written yet; this copy has no reference\)", printed), printed


@pytest.mark.slow
def test_the_copy_holds_no_held_out_case_no_rubric_no_model_answer(copy):
    from exercises.grading import wire
    from exercises.grading.modules import targets
    assert not (copy / "exercises" / "grading" / "instructor_only").exists()
    held_modules = []
    for path in sorted((copy / "exercises" / "grading" / "stored").glob("*.npz")):
        data = wire.loads(path.read_bytes())
        checks = targets(data["module"])
        for t in data["targets"]:
            assert t.get("held") is None, (path.name, t["name"])
            held = checks[t["name"]].held_out
            if held is None:
                continue
            held_modules.append(data["module"])
            public = checks[t["name"]].cases()
            assert [c["label"] for c in t["cases"]] == [c.label for c in public]  # the public cases, all of them
            for h in held():  # and not one held-out input among them
                assert not any(c["label"] == h.label or (repr(c["args"]) == repr(h.args) and
                                                          repr(c["kwargs"]) == repr(h.kwargs)) for c in t["cases"])
    assert {"sinusoidal", "learned", "t5"} <= set(held_modules)
    # the chapter answers the rubric quotes are stripped, so the copy has no rubric to print
    for args in (["rubric", "02"], ["capstone", "--rubric"]):
        done = _in_copy(copy, "-m", "exercises", *args)
        assert done.returncode != 0 and "student copy" in done.stderr, done.stdout + done.stderr
    done = _in_copy(copy, "-m", "exercises", "answers-template", "12", "--out", str(copy.parent / "12.md"))
    assert done.returncode == 0, done.stderr
    text = (copy.parent / "12.md").read_text()
    assert "### ward" in text and "### Q1" in text and "Answer" not in text.replace("Answers, chapter", "")
