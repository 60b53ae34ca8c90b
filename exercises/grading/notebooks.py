r"""Chapters as notebooks: conversion, stored outputs, and which version of a chapter the tests guard.

A chapter is a percent-format ``chapters/NN_name.py``. Cells tagged ``nbval-check-output``
print something deterministic; their outputs are kept in ``chapters/expected_outputs/NN_name.ipynb``
(every other output is left out, so the file stays small and diffable), and
``tests/chapters/test_notebooks.py`` runs the chapter under ``pytest --nbval-lax`` with those outputs
merged in: tagged cells must reproduce them, every other cell must merely run.

``python -m exercises refresh-outputs NN_name`` executes the chapter and rewrites its stored
outputs; a test fails while they are out of date with the chapter.

**Which version is guarded.** The tests guard the chapter *as committed*, so a reader's scratch
cell never turns ``python -m pytest`` red:

* with ``PE_MAINTAINER=1`` or ``CI`` set (``.ci/run`` sets ``PE_MAINTAINER=1``), the working copy
  itself, exactly as it is: stale outputs fail;
* otherwise the working copy when its stored outputs were made from it (an author who edited the
  chapter and ran ``refresh-outputs``);
* otherwise, in a git checkout, the version in ``HEAD``: uncommitted edits to a chapter are
  yours, the tests run and check the committed chapter and say so in a warning; a committed
  chapter whose outputs are stale still fails;
* otherwise (no git history to tell your edits from a maintainer's), the working copy if its
  stored outputs match it, and a skip with an explanation if they do not.

Two tags shape the student release (``release.py``): cells tagged ``answer`` (reference
solutions, the answers of "Check yourself") and cells tagged ``hint`` (hint boxes) are dropped.
"""
import copy
import os
import subprocess
import unittest.mock
from pathlib import Path

from exercises.grading.errors import CommandError
from exercises.grading.paths import CHAPTERS, ROOT

EXPECTED = CHAPTERS / "expected_outputs"
CHECK_TAG = "nbval-check-output"
ANSWER_TAG = "answer"  # a reference solution or an answer: dropped from a student release
HINT_TAG = "hint"  # a hint box: dropped from a student release too
STUDENT_DROPS = (ANSWER_TAG, HINT_TAG)


def chapter_names():
    return sorted(p.stem for p in CHAPTERS.glob("[0-9]*.py"))


def chapter_path(name):
    """``06_rope``, ``06_rope.py`` or ``chapters/06_rope.py`` -> the .py path."""
    p = Path(name)
    for candidate in (p, ROOT / p, CHAPTERS / p.name, CHAPTERS / f"{p.name}.py"):
        if candidate.suffix == ".py" and candidate.is_file():
            return candidate.resolve()
    raise CommandError(f"No chapter {name!r}; the chapters are: {', '.join(chapter_names())}.")


def expected_path(name):
    return EXPECTED / f"{chapter_path(name).stem}.ipynb"


def tags(cell):
    return list(cell.get("metadata", {}).get("tags", []))


def stable_ids(nb):
    r"""``nb`` as nbformat 4.5 with cell ids ``cell-000``, ``cell-001``, ...: the same chapter gives the same file."""
    nb.nbformat, nb.nbformat_minor = 4, 5
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:03d}"
    return nb


def read_chapter(name, text=None):
    """The chapter (or ``text``, a version of it) as a notebook, no outputs, deterministic cell ids."""
    import jupytext
    if text is None:
        return stable_ids(jupytext.read(chapter_path(name), fmt="py:percent"))
    return stable_ids(jupytext.reads(text, fmt="py:percent"))


def _signature(nb):
    return [(c.cell_type, c.source, tuple(tags(c))) for c in nb.cells]


def stale(name, text=None):
    """Sentences saying why the stored outputs do not match the chapter (empty when they do)."""
    import nbformat
    path = expected_path(name)
    stem = chapter_path(name).stem
    fix = f"Run `python -m exercises refresh-outputs {stem}` and commit {path.relative_to(ROOT)}."
    if not path.exists():
        return [f"{path.relative_to(ROOT)} does not exist. {fix}"]
    have, want = _signature(nbformat.read(path, as_version=4)), _signature(read_chapter(name, text))
    if have == want:
        return []
    first = next((i for i, (a, b) in enumerate(zip(have, want)) if a != b), min(len(have), len(want)))
    return [f"The stored outputs of {stem} were made from another version of the chapter "
            f"(first difference at cell {first}). {fix}"]


# ---------------------------------------------------------------------------
# Which version of a chapter the tests guard
# ---------------------------------------------------------------------------

def maintainer_mode():
    r"""True under ``PE_MAINTAINER=1`` or in CI (``CI`` set): the working copy is guarded as it is."""
    return any(os.environ.get(v, "").strip().lower() not in ("", "0", "false", "no") for v in ("PE_MAINTAINER", "CI"))


