r"""Start the experiments' quick runs that the selected tests read, beside the other tests (``quick_runs.py``)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import background  # noqa: E402
import quick_runs  # noqa: E402


def pytest_collection_finish(session):
    for name in quick_runs.QUICK:
        first = background.first_use(session.items, background.uses(name))
        if first is not None:
            background.submit(f"quick {name}", quick_runs.job(name, background.snapshot()), priority=first)
