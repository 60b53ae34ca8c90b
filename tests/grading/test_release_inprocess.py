r"""``release`` called in this process (so mutation testing reaches it): what ships, what a student
notebook keeps, which imports are the answers, the file listing, and a student copy of a small fake
workbook written into ``tmp_path``. ``test_release.py`` runs the real release in a subprocess."""
import subprocess
from pathlib import Path

import nbformat
import pytest

from exercises.grading import generate, knowledge, notebooks, release
from exercises.grading.errors import CommandError


@pytest.mark.parametrize("rel, shipped", [
    ("README.md", True), ("chapters/06_rope.py", True), ("exercises/grading/release.py", True),
    ("solutions/rope.py", False), ("solutionsX/rope.py", True),
    ("chapters/expected_outputs/06_rope.ipynb", False), ("chapters/cards/x.md", True),
    ("exercises/grading/stored/rope.npz", False),  # the release writes it anew
    ("exercises/grading/instructor_only/rubrics/r.md", False),
    ("exercises/grading/modules/alibi/checks.py", False), ("exercises/grading/modules/alibi/mutants.py", True),
    ("exercises/grading/modules/alibi/__init__.py", True), ("exercises/grading/modules/alibi/wrong/w.py", False),
    ("tests/reader/test_exercises.py", True), ("tests/engine/test_x.py", True),  # a floor of mini_transformer
    ("tests/grading/test_release.py", False), ("tests/solutions/test_x.py", False),
    ("tests/no_such_floor/test_x.py", False), ("tests/conftest.py", True), ("", False),
])
def test_ships_follows_the_folder_rule(rel, shipped):
    assert release.ships(rel) is shipped


@pytest.mark.parametrize("text, names", [
    ("import solutions.rope\n", ["solutions.rope"]),
    ("from solutions import rope\n", ["solutions", "solutions.rope"]),
    ("import numpy, solutions\n", ["solutions"]),
    ("def f():\n    import solutions\n", ["solutions"]),  # nested imports count too
    ("from exercises.grading.modules.alibi.checks import CASES\n", ["exercises.grading.modules.alibi.checks"]),
    ("from exercises.grading.modules.alibi import checks\n", ["exercises.grading.modules.alibi.checks"]),
    ("from exercises.grading.modules.alibi import mutants\n", []),  # mutants ship
    ("from . import solutions\n", []), ("from .solutions import x\n", []),  # relative: not the package
    ("import os\nfrom pathlib import Path\n", []), ("def f(:\n", []),  # no parse, no names
])
def test_answer_imports_names_imports_of_solutions_and_checks(text, names):
    assert release.answer_imports(text) == names


def test_refused_tests_names_the_first_answer_import_of_each_test_file(tmp_path):
    files = {"tests/a/test_x.py": "import solutions\nimport solutions.rope\n",
             "tests/a/test_ok.py": "import os\n",
             "tests/a/data.txt": "import solutions\n",  # not Python
             "chapters/x.py": "import solutions\n",  # not a test
             "x/tests/test_y.py": "import solutions\n",  # tests/ not at the top
             "tests/b/test_broken.py": "def f(:\n"}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert release.refused_tests(tmp_path, list(files)) == [("tests/a/test_x.py", "solutions")]


# 06_rope.py has 31 cells tagged answer or hint (counted with grep on the source)
def test_a_student_notebook_drops_answers_and_hints_and_outputs(tmp_path):
    path = release.notebook("06_rope", tmp_path / "a" / "b")
    assert path == tmp_path / "a" / "b" / "06_rope.ipynb"
    nb = nbformat.read(path, as_version=4)
    assert len(nb.cells) == len(notebooks.read_chapter("06_rope").cells) - 31
    assert "jupytext" not in nb.metadata
    tags = {t for c in nb.cells for t in c.metadata.get("tags", [])}
    assert not tags & {"answer", "hint"} and not any(t.startswith("nbval") for t in tags)
    assert all(c.outputs == [] for c in nb.cells if c.cell_type == "code")


def test_notebooks_for_writes_each_chapter_in_order(tmp_path):
    paths = release.notebooks_for(["07_alibi", "chapters/06_rope.py"], tmp_path)
    assert paths == [tmp_path / "07_alibi.ipynb", tmp_path / "06_rope.ipynb"]
    assert all(p.is_file() for p in paths)


