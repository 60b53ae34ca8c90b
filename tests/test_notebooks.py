r"""Every chapter runs top to bottom as a notebook, and its deterministic cells print what they printed.

nbval collects only ``.ipynb`` files, so each percent-format ``chapters/NN_name.py`` is converted
with jupytext into a temporary notebook, the stored outputs of its ``nbval-check-output`` cells
(``chapters/expected_outputs/NN_name.ipynb``) are merged in, and ``pytest --nbval-lax`` runs it in
a subprocess: tagged cells must reproduce their stored output, all other cells must simply not
raise. Refresh stored outputs with ``python -m exercises refresh-outputs NN_name``.
"""
import os
import re
import subprocess
import sys
import time

import nbformat
import pytest

from exercises.grading import notebooks

CHAPTERS = notebooks.chapter_names()
BUDGET_S = 60  # a chapter must execute in under a minute on two cores


def _nbval(path, timeout=240):
    env = dict(os.environ, MPLBACKEND="Agg", PE_USE_REFERENCE="1", PYDEVD_DISABLE_FILE_VALIDATION="1")
    return subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env", "-q",
                           "-p", "no:cacheprovider", "-o", "addopts=", "--rootdir", str(path.parent), str(path)],
                          capture_output=True, text=True, env=env, timeout=timeout, cwd=str(path.parent))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_source_is_clean_percent_format(chapter):
    text = notebooks.chapter_path(chapter).read_text()
    header = text.split("# ---", 2)[1]
    assert "formats: py:percent" in header and "name: python3" in header
    cell_lines = [line for line in text.splitlines() if line.startswith("# %%")]
    assert cell_lines and not [line for line in cell_lines if "id=" in line]  # no editor cell ids
    nb = notebooks.read_chapter(chapter)
    assert any(notebooks.CHECK_TAG in notebooks.tags(c) for c in nb.cells), "no cell checks its output"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_stored_outputs_are_up_to_date(chapter):
    problems = notebooks.stale(chapter)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_under_nbval(chapter, tmp_path):
    if notebooks.stale(chapter):
        pytest.fail("stored outputs are out of date; see test_stored_outputs_are_up_to_date")
    path = tmp_path / f"{chapter}.ipynb"
    nbformat.write(notebooks.merged(chapter), path)
    start = time.monotonic()
    out = _nbval(path)
    seconds = time.monotonic() - start
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    assert re.search(r"\d+ passed", out.stdout)
    assert seconds < BUDGET_S, f"{chapter} took {seconds:.0f} s; keep chapters under {BUDGET_S} s"


def test_nbval_catches_a_changed_output(tmp_path):
    """The harness itself: a tagged cell whose output differs from the stored one fails."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cell = nbformat.v4.new_code_cell("print(6 * 7)", metadata={"tags": [notebooks.CHECK_TAG]})
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="41\n")]
    cell.execution_count = 1
    nb.cells = [cell, nbformat.v4.new_code_cell("print('anything goes here')")]
    path = tmp_path / "tampered.ipynb"
    nbformat.write(nb, path)
    out = _nbval(path)
    assert out.returncode != 0 and "41" in out.stdout and "42" in out.stdout