def committed_text(path, root=ROOT):
    r"""The file as committed in ``HEAD``, or None without git, outside a repository, or when untracked."""
    try:
        out = subprocess.run(["git", "-C", str(root), "show", f"HEAD:./{Path(path).resolve().relative_to(root)}"],
                             capture_output=True, timeout=30)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    return out.stdout.decode() if out.returncode == 0 else None


def choose_version(working, committed, strict, fresh):
    r"""Which text of a chapter to guard: ``(text or None, note or None)``.

    ``working``/``committed``: the file now and in ``HEAD`` (None without git); ``strict``: maintainer
    mode; ``fresh(text)``: whether the stored outputs match ``text``. None means "skip, see the note".
    """
    if strict or committed == working or fresh(working):  # fresh: an author's edit, its outputs refreshed
        return working, None
    if committed is not None:
        return committed, ("the chapter has edits that are not committed; the tests run and check the committed "
                           "version (set PE_MAINTAINER=1 to check your working copy instead).")
    if fresh(working):
        return working, None
    return None, ("the chapter differs from the version its stored outputs were made from, and there is no git "
                  "history to tell your edits from a stale file; set PE_MAINTAINER=1 to check it anyway.")


def guarded(name):
    r"""``(text or None, note or None)``: the version of the chapter the tests run (see the module docstring)."""
    path = chapter_path(name)
    working = path.read_text()
    return choose_version(working, committed_text(path), maintainer_mode(), lambda text: not stale(name, text))


# ---------------------------------------------------------------------------
# Stored outputs
# ---------------------------------------------------------------------------

def _tidy_outputs(cell):
    r"""Drop run-specific noise: timings, and one print split over several stream chunks."""
    cell.metadata.pop("execution", None)
    merged = []
    for out in cell.get("outputs", []):
        if "execution_count" in out:
            out["execution_count"] = None
        if merged and out.get("output_type") == "stream" and merged[-1].get("output_type") == "stream" \
                and merged[-1].get("name") == out.get("name"):
            merged[-1]["text"] = "".join(merged[-1]["text"]) + "".join(out["text"])
        else:
            merged.append(out)
    cell.outputs = merged


#: the environment a chapter runs in under the tests and ``refresh-outputs``: the reference stands in for every
#: exercise and plots go nowhere. No thread setting: a reader's kernel has none, and each chapter puts BLAS on one
#: thread itself, in view, in its first cell (``tuning.chapter_threads``).
RUN_SETTINGS = {"PE_USE_REFERENCE": "1", "MPLBACKEND": "Agg", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}


def refresh(name, timeout=600):
    """Execute the chapter (the working copy) and store the outputs of its ``nbval-check-output`` cells."""
    import nbformat
    from nbclient import NotebookClient
    nb = read_chapter(name)
    with unittest.mock.patch.dict(os.environ, RUN_SETTINGS):
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(CHAPTERS)}}).execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.execution_count = None
            if CHECK_TAG not in tags(cell):
                cell.outputs = []
            else:
                _tidy_outputs(cell)
    nb.metadata.pop("widgets", None)
    EXPECTED.mkdir(parents=True, exist_ok=True)
    path = expected_path(name)
    nbformat.write(nb, path)
    return path


def merged(name, text=None):
    """The chapter (or ``text``) as a notebook with the stored outputs of its checked cells merged in."""
    import nbformat
    nb = read_chapter(name, text)
    stored = nbformat.read(expected_path(name), as_version=4)
    for n, (cell, old) in enumerate(zip(nb.cells, stored.cells)):
        if cell.cell_type == "code" and CHECK_TAG in tags(cell):
            cell.outputs = copy.deepcopy(old.get("outputs", []))
            cell.execution_count = n + 1  # nbval refuses outputs on a cell marked as never run
    return nb


def for_students(nb):
    r"""``nb`` without answer and hint cells, outputs cleared, test tags and jupytext pairing dropped.

    nbconvert's ``TagRemovePreprocessor`` drops the cells tagged ``answer`` or ``hint`` and its
    ``ClearOutputPreprocessor`` clears the outputs; what is left of the tags is the reader's.
    """
    from nbconvert.preprocessors import ClearOutputPreprocessor, TagRemovePreprocessor
    nb, _ = TagRemovePreprocessor(remove_cell_tags=set(STUDENT_DROPS)).preprocess(copy.deepcopy(nb), {})
    nb, _ = ClearOutputPreprocessor().preprocess(nb, {})
    for cell in nb.cells:
        kept = [t for t in tags(cell) if not t.startswith("nbval")]
        if kept:
            cell.metadata["tags"] = kept
        else:
            cell.metadata.pop("tags", None)
    return stable_ids(nb)
