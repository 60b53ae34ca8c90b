r"""Every command the README, the chapters and the instructor guide print still runs: ``--help`` of each.

A command is ``python -m MODULE`` and, where the next word is a plain word (not a flag, path or
placeholder), that word: ``python -m exercises grade rope`` is checked as ``python -m exercises grade
--help``. A module with subcommands refuses a subcommand it lacks (argparse exits 2), so a renamed or
dropped subcommand fails here; a module that does not exist fails to import. Third-party modules
(pytest, jupyter, pip, venv) are only looked up, not run. All the checks run in one process with
``runpy``, so the whole test costs one import of each module, not one interpreter each; the
environment a command would relaunch itself with (``BLAS_SPIN``) is set around each run.
"""
import contextlib
import importlib.util
import io
import os
import re
import runpy
import sys
import warnings
from pathlib import Path

import pytest

from mini_transformer.engine.kernels.tuning import BLAS_SPIN

ROOT = Path(__file__).resolve().parents[1]
#: where a reader, a student or an instructor reads commands
PRINTED = [ROOT / "README.md", ROOT / "chapters" / "README.md", ROOT / "chapters" / "TEACHING.md",
           *sorted((ROOT / "chapters").glob("[0-9][0-9]_*.py"))]
OURS = ("exercises", "mini_transformer", "experiments", "book", "solutions")
COMMAND = re.compile(r"python3? -m ([A-Za-z_][\w.]*)(?:[ \t]+([a-z][\w-]*)\b(?![./]))?")


def printed_commands(texts):
    """``{(module, word or None): first place printed}`` for every ``python -m`` in ``texts`` (``{name: text}``)."""
    found = {}
    for name, text in texts.items():
        for n, line in enumerate(text.splitlines(), 1):
            for m in COMMAND.finditer(line):
                module, word = m.group(1).rstrip("."), m.group(2)
                if any(part.isupper() for part in module.split(".")):   # a placeholder: experiments.NAME
                    continue
                found.setdefault((module, word), f"{name}:{n}")
    return found


def help_exit(module, word):
    """The exit code of ``python -m module [word] --help``, run in this process; output swallowed."""
    argv = [module] + ([word] if word else []) + ["--help"]
    saved, saved_env = sys.argv, dict(os.environ)
    sys.argv = argv
    # a command that relaunches itself with BLAS_SPIN set (tuning.relaunch_with_blas_spin) finds it set here
    os.environ.update({k: v for k, v in BLAS_SPIN.items() if k not in os.environ})
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)     # runpy: "found in sys.modules": imported earlier here
            runpy.run_module(module, run_name="__main__", alter_sys=False)
        return 0
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = saved
        os.environ.clear()
        os.environ.update(saved_env)


COMMANDS = printed_commands({p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in PRINTED})


def test_the_printed_commands_are_found():
    """The reader's two front doors and an experiment are among them: the pattern reads the files."""
    modules = {m for m, _ in COMMANDS}
    assert ("exercises", "grade") in COMMANDS and "pytest" in modules
    assert len(COMMANDS) >= 20, sorted(COMMANDS)


@pytest.mark.parametrize("module,word", sorted(COMMANDS, key=lambda c: (c[0], c[1] or "")),
                         ids=lambda x: x or "-")
def test_a_printed_command_runs(module, word):
    where = COMMANDS[(module, word)]
    if module.split(".")[0] not in OURS:
        assert importlib.util.find_spec(module.split(".")[0]) is not None, \
            f"{where} prints `python -m {module}`, which is not installed."
        return
    assert importlib.util.find_spec(module) is not None, f"{where} prints `python -m {module}`: no such module."
    code = help_exit(module, word)
    assert code == 0, f"{where} prints `python -m {module} {word or ''}`; its --help exited {code}."


def test_a_renamed_command_would_fail_here():
    """Positive controls: a subcommand the command line lacks, and a module that does not exist."""
    assert help_exit("exercises", "no-such-subcommand") == 2
    planted = printed_commands({"planted": "run `python -m exercises.no_such_module grade`"})
    assert planted == {("exercises.no_such_module", "grade"): "planted:1"}
    assert importlib.util.find_spec("exercises.no_such_module") is None
