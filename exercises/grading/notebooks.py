r"""Chapters as notebooks: conversion, stored outputs, and the student release.

A chapter is a percent-format ``chapters/NN_name.py``. Cells tagged ``nbval-check-output``
print something deterministic; their outputs are kept in ``chapters/expected_outputs/NN_name.ipynb``
(every other output is left out, so the file stays small and diffable), and
``tests/test_notebooks.py`` runs the chapter under ``pytest --nbval-lax`` with those outputs
merged in: tagged cells must reproduce them, every other cell must merely run.

``python -m exercises refresh-outputs NN_name`` executes the chapter and rewrites its stored
outputs; a test fails while they are out of date with the ``.py``.

Cells tagged ``answer`` (reference solutions, the answers of "Check yourself") are dropped
by ``python -m exercises release``.
"""
import copy
import os
from pathlib import Path

from exercises.grading.paths import CHAPTERS, ROOT
from exercises.grading.saved import saved


EXPECTED = CHAPTERS / "expected_outputs"
CHECK_TAG = "nbval-check-output"
ANSWER_TAG = "answer"


def chapter_names():
    return sorted(p.stem for p in CHAPTERS.glob("[0-9]*.py"))


def chapter_path(name):
    """``06_rope``, ``06_rope.py`` or ``chapters/06_rope.py`` -> the .py path."""
    p = Path(name)
    for candidate in (p, ROOT / p, CHAPTERS / p.name, CHAPTERS / f"{p.name}.py"):
        if candidate.suffix == ".py" and candidate.is_file():
            return candidate.resolve()
    raise SystemExit(f"No chapter {name!r}; the chapters are: {', '.join(chapter_names())}.")


def expected_path(name):
    return EXPECTED / f"{chapter_path(name).stem}.ipynb"


def tags(cell):
    return list(cell.get("metadata", {}).get("tags", []))


def _stable_ids(nb):
    nb.nbformat, nb.nbformat_minor = 4, 5
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:03d}"
    return nb


def read_chapter(name):
    """The chapter as a notebook, no outputs, deterministic cell ids."""
    import jupytext
    return _stable_ids(jupytext.read(chapter_path(name), fmt="py:percent"))


def _signature(nb):
    return [(c.cell_type, c.source, tuple(tags(c))) for c in nb.cells]


def stale(name):
    """Sentences saying why the stored outputs do not match the chapter (empty when they do)."""
    import nbformat
    path = expected_path(name)
    stem = chapter_path(name).stem
    fix = f"Run `python -m exercises refresh-outputs {stem}` and commit {path.relative_to(ROOT)}."
    if not path.exists():
        return [f"{path.relative_to(ROOT)} does not exist. {fix}"]
    have, want = _signature(nbformat.read(path, as_version=4)), _signature(read_chapter(name))
    if have == want:
        return []
    first = next((i for i, (a, b) in enumerate(zip(have, want)) if a != b), min(len(have), len(want)))
    return [f"The stored outputs of {stem} were made from an older version of the chapter "
            f"(first difference at cell {first}). {fix}"]


def refresh(name, timeout=600):
    """Execute the chapter and store the outputs of its ``nbval-check-output`` cells."""
    import nbformat
    from nbclient import NotebookClient
    nb = read_chapter(name)
    settings = {"PE_USE_REFERENCE": "1", "MPLBACKEND": "Agg", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    with saved(os.environ, settings):
        os.environ.update(settings)
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(CHAPTERS)}}).execute()
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.execution_count = None
            if CHECK_TAG not in tags(cell):
                cell.outputs = []
            else:
                for out in cell.outputs:
                    if "execution_count" in out:
                        out["execution_count"] = None
    nb.metadata.pop("widgets", None)
    EXPECTED.mkdir(parents=True, exist_ok=True)
    path = expected_path(name)
    nbformat.write(nb, path)
    return path


def merged(name):
    """The chapter as a notebook with the stored outputs of its checked cells merged in."""
    import nbformat
    nb = read_chapter(name)
    stored = nbformat.read(expected_path(name), as_version=4)
    for n, (cell, old) in enumerate(zip(nb.cells, stored.cells)):
        if cell.cell_type == "code" and CHECK_TAG in tags(cell):
            cell.outputs = copy.deepcopy(old.get("outputs", []))
            cell.execution_count = n + 1  # nbval refuses outputs on a cell marked as never run
    return nb


def release(name, out_dir):
    r"""The student notebook: answer cells removed, outputs cleared, test tags and jupytext pairing dropped."""
    import nbformat
    nb = read_chapter(name)
    nb.cells = [c for c in nb.cells if ANSWER_TAG not in tags(c)]
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        kept = [t for t in tags(cell) if not t.startswith("nbval")]
        if kept:
            cell.metadata["tags"] = kept
        else:
            cell.metadata.pop("tags", None)
    nb.metadata.pop("jupytext", None)  # a student's Jupyter must not pair it with a .py
    _stable_ids(nb)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{chapter_path(name).stem}.ipynb"
    nbformat.write(nb, path)
    return path
