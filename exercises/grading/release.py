r"""Student releases: one chapter as a notebook, or the whole workbook without the answers.

    python -m exercises release 06_rope --out DIR      # DIR/06_rope.ipynb
    python -m exercises release 02_sinusoidal 06_rope --out DIR   # one notebook per chapter named
    python -m exercises release --all --out DIR        # every chapter of the book
    python -m exercises release --repo --out DIR       # DIR: a student copy of the workbook

A student notebook drops every cell tagged ``answer`` or ``hint``, clears outputs and the
test tags, and is no longer paired with a ``.py``.

A student copy is the repository less what gives the answers away or needs them, decided by
folder (``ships``): **the copy leaves out ``solutions/``, every file under
``exercises/grading/modules/`` but the mutants (``paths.SHIPPED``), ``chapters/expected_outputs/``,
and every test folder but the library's own (``tests/<floor>/`` for each floor of
``mini_transformer/``) and the reader's (``tests/reader/``)**. So the tests of the book
(``tests/adapters/``, ``tests/solutions/``, ``tests/grading/``, ``tests/chapters/``) stay behind, and
a new module or a new test needs no list updated. On the way the release writes:

* each chapter as a percent-format ``.py`` without its ``answer`` and ``hint`` cells;
* ``chapters/TEACHING.md`` as one paragraph saying where the instructor guide lives: the guide runs in
  the full workbook (its sample class ``tests/grading/course_class.py``, ``solutions/``, the rubrics),
  none of which a student copy holds, so the copy's page names no file the copy lacks;
* fresh stubs in ``exercises/<module>.py``;
* ``exercises/grading/stored/<module>.npz``: the compiled checks (cases, the reference's
  outputs, every misconception's outputs), labels, the exercise file and the blank drill files.
  ``python -m exercises grade`` and ``drill`` read them where ``solutions/`` is missing.

It refuses to write a copy in which a chapter cell or a shipped test imports ``solutions`` or a
module folder's checks (``answer_imports``): they would fail there.

The copy keeps ``mini_transformer/``, which implements the schemes the chapters train, and the
stored outputs name the expected values of the graded cases: a student copy hides the answers of
the exercises, it does not make self-grading tamper-proof. Grade assessed work with
``grade-folder`` in your own copy, which computes everything afresh.
"""
import ast
import os
import shutil
import subprocess
from pathlib import Path

from exercises.grading import notebooks
from mini_transformer.engine.files import atomic_write
from exercises.grading.errors import CommandError
from exercises.grading.paths import ROOT, SHIPPED, is_answer_import


def ships(rel):
    r"""Whether the repository's file ``rel`` (a relative path) goes into a student copy: the rule above."""
    parts = Path(rel).parts
    if not parts or parts[0] == "solutions" or parts[:2] == ("chapters", "expected_outputs"):
        return False
    if parts[:3] in (("exercises", "grading", "stored"),  # the release writes it anew
                     ("exercises", "grading", "instructor_only")):  # rubrics, the capstone's reference
        return False
    if parts[:3] == ("exercises", "grading", "modules"):
        return parts[-1] in SHIPPED
    if parts[0] == "tests" and len(parts) > 2:  # a test folder: the library's floors and the reader's
        return parts[1] == "reader" or (ROOT / "mini_transformer" / parts[1]).is_dir()
    return True


def notebook(name, out_dir):
    r"""``out_dir/NN_name.ipynb``: the chapter for students (see ``notebooks.for_students``)."""
    import nbformat
    nb = notebooks.for_students(notebooks.read_chapter(name))
    nb.metadata.pop("jupytext", None)  # a student's Jupyter must not pair it with a .py
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{notebooks.chapter_path(name).stem}.ipynb"
    nbformat.write(nb, path)
    return path


def notebooks_for(names, out_dir):
    r"""A student notebook of each chapter in ``names`` (every chapter when None); the paths, in order.

    Every name is checked before anything is written, so a typo in the fifth name leaves no
    half-written release behind.
    """
    names = notebooks.chapter_names() if names is None else list(names)
    stems = [notebooks.chapter_path(n).stem for n in names]  # CommandError naming the chapters on a bad name
    repeated = sorted({s for s in stems if stems.count(s) > 1})
    if repeated:
        raise CommandError(f"{', '.join(repeated)} is named twice; give each chapter once.")
    return [notebook(stem, out_dir) for stem in stems]


def tracked_files():
    r"""The repository's files: git's list where there is one, else every file but caches and environments."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"], capture_output=True, timeout=60)
        if out.returncode == 0:
            return [f for f in out.stdout.decode().split("\0") if f and (ROOT / f).is_file()]
    except (OSError, subprocess.TimeoutExpired):
        pass
    skip = {".git", "__pycache__", ".pytest_cache", "build", "student_release"}
    files = []
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in skip and not d.startswith((".venv", "venv"))]
        files += [str(Path(folder, n).relative_to(ROOT)) for n in names]
    return files


def answer_imports(text):
    r"""The imports in ``text`` (Python source) of ``solutions`` or of a module folder's checks: ``[name]``."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return [n for n in names if is_answer_import(n)]


