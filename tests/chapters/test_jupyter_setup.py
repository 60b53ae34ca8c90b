r"""The README's first command opens JupyterLab at the repository root, with chapters as notebooks.

* JupyterLab serves the repository root (so ``exercises/`` is in the file browser and a chapter's
  ``../exercises/rope.py`` link resolves), and opens the chapter given on the command line.
* ``.jupyter/lab/settings/overrides.json``, passed with ``--LabApp.app_settings_dir``, makes a
  ``.py`` file open in jupytext's notebook view; nothing is written to the user's configuration.

The server test starts the very command of the README (without the install, and without a
browser) on a free port, with a throwaway home folder, and asks the server what a browser would.
"""
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / ".jupyter" / "lab" / "settings" / "overrides.json"


def _first_command():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    return block.splitlines()[0]


def _lab_args():
    """The arguments of `python -m jupyter lab ...` in the README's first line."""
    install, lab = _first_command().split(" && ")
    assert install == "python -m pip install -r requirements.txt"
    words = shlex.split(lab)
    assert words[:4] == ["python", "-m", "jupyter", "lab"], lab
    return words[4:]


def test_the_first_command_opens_the_repository_root_with_the_chapter_at_hand():
    args = _lab_args()
    assert "--ServerApp.root_dir=." in args  # a file argument would otherwise make its folder the root
    assert f"--LabApp.app_settings_dir={SETTINGS.parent.relative_to(ROOT)}" in args
    files = [a for a in args if not a.startswith("-")]
    assert files and all((ROOT / f).is_file() and f.startswith("chapters/") for f in files), files


def test_the_settings_make_python_files_open_as_notebooks():
    settings = json.loads(SETTINGS.read_text())
    assert settings["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"] == {"python": "Jupytext Notebook"}


@pytest.mark.parametrize("chapter", sorted((ROOT / "chapters").glob("[0-9]*.py")), ids=lambda p: p.stem)
def test_chapter_links_resolve_from_the_chapter(chapter):
    links = re.findall(r"\]\(([^)#\s]+)\)", chapter.read_text())
    local = [link for link in links if "://" not in link and not link.startswith("mailto:")]
    missing = [link for link in local if not (chapter.parent / link).exists()]
    assert not missing, f"{chapter.name} links to {missing}, which do not exist relative to chapters/"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def test_a_real_server_started_the_readme_way(tmp_path):
    pytest.importorskip("jupyterlab")
    pytest.importorskip("jupytext")
    port, token = _free_port(), "workbook-test"
    env = dict(os.environ, HOME=str(tmp_path), JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_PLATFORM_DIRS="1")
    command = [sys.executable, "-m", "jupyter", "lab", *_lab_args(), "--no-browser", f"--ServerApp.port={port}",
               f"--IdentityProvider.token={token}", "--ServerApp.port_retries=0"]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                _get(f"{base}/api/status?token={token}")
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("JupyterLab did not start:\n" + server.stderr.read().decode()[-3000:])
                time.sleep(0.3)
        viewers = _get(f"{base}/lab/api/settings/@jupyterlab/docmanager-extension:plugin?token={token}")
        assert viewers["schema"]["properties"]["defaultViewers"]["default"]["python"] == "Jupytext Notebook"
        chapter = _get(f"{base}/api/contents/chapters/06_rope.py?type=notebook&token={token}")
        assert chapter["type"] == "notebook" and chapter["content"]["cells"]  # jupytext reads it as a notebook
        exercise = _get(f"{base}/api/contents/exercises/rope.py?content=0&token={token}")
        assert exercise["path"] == "exercises/rope.py"  # the root is the repository, exercises/ is in reach
        opened = (tmp_path / "runtime").glob("jpserver-file-to-run-*-open.html")
        assert any("/lab/tree/chapters/" in p.read_text() for p in opened)  # the browser would open the chapter
        assert not (tmp_path / "config").exists() or not any((tmp_path / "config").rglob("*.json"))
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
