r"""Every chapter runs top to bottom as a notebook, and its deterministic cells print what they printed.

The version of a chapter these tests guard is the committed one (``notebooks.guarded``): a reader's
scratch cell never fails them, while ``.ci/run`` (``PE_MAINTAINER=1``) and any CI (``CI`` set) check
the working copy exactly as it is.

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
import warnings
from pathlib import Path

import nbformat
import pytest

from nbval_runs import nbval
from exercises.grading import notebooks

CHAPTERS = notebooks.chapter_names()
ROOT = Path(__file__).resolve().parents[2]
BUDGET_S = 60  # a chapter must execute in under a minute on two cores


def _guarded(chapter):
    text, note = notebooks.guarded(chapter)
    if note:
        warnings.warn(f"{chapter}: {note}")
    if text is None:
        pytest.skip(note)
    return text


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_source_is_clean_percent_format(chapter):
    text = _guarded(chapter)
    header = text.split("# ---", 2)[1]
    assert "formats: py:percent" in header and "name: python3" in header
    cell_lines = [line for line in text.splitlines() if line.startswith("# %%")]
    assert cell_lines and not [line for line in cell_lines if "id=" in line]  # no editor cell ids
    nb = notebooks.read_chapter(chapter, text)
    assert any(notebooks.CHECK_TAG in notebooks.tags(c) for c in nb.cells), "no cell checks its output"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_stored_outputs_are_up_to_date(chapter):
    problems = notebooks.stale(chapter, _guarded(chapter))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_under_nbval(chapter, chapter_under_nbval):
    """Run beside the other tests from the end of collection, checked here at the session's end (conftest.py)."""
    text = _guarded(chapter)
    if notebooks.stale(chapter, text):
        pytest.fail("stored outputs are out of date; see test_stored_outputs_are_up_to_date")
    out, seconds = chapter_under_nbval(chapter, text)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    assert re.search(r"\d+ passed", out.stdout)
    assert seconds < BUDGET_S, f"{chapter} took {seconds:.0f} s; keep chapters under {BUDGET_S} s"


# ---------------------------------------------------------------------------
# Which version is guarded: a reader's edits never fail, a stale committed chapter always does
# ---------------------------------------------------------------------------

def _with_scratch_cell(text):
    return text + "\n# %%\nprint('my scratch cell')\n"


def test_a_readers_scratch_cell_is_not_their_test_failure():
    committed = _guarded(CHAPTERS[0])  # the version the tests guard, fresh unless the test above fails
    fresh = lambda text: not notebooks.stale(CHAPTERS[0], text)  # noqa: E731
    if not fresh(committed):
        pytest.skip("stored outputs are out of date; see test_stored_outputs_are_up_to_date")
    edited = _with_scratch_cell(committed)
    text, note = notebooks.choose_version(edited, committed, strict=False, fresh=fresh)
    assert text == committed and "not committed" in note
    text, note = notebooks.choose_version(edited, None, strict=False, fresh=fresh)  # no git history at all
    assert text is None and "PE_MAINTAINER=1" in note
    text, note = notebooks.choose_version(edited, committed, strict=True, fresh=fresh)  # maintainer or CI
    assert text == edited and note is None and notebooks.stale(CHAPTERS[0], text)
    assert "refresh-outputs" in notebooks.stale(CHAPTERS[0], text)[0]


def test_an_authors_refreshed_edit_is_what_runs():
    committed = "# %%\nprint(1)\n"
    edited = committed + "# %%\nprint(2)\n"
    text, note = notebooks.choose_version(edited, committed, strict=False, fresh=lambda t: t == edited)
    assert (text, note) == (edited, None)


def test_a_stale_committed_chapter_still_fails():
    committed = _with_scratch_cell(_guarded(CHAPTERS[0]))  # an edit committed without a refresh
    text, _ = notebooks.choose_version(committed, committed, strict=False, fresh=lambda t: False)
    assert text == committed and notebooks.stale(CHAPTERS[0], text)


def test_maintainer_mode_follows_the_environment(monkeypatch):
    for var in ("PE_MAINTAINER", "CI"):
        monkeypatch.delenv(var, raising=False)
    assert not notebooks.maintainer_mode()
    monkeypatch.setenv("CI", "true")
    assert notebooks.maintainer_mode()
    monkeypatch.setenv("CI", "0")
    monkeypatch.setenv("PE_MAINTAINER", "1")
    assert notebooks.maintainer_mode()


def test_ci_checks_the_working_copy():
    run = (ROOT / ".ci" / "run").read_text()
    assert "export PE_MAINTAINER=1" in run and run.index("export PE_MAINTAINER=1") < run.index("python -m pytest")


def test_the_committed_version_comes_from_git(tmp_path):
    if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
        pytest.skip("git is not installed")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    chapter = tmp_path / "chapters" / "01_x.py"
    chapter.parent.mkdir()
    chapter.write_text("# %%\nprint(1)\n")
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "c"], check=True)
    chapter.write_text("# %%\nprint(1)\n# %%\nprint('scratch')\n")
    assert notebooks.committed_text(chapter, root=tmp_path) == "# %%\nprint(1)\n"
    assert notebooks.committed_text(tmp_path / "chapters" / "untracked.py", root=tmp_path) is None


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
    out, _ = nbval(path, os.environ)
    assert out.returncode != 0 and "41" in out.stdout and "42" in out.stdout


# ---------------------------------------------------------------------------
# Threads: a chapter's kernel runs as the reader's does, its thread setup in view
# ---------------------------------------------------------------------------

THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def test_the_chapter_kernels_get_no_thread_setting_a_reader_lacks():
    """A reader's kernel has no OPENBLAS_NUM_THREADS; the tests' must not either, or a chapter that is slow for the
    reader on the default threads passes here (issue 36: 6 to 16 s here, up to 83 s as a reader ran it)."""
    assert not set(THREAD_VARIABLES) & set(notebooks.RUN_SETTINGS)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_a_chapter_that_runs_the_library_sets_its_threads_in_its_first_code_cell(chapter):
    """The one visible line (tuning.chapter_threads) that does what the tests' environment used to do unseen."""
    nb = notebooks.read_chapter(chapter, _guarded(chapter))
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    if not any("mini_transformer" in source for source in code):
        pytest.skip(f"{chapter} runs nothing of the library")
    assert re.search(r"^chapter_threads\(\)", code[0], re.MULTILINE), f"{chapter}'s first code cell: {code[0]}"
