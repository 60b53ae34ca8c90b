r"""A student copy of the workbook, made and first used in subprocesses: a job for the background threads.

``job(env)`` returns the function that writes the copy (``python -m exercises release --repo``) into a new folder,
makes the student's Python for it (``student_python``: a virtual environment that sees this one's packages and
not this repository), and runs the copy's own exercise tests there, the slowest thing done in the copy:
``{"copy", "own_tests"}``. ``tests/grading/conftest.py`` submits it when a selected test asks for ``copy``;
``tests/grading/test_release.py`` checks the copy and works in it with ``in_copy``.
"""
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import background  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def student_paths(paths, root, prefixes):
    r"""The import folders of ``paths`` a student's environment keeps: every one outside the repository
    ``root``, and inside it only an installed environment's: a ``site-packages`` or ``dist-packages``
    folder, or anything under an environment's prefix (``prefixes``: ``sys.prefix`` and the like) that
    lies inside the repository, as the README's ``.venv`` does. The repository's own folders (``root``,
    ``solutions/``, ``exercises/``, ``tests/``) are dropped: from them ``solutions`` and the checks import.
    A prefix that is the repository or holds it keeps nothing extra, or it would keep the repository too.
    """
    root = Path(root).resolve()
    inside = [Path(p).resolve() for p in prefixes if root in Path(p).resolve().parents]

    def kept(p):
        where = Path(p).resolve()
        if root != where and root not in where.parents:
            return True
        return bool({"site-packages", "dist-packages"} & set(where.parts)) or any(
            e == where or e in where.parents for e in inside)
    return [p for p in paths if p and kept(p)]


def student_python(venv, import_paths=None):
    """A virtual environment that sees this one's packages but not this repository.

    The README's install puts the repository itself on every path (``pip install -e .``), so this
    interpreter would import ``solutions`` from here whatever the copy holds. The student's
    environment lists this one's import folders, less this repository's own (``student_paths``: a
    venv inside the repository, as the README suggests, keeps its packages), as plain paths: their
    packages import, and the ``.pth`` files in them (the editable install among them) never run.
    """
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        ours = student_import_paths() if import_paths is None else import_paths
        theirs = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                                capture_output=True, text=True, check=True).stdout.strip()
        Path(theirs, "workbook_dependencies.pth").write_text("\n".join(ours) + "\n")
    return python


def student_import_paths():
    r"""This process's import folders a student's environment keeps (``student_paths``), read now."""
    return student_paths([p for p in sys.path if p and os.path.isdir(p)], ROOT,
                         (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix))


def in_copy(copy, *args, timeout=240, env=None, run=subprocess.run):
    r"""``python *args`` as the student runs it in ``copy``: the student's Python, imports from the copy alone."""
    env = dict(os.environ if env is None else env, PYTHONPATH=str(copy), MPLBACKEND="Agg")
    env.pop("PE_USE_REFERENCE", None)
    env.pop("VIRTUAL_ENV", None)
    python = student_python(copy.parent / "venv")
    if run is subprocess.run:
        return run([str(python), *args], capture_output=True, text=True, cwd=copy, env=env, timeout=timeout)
    return run([str(python), *args], cwd=str(copy), env=env, timeout=timeout)


OWN_TESTS = ("-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/reader/test_exercises.py")


def job(env):
    r"""``run()``: the copy released into a new folder, its student Python made, its own exercise tests run:
    ``{"copy": Path, "own_tests": CompletedProcess}``. This process's import folders are read now."""
    import_paths = student_import_paths()

    def run():
        out = Path(background.folder("student")) / "workbook"
        done = background.run([sys.executable, "-m", "exercises", "release", "--repo", "--out", str(out)],
                              env=env, cwd=str(ROOT), timeout=240)
        assert done.returncode == 0, done.stdout + done.stderr
        student_python(out.parent / "venv", import_paths)
        return {"copy": out, "own_tests": in_copy(out, *OWN_TESTS, env=env, run=background.run)}
    return run
