r"""The chapters under nbval, run beside the other tests (``tests/background.py``) and checked last.

Each selected ``test_chapter_runs_under_nbval[chapter]`` has its chapter submitted when collection ends: the
version the tests guard (``notebooks.guarded``) merged with its stored outputs in this process, then written
and run under nbval in a subprocess on the background threads. The tests themselves move to the end of the
session, so by the time they ask, most chapters have run while the main process ran everything else; each test
still makes every check it made when it ran its chapter itself (``chapter_under_nbval``).
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import background  # noqa: E402
from nbval_runs import job, key  # noqa: E402

from exercises.grading import notebooks  # noqa: E402

NBVAL_TEST = "test_chapter_runs_under_nbval"


@pytest.fixture
def chapter_under_nbval():
    r"""``run(chapter, text) -> (CompletedProcess, seconds)``: the background run of this very text, or one now."""
    def run(chapter, text):
        return background.result(key(chapter, text), job(chapter, text, background.snapshot()))
    return run


def _is_nbval_run(item):
    return item.path.name == "test_notebooks.py" and getattr(item, "originalname", None) == NBVAL_TEST


def pytest_collection_modifyitems(config, items):
    r"""The chapters' runs last, in their order: what they wait for ran beside everything before them."""
    items[:] = [i for i in items if not _is_nbval_run(i)] + [i for i in items if _is_nbval_run(i)]


def pytest_collection_finish(session):
    env = background.snapshot()
    for i, item in enumerate(session.items):
        if not _is_nbval_run(item):
            continue
        chapter = item.callspec.params["chapter"]
        text, _ = notebooks.guarded(chapter)
        if text is not None and not notebooks.stale(chapter, text):   # else the test skips or fails by itself
            background.submit(key(chapter, text), job(chapter, text, env), priority=i)
