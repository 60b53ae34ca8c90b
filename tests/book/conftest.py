r"""The site's two page-by-page browser checks, run beside the other tests where CI built the site.

Where ``PE_SITE_DIR`` names a built site (``.ci/run``) and Chromium is here, the one visit of every page that
``test_every_chapter_page_in_chromium`` and ``test_no_page_shows_unrendered_markup`` read
(``site_browser.visit``) is submitted to the background threads when collection ends (``tests/background.py``), and
the two tests move to the session's end. Without ``PE_SITE_DIR`` the site is built by the tests themselves, and
the visit runs when they ask for it.
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import background  # noqa: E402
import site_browser  # noqa: E402

from exercises.grading import notebooks  # noqa: E402


def _reads_the_visit(item):
    return item.path.name == "test_site.py" and "visited" in getattr(item, "fixturenames", ())


def _ahead():
    return bool(os.environ.get("PE_SITE_DIR")) and site_browser.browser_missing() is None


def pytest_collection_modifyitems(config, items):
    if _ahead():
        items[:] = [i for i in items if not _reads_the_visit(i)] + [i for i in items if _reads_the_visit(i)]


def pytest_collection_finish(session):
    first = background.first_use(session.items, _reads_the_visit)
    if first is None or not _ahead():
        return
    folder = Path(os.environ["PE_SITE_DIR"])
    if (folder / "index.html").is_file():   # else the test's own assertion says what is wrong
        chapters = notebooks.chapter_names()
        background.submit(f"site visit {folder.resolve()}", lambda: site_browser.visit(folder, chapters),
                          priority=first)
