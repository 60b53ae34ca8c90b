r"""``python -m book``: its refusals are sentences on stderr with exit code 1, before anything is built or written."""
import subprocess
import sys
from pathlib import Path

import pytest

from book.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("argv, sentence", [
    (["--out", str(ROOT)], f"--out {ROOT} would write the site over the workbook; give a folder of its own, e.g. site/."),
    (["--out", "{tmp}/site", "--chapters", "02_sinusoidal", "chapters/02_sinusoidal.py"],
     "chapters=['02_sinusoidal', 'chapters/02_sinusoidal.py'] names a chapter twice; give each chapter once."),
    (["--out", "{tmp}/site", "--chapters", "99_nope"], "No chapter '99_nope'; the chapters are: 00_tiny_transformer, "),
])
def test_a_refusal_is_one_sentence_and_exit_code_1(tmp_path, capsys, argv, sentence):
    argv = [a.format(tmp=tmp_path) for a in argv]
    assert main(argv + ["--work", str(tmp_path / "work")]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(sentence)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written: no site, no work folder


def test_a_folder_that_holds_other_files_is_refused(tmp_path, capsys):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "notes.txt").write_text("mine")
    assert main(["--out", str(tmp_path / "site")]) == 1
    assert capsys.readouterr().err == (f"--out {tmp_path / 'site'} holds files that are not a site built here; "
                                       "give an empty or new folder.\n")


def test_the_command_runs_as_a_module_and_nothing_in_exercises_imports_book():
    run = subprocess.run([sys.executable, "-m", "book", "--out", str(ROOT)], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert run.returncode == 1 and "would write the site over the workbook" in run.stderr
    assert "Traceback" not in run.stderr
    importers = [p for p in (ROOT / "exercises").rglob("*.py")
                 if "import book" in p.read_text() or "from book" in p.read_text()]
    assert importers == []