def test_notebooks_for_none_means_every_chapter(tmp_path, monkeypatch):
    monkeypatch.setattr(notebooks, "chapter_names", lambda: ["06_rope", "07_alibi"])
    assert release.notebooks_for(None, tmp_path) == [tmp_path / "06_rope.ipynb", tmp_path / "07_alibi.ipynb"]


def test_notebooks_for_refuses_a_chapter_named_twice_and_writes_nothing(tmp_path):
    with pytest.raises(CommandError) as e:
        release.notebooks_for(["06_rope", "07_alibi", "chapters/06_rope.py"], tmp_path / "out")
    assert str(e.value) == "06_rope is named twice; give each chapter once."
    assert not (tmp_path / "out").exists()


def _git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    r"""A small workbook under git, which ``release`` takes for the repository."""
    root = (tmp_path / "wb").resolve()
    files = {"README.md": "# The workbook\n", "chapters/06_rope.py": notebooks.chapter_path("06_rope").read_text(),
             "chapters/TEACHING.md": "the full guide\n", "chapters/expected_outputs/06_rope.ipynb": "{}",
             "solutions/rope.py": "ANSWER = 1\n", "exercises/rope.py": "old stub\n",
             "exercises/grading/modules/alibi/checks.py": "CASES = []\n",
             "exercises/grading/modules/alibi/mutants.py": "MUTANTS = []\n",
             "exercises/grading/stored/old.npz": "x", "exercises/grading/instructor_only/r.md": "rubric\n",
             "mini_transformer/engine/__init__.py": "", "tests/engine/test_e.py": "import os\n",
             "tests/reader/test_r.py": "import os\n", "tests/grading/test_g.py": "import solutions\n",
             "data/notes.txt": "kept as it is\n", ".gitignore": "student_release/\nignored.txt\n",
             "ignored.txt": "not listed\n", "gone.txt": "deleted after git add\n"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _git(root, "init", "-q")
    _git(root, "add", "README.md", "gone.txt")
    (root / "gone.txt").unlink()
    monkeypatch.setattr(release, "ROOT", root)
    monkeypatch.setattr(notebooks, "chapter_names", lambda: ["06_rope"])
    monkeypatch.setattr(generate, "exercise_modules", lambda: ["rope"])
    monkeypatch.setattr(generate, "generated_text", lambda m: f"# stub of {m}\n")
    monkeypatch.setattr(knowledge, "graded_modules", lambda: [])
    return root


SHIPPED_FILES = [".gitignore", "README.md", "STUDENT_COPY", "chapters/06_rope.py", "chapters/TEACHING.md", "data/notes.txt",
                 "exercises/grading/modules/alibi/mutants.py", "exercises/rope.py", "mini_transformer/engine/__init__.py",
                 "tests/engine/test_e.py", "tests/reader/test_r.py"]


def test_tracked_files_lists_gits_files_present_and_not_ignored(repo):
    got = sorted(release.tracked_files())
    assert ".gitignore" in got and "README.md" in got and "data/notes.txt" in got
    assert "ignored.txt" not in got and "gone.txt" not in got and "" not in got  # ignored; added, then deleted
    assert len(got) == 16  # the fixture's 18 files less ignored.txt and gone.txt


@pytest.mark.parametrize("failure", ["raise", "exit 128"])
def test_tracked_files_walks_the_tree_without_git(tmp_path, monkeypatch, failure):
    for rel in ["a/b.py", "c.txt", ".git/HEAD", "a/__pycache__/b.pyc", ".pytest_cache/x", "build/x", "student_release/x",
                ".venv/x", "venv311/x", "a/.venv-old/x"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")

    def run(*args, **kwargs):
        if failure == "raise":
            raise OSError("no git")
        return subprocess.CompletedProcess(args, 128, b"a/b.py\0", b"")
    monkeypatch.setattr(release, "ROOT", tmp_path)
    monkeypatch.setattr(release.subprocess, "run", run)
    assert sorted(release.tracked_files()) == ["a/b.py", "c.txt"]


def test_ignored_asks_git(repo, monkeypatch):
    assert release._ignored(repo / "student_release" / "copy") is True
    assert release._ignored(repo / "data") is False

    def run(*args, **kwargs):
        raise subprocess.TimeoutExpired("git", 30)
    monkeypatch.setattr(release.subprocess, "run", run)
    assert release._ignored(repo / "student_release" / "copy") is False


def test_repository_writes_the_shipped_files_and_nothing_else(repo, tmp_path):
    out = release.repository(tmp_path / "copy")
    assert out == (tmp_path / "copy").resolve()
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == SHIPPED_FILES
    assert (out / "README.md").read_text() == release._STUDENT_NOTE + "# The workbook\n"
    assert (out / "chapters/TEACHING.md").read_text() == release._GUIDE_IN_A_COPY
    assert (out / "exercises/rope.py").read_text() == "# stub of rope\n"
    assert (out / "data/notes.txt").read_text() == "kept as it is\n"
    assert (out / "STUDENT_COPY").read_text().startswith("This is a student copy of the workbook")
    chapter = notebooks.read_chapter("06_rope", (out / "chapters/06_rope.py").read_text())
    assert len(chapter.cells) == len(notebooks.read_chapter("06_rope").cells) - 31
    assert not {t for c in chapter.cells for t in c.metadata.get("tags", [])} & {"answer", "hint"}


def test_repository_may_write_under_an_ignored_folder_of_the_workbook(repo):
    out = release.repository(repo / "student_release" / "copy")
    assert (out / "STUDENT_COPY").is_file() and not (out / "solutions").exists()


@pytest.mark.parametrize("where, message", [
    ("full", "is not empty; give a new folder for the student copy."),
    ("root", "is inside the workbook and not ignored by git"),
    ("inside", "is inside the workbook and not ignored by git"),
])
def test_repository_refuses_a_full_folder_or_one_git_would_list(repo, tmp_path, where, message):
    out = {"full": tmp_path / "full", "root": repo, "inside": repo / "data" / "copy"}[where]
    if where == "full":
        (out / "x").mkdir(parents=True)
    if where == "root":
        for p in list(repo.iterdir()):  # the workbook's root, emptied, is still the workbook
            subprocess.run(["rm", "-rf", str(p)], check=True)
    with pytest.raises(CommandError) as e:
        release.repository(out)
    assert message in str(e.value)
    assert not (out / "STUDENT_COPY").exists()


def test_repository_refuses_a_shipped_test_that_imports_the_answers(repo, tmp_path):
    (repo / "tests/reader/test_bad.py").write_text("from exercises.grading.modules.alibi import checks\n")
    with pytest.raises(CommandError) as e:
        release.repository(tmp_path / "copy")
    assert str(e.value).startswith("tests/reader/test_bad.py imports exercises.grading.modules.alibi.checks, "
                                   "which a student copy does not hold")
    assert not (tmp_path / "copy").exists()


def test_repository_refuses_a_chapter_cell_that_imports_the_answers(repo, tmp_path, monkeypatch):
    bad = tmp_path / "99_bad.py"
    bad.write_text("# %%\nx = 1\n\n# %% tags=[\"answer\"]\nimport solutions\n\n# %%\nfrom solutions.rope import f\n")
    monkeypatch.setattr(notebooks, "chapter_names", lambda: ["06_rope", str(bad)])
    with pytest.raises(CommandError) as e:
        release.repository(tmp_path / "copy")
    assert "imports solutions.rope in a cell that students keep (cell 1 of the student notebook)" in str(e.value)
    assert not (tmp_path / "copy").exists()


def test_the_refusals_and_the_marker_read_word_for_word(repo, tmp_path, monkeypatch):
    with pytest.raises(CommandError) as e:
        release.repository(repo / "data" / "copy")
    assert str(e.value) == (f"{repo / 'data' / 'copy'} is inside the workbook and not ignored by git; write the copy "
                            "elsewhere (or under student_release/, which .gitignore lists).")
    (repo / "tests/reader/test_bad.py").write_text("import solutions\n")
    with pytest.raises(CommandError) as e:
        release.repository(tmp_path / "copy")
    assert str(e.value) == ("tests/reader/test_bad.py imports solutions, which a student copy does not hold; move the "
                            "test to a folder that does not ship (tests/grading/, say) or make it work without the answers.")
    (repo / "tests/reader/test_bad.py").unlink()
    bad = tmp_path / "99_bad.py"
    bad.write_text("# %%\nimport solutions\n")
    monkeypatch.setattr(notebooks, "chapter_names", lambda: [str(bad)])
    with pytest.raises(CommandError) as e:
        release.repository(tmp_path / "copy")
    assert str(e.value) == (f"chapters/{bad}.py imports solutions in a cell that students keep (cell 0 of the student "
                            "notebook); a student copy has no solutions/ and no checks. Load exercises with use(...) "
                            "and anything else from mini_transformer.")
    monkeypatch.setattr(notebooks, "chapter_names", lambda: ["06_rope"])
    out = release.repository(tmp_path / "copy")
    assert (out / "STUDENT_COPY").read_bytes() == (b"This is a student copy of the workbook, written by "
                                                   b"`python -m exercises release --repo`.\n")


def test_repository_stores_each_graded_modules_knowledge(repo, tmp_path, monkeypatch):
    from exercises.grading import stored
    written = []
    monkeypatch.setattr(knowledge, "graded_modules", lambda: ["alibi", "rope"])
    monkeypatch.setattr(release, "_stored_knowledge", lambda m: {"module": m})
    monkeypatch.setattr(stored, "write", lambda folder, m, data: written.append((folder, m, data)))
    out = release.repository(tmp_path / "copy")
    assert written == [(out / "exercises/grading/stored", "alibi", {"module": "alibi"}),
                       (out / "exercises/grading/stored", "rope", {"module": "rope"})]


def test_refused_tests_reads_a_file_with_bad_bytes(tmp_path):
    (tmp_path / "tests/a").mkdir(parents=True)
    (tmp_path / "tests/a/test_x.py").write_bytes(b"# \xff\nimport solutions\n")
    assert release.refused_tests(tmp_path, ["tests/a/test_x.py"]) == [("tests/a/test_x.py", "solutions")]


def test_two_chapters_named_twice_are_both_named(tmp_path):
    with pytest.raises(CommandError) as e:
        release.notebooks_for(["07_alibi", "06_rope", "06_rope", "07_alibi.py"], tmp_path)
    assert str(e.value) == "06_rope, 07_alibi is named twice; give each chapter once."


def test_answer_imports_keeps_the_names_of_every_statement():
    assert release.answer_imports("import solutions.rope\nfrom solutions import alibi\n") == [
        "solutions.rope", "solutions", "solutions.alibi"]


def test_ignored_prints_nothing(repo, capfd):
    assert release._ignored(repo / "student_release" / "copy") is True
    assert capfd.readouterr().out == ""  # check-ignore -q: the answer is the exit code alone


def test_stored_knowledge_holds_no_reference_and_no_held_out_case():
    data = release._stored_knowledge("rope")
    assert data["module"] == "rope"
    assert all(t["siblings"] is None and t["held"] is None for t in data["targets"])  # no reference, no held-out
    assert all(t["reference"] is None for t in data["tests"])
    # chapter 06's exercise numbers, as the chapter's headings give them
    labels = data["region_labels"]
    assert (labels["rotate_half"], labels["test_rope_properties"], labels["decode"]) == (
        "Exercise 6.1", "Exercise 6.5", "Exercise 6.10")
    assert data["exercise_text"] == generate.generated_text("rope")
    assert data["drill"]["names"] == ["rotate_half", "apply_rotary", "RotaryEmbedding"]
    assert data["drill"]["minutes"] == 15
    assert "def rotate_half" in data["drill"]["text"]
    assert data["drill"]["text"].startswith('r"""Drill: rope. Target 15 minutes from this blank file.')


def test_stored_knowledge_of_a_module_without_drill_or_exercise_file(monkeypatch):
    monkeypatch.setattr(generate, "exercise_modules", lambda: [])
    data = release._stored_knowledge("caches")
    assert data["drill"] is None and data["exercise_text"] is None
    assert data["targets"] and all(t["held"] is None for t in data["targets"])