def refused_tests(root, rels):
    r"""``[(rel, name)]``: each test file among ``rels`` (paths relative to ``root``) that imports the answers."""
    found = []
    for rel in rels:
        if Path(rel).parts[0] == "tests" and rel.endswith(".py"):
            found += [(rel, name) for name in answer_imports((Path(root) / rel).read_text(errors="replace"))[:1]]
    return found


def _stored_knowledge(module):
    from exercises.grading.drill import drills
    from exercises.grading.generate import drill_text, exercise_modules, generated_text, labels_of
    from exercises.grading.knowledge import compile_module
    data = compile_module(module, reference=False)
    data["region_labels"] = labels_of(module)
    data["exercise_text"] = generated_text(module) if module in exercise_modules() else None
    d = drills().get(module)
    data["drill"] = d and {"names": list(d.names), "minutes": d.minutes,
                           "text": drill_text(d.module, d.names, d.name, d.minutes)}
    return data


def repository(out_dir):
    r"""Write a student copy of the workbook into ``out_dir`` (which must be empty or absent)."""
    import jupytext
    from exercises.grading.generate import exercise_modules, generated_text
    from exercises.grading.knowledge import graded_modules
    out = Path(out_dir).resolve()
    if out.exists() and any(out.iterdir()):
        raise CommandError(f"{out} is not empty; give a new folder for the student copy.")
    if out == ROOT or ROOT in out.parents and not _ignored(out):
        raise CommandError(f"{out} is inside the workbook and not ignored by git; write the copy elsewhere "
                         "(or under student_release/, which .gitignore lists).")
    for name in notebooks.chapter_names():  # a chapter that imports the reference would die in the copy
        nb = notebooks.for_students(notebooks.read_chapter(name))
        bad = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and answer_imports(c.source)]
        if bad:
            raise CommandError(f"chapters/{name}.py imports {answer_imports(nb.cells[bad[0]].source)[0]} in a cell that "
                             f"students keep (cell {bad[0]} of the student notebook); a student copy has no "
                             "solutions/ and no checks. Load "
                             "exercises with use(...) and anything else from mini_transformer.")
    modules = graded_modules()
    stubs = {f"exercises/{m}.py" for m in exercise_modules()}  # written afresh below
    shipped = [rel for rel in tracked_files() if ships(rel) and rel not in stubs]
    for rel, name in refused_tests(ROOT, shipped):  # it would fail in the copy: say which, write nothing
        raise CommandError(f"{rel} imports {name}, which a student copy does not hold; move the test to a folder "
                         "that does not ship (tests/grading/, say) or make it work without the answers.")
    for rel in shipped:
        src = ROOT / rel
        dst = out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if rel.startswith("chapters/") and Path(rel).parent == Path("chapters") and rel.endswith(".py"):
            nb = notebooks.for_students(notebooks.read_chapter(Path(rel).stem))
            dst.write_text(jupytext.writes(nb, fmt="py:percent"))
        elif rel == "README.md":
            dst.write_text(_STUDENT_NOTE + src.read_text())
        elif rel == GUIDE:
            dst.write_text(_GUIDE_IN_A_COPY)
        else:
            shutil.copy2(src, dst)
    for m in exercise_modules():
        (out / "exercises" / f"{m}.py").write_text(generated_text(m))
    from exercises.grading.stored import write
    for m in modules:
        write(out / "exercises" / "grading" / "stored", m, _stored_knowledge(m))
    atomic_write(out / "STUDENT_COPY", lambda f: f.write(b"This is a student copy of the workbook, written by "
                                                         b"`python -m exercises release --repo`.\n"))
    return out


def _ignored(path):
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", str(path)], timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0


GUIDE = "chapters/TEACHING.md"  # the instructor guide: its commands need the full workbook
_GUIDE_IN_A_COPY = ("# Teaching the workbook as a course\n\nThis is a student copy of the workbook (see `STUDENT_COPY`), "
                    "and the instructor guide is not in it. The guide plans the sessions and the capstone, and its "
                    "commands release, grade and build a sample class from the full workbook: the reference "
                    "solutions, the grader's checks, the rubrics and the grader's tests, which a student copy "
                    "leaves out. Your instructor has it, as `chapters/TEACHING.md` in the full workbook; ask them "
                    "for the session plan and the capstone's brief.\n")

_STUDENT_NOTE = ("> **Student copy.** This copy has no `solutions/`: an exercise you have not written tells you "
                 "which one to write when a chapter needs it, and `python -m exercises grade` grades your "
                 "files against stored cases and expected values (`exercises/grading/stored/`). The chapters "
                 "have no answer or hint cells.\n\n")

