r"""The README's first command opens JupyterLab at the repository root, with chapters as notebooks.

* JupyterLab serves the repository root (so ``exercises/`` is in reach and a chapter's
  ``../exercises/rope.py`` link resolves), and opens chapter 0 with its file browser at that root.
  JupyterLab puts its file browser in the folder of the file it opens, so the command names no file:
  its ``--LabApp.default_url`` opens ``/lab/tree/chapters/00_tiny_transformer.py?file-browser-path=/``,
  the chapter, and then the root in the file browser.
* ``.jupyter/lab/settings/overrides.json``, passed with ``--LabApp.app_settings_dir``, makes a
  ``.py`` file open in jupytext's notebook view; nothing is written to the user's configuration.
* Saving a chapter from JupyterLab (or its autosave) writes back the very text it read, once the
  kernel has put its kernelspec and ``language_info`` into the notebook's metadata: jupytext through
  the same contents manager as the server's, on a copy.

The server test starts the very command of the README (without the install, and without a
browser) on a free port, with a throwaway home folder, and asks the server what a browser would.
Checked by hand, not here (a browser on JupyterLab takes a minute and more): headless Chromium on the
page the command opens shows the repository's root in the file browser, ``exercises/`` in it.
"""
import difflib
import html
import json
import os
import platform
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.parse
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


def _opens(args):
    r"""The page the command opens: ``(path under /lab/tree/, query as a dict)`` of its ``--LabApp.default_url``."""
    urls = [a.split("=", 1)[1] for a in args if a.startswith("--LabApp.default_url=")]
    assert len(urls) == 1, f"the command names the page it opens once, with --LabApp.default_url: {args}"
    url = urllib.parse.urlsplit(urls[0])
    assert url.path.startswith("/lab/tree/"), url
    return url.path[len("/lab/tree/"):], urllib.parse.parse_qs(url.query)


def test_the_first_command_opens_chapter_0_with_the_file_browser_at_the_root():
    args = _lab_args()
    assert "--ServerApp.root_dir=." in args  # the repository is the server's root
    assert f"--LabApp.app_settings_dir={SETTINGS.parent.relative_to(ROOT)}" in args
    # a file named on the command line opens with the file browser in its folder (chapters/, no exercises/)
    assert not [a for a in args if not a.startswith("-")], f"a file argument: {args}"
    chapter, query = _opens(args)
    assert chapter == "chapters/00_tiny_transformer.py" and (ROOT / chapter).is_file()
    assert query == {"file-browser-path": ["/"]}  # then the file browser goes to the root
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


@pytest.mark.slow
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
        # the page a browser would open: chapter 0, then the repository's root in the file browser
        opened = [html.unescape(re.search(r'href="([^"]+)"', p.read_text()).group(1))
                  for p in (tmp_path / "runtime").glob("jpserver-*-open.html")]
        assert len(opened) == 1, opened
        url = urllib.parse.urlsplit(opened[0])
        assert url.path == "/lab/tree/chapters/00_tiny_transformer.py", opened
        assert urllib.parse.parse_qs(url.query)["file-browser-path"] == ["/"], opened
        root = _get(f"{base}/api/contents/?content=1&token={token}")
        assert {"chapters", "exercises"} <= {item["name"] for item in root["content"]}
        assert not (tmp_path / "config").exists() or not any((tmp_path / "config").rglob("*.json"))
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()


def _metadata_from_the_kernel():
    r"""What JupyterLab writes into an open notebook's metadata once its kernel starts: the kernelspec (name,
    display name and language of the installed ``python3``) and the kernel's ``language_info``."""
    from ipykernel.ipkernel import IPythonKernel
    from jupyter_client.kernelspec import KernelSpecManager
    spec = KernelSpecManager().get_kernel_spec("python3")
    return {"kernelspec": {"name": "python3", "display_name": spec.display_name, "language": spec.language},
            "language_info": dict(IPythonKernel.language_info, version=platform.python_version())}


@pytest.mark.parametrize("chapter", sorted((ROOT / "chapters").glob("[0-9]*.py")), ids=lambda p: p.stem)
def test_saving_a_chapter_from_jupyterlab_writes_back_its_text(chapter, tmp_path):
    r"""A chapter read as a notebook and saved by jupytext's contents manager, as JupyterLab saves it (autosave
    included) after the kernel set its metadata, is the same text: else the tab shows changes the reader did
    not make, and saving rewrites the chapter."""
    from jupyter_server.services.contents.largefilemanager import LargeFileManager
    try:
        from jupytext.sync_contentsmanager import build_sync_jupytext_contents_manager_class as build
    except ImportError:  # jupytext before 1.17
        from jupytext.contentsmanager import build_jupytext_contents_manager_class as build
    text = chapter.read_text()
    copy = tmp_path / "chapters" / chapter.name
    copy.parent.mkdir()
    copy.write_text(text)
    manager = build(LargeFileManager)(root_dir=str(tmp_path))
    model = manager.get(f"chapters/{chapter.name}", type="notebook")
    model["content"]["metadata"].update(_metadata_from_the_kernel())
    manager.save(model, f"chapters/{chapter.name}")
    saved = copy.read_text()
    assert saved == text, "\n".join(difflib.unified_diff(text.splitlines(), saved.splitlines(), lineterm="", n=0))
