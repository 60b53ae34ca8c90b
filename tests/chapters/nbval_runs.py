r"""A chapter under nbval in a subprocess, as a job for the background threads (``tests/background.py``)."""
import hashlib
import sys
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import background  # noqa: E402

from exercises.grading import notebooks  # noqa: E402


def nbval(path, env, timeout=240):
    r"""``pytest --nbval-lax`` on the notebook at ``path``, in a subprocess: ``(CompletedProcess, seconds)``."""
    command = [sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env", "-q", "-p", "no:cacheprovider",
               "-o", "addopts=", "--rootdir", str(path.parent), str(path)]
    start = time.monotonic()
    out = background.run(command, env=dict(env, **notebooks.RUN_SETTINGS), cwd=str(path.parent), timeout=timeout)
    return out, time.monotonic() - start


def key(chapter, text):
    r"""The job's name: a chapter's run answers a test only if it ran the very text the test guards."""
    return f"nbval {chapter} {hashlib.sha256(text.encode()).hexdigest()}"


def job(chapter, text, env):
    r"""The chapter merged with its stored outputs now (in the calling thread); written and run by ``run()``."""
    notebook = notebooks.merged(chapter, text)

    def run():
        path = Path(background.folder(chapter)) / f"{chapter}.ipynb"
        nbformat.write(notebook, path)
        return nbval(path, env)
    return run
