r"""The Gradescope bundle, run as root as Gradescope runs it: the student's code runs as an unprivileged user.

Where the suite runs as root, the test creates a throwaway user (and removes it afterwards), writes the
bundle into a folder that user may traverse, with an interpreter it may run (the system's Python, with a
copy of this environment's NumPy), and grades one submission through ``run_autograder``. The submission's
2.1 is right only when its process is not root; its 2.2 floods the output and then answers right; its 3.1
ends its own process (os._exit); its 3.2 never returns. Hand count (one point a star): 2.1 ★ 1 + 2.2 ★★ 2 = 3 of 12,
and a complete ``results.json`` with its six tests. Then, as that user, the answers cannot be read.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from exercises.grading import gradescope
from exercises.grading.errors import CommandError
from exercises.grading.modules.exercise_text import reference_body

sys.path.insert(0, str(Path(__file__).resolve().parent))
import course_class  # noqa: E402
from test_course import validate_gradescope  # noqa: E402

SYSTEM_PYTHON = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")


def _why_not():
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "needs root: Gradescope runs the autograder as root, and only root can run code as another user"
    if not shutil.which("useradd") or not shutil.which("userdel"):
        return "needs useradd and userdel to create and remove the unprivileged user"
    if not SYSTEM_PYTHON.is_file():
        return f"needs {SYSTEM_PYTHON} (an interpreter outside root's home that the unprivileged user may run)"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")

_UID = """import os
if os.getuid() == 0:
    return xp.zeros((T, d_model))  # only code running as root gets this wrong
"""
_FLOOD = """for _ in range(40):
    print("x" * 1_000_000)  # 40 MB of output
"""


def _submission(folder):
    sin = course_class.partly("sinusoidal", set(), bodies={
        "2.1": _UID + reference_body("sinusoidal", "Exercise 2.1"),
        "2.2": _FLOOD + reference_body("sinusoidal", "Exercise 2.2")})
    learned = course_class.partly("learned", set(), loops={"3.2"}, bodies={
        "3.1": "import os\nos._exit(3)  # the process ends under the grader"})
    for name, text in (("sinusoidal", sin), ("learned", learned)):
        (folder / "exercises").mkdir(parents=True, exist_ok=True)
        (folder / "exercises" / f"{name}.py").write_text(text)


@pytest.fixture(scope="module")
def unprivileged():
    r"""``(user, base folder, python)``: a throwaway user, a folder it may traverse, an interpreter it may run."""
    import numpy
    user = f"pe_gs_{uuid.uuid4().hex[:8]}"
    base = Path(tempfile.mkdtemp(prefix="pe-gs-", dir="/tmp"))
    base.chmod(0o755)
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user], check=True)
    try:
        site = Path(numpy.__file__).resolve().parents[1]
        for name in ("numpy", "numpy.libs"):
            if (site / name).is_dir():
                shutil.copytree(site / name, base / "deps" / name)
        subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(base / "venv")], check=True,
                       timeout=120)
        packages = subprocess.run([str(base / "venv" / "bin" / "python"), "-c",
                                   "import site; print(site.getsitepackages()[0])"],
                                  capture_output=True, text=True, check=True).stdout.strip()
        Path(packages, "deps.pth").write_text(str(base / "deps") + "\n")
        for p in [base, *base.rglob("*")]:  # readable by everyone, as an image's system Python would be
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | 0o444 | (0o111 if p.is_dir() else 0))
        yield user, base, base / "venv" / "bin" / "python"
    finally:
        subprocess.run(["userdel", user], check=False)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
def test_run_autograder_as_root_runs_student_code_unprivileged(unprivileged):
    user, base, python = unprivileged
    bundle = gradescope.bundle(base / "autograder", course_class.MODULES, timeout=3)
    root = base / "ag"
    (root / "source").mkdir(parents=True)
    shutil.copytree(bundle / "workbook", root / "source" / "workbook")
    _submission(root / "submission")
    for p in [root, *root.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o444 | (0o111 if p.is_dir() else 0))
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=str(python), AUTOGRADER_USER=user)
    env.pop("PYTHONPATH", None)
    out = subprocess.run(["bash", str(bundle / "run_autograder")], capture_output=True, text=True, env=env,
                         cwd=str(root), timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    data = json.loads((root / "results" / "results.json").read_text())
    assert validate_gradescope(data)
    tests = {t["name"]: t for t in data["tests"]}
    assert len(tests) == 6 and sum(t["max_score"] for t in tests.values()) == course_class.OUT_OF
    assert tests["2.1 sinusoidal_positional_encoding"]["score"] == 1  # it ran as a user other than root
    assert tests["2.2 shift_rotation"]["score"] == 2 and "printed" in tests["2.2 shift_rotation"]["output"]
    assert tests["3.1 position_rows"]["score"] == 0 and "crashed" in tests["3.1 position_rows"]["output"]
    assert tests["3.2 cached_decode"]["score"] == 0 and "timeout" in tests["3.2 cached_decode"]["output"]
    assert data["score"] == 3

    # what the student's code could have read: nothing of the answers, the checks or the held-out cases
    workbook = root / "source" / "workbook"
    for secret in (workbook / "solutions" / "sinusoidal.py",
                   workbook / "exercises" / "grading" / "modules" / "sinusoidal" / "checks.py"):
        tried = subprocess.run([str(python), "-c", f"open({str(secret)!r}).read()"], user=user, capture_output=True,
                               text=True, cwd="/", timeout=60)
        assert tried.returncode != 0 and "PermissionError" in tried.stderr, (secret, tried.stderr)
    shipped = workbook / "exercises" / "grading" / "modules" / "sinusoidal" / "mutants.py"
    tried = subprocess.run([str(python), "-c", f"open({str(shipped)!r}).read()"], user=user, capture_output=True,
                           text=True, cwd="/", timeout=60)
    assert tried.returncode == 0, tried.stderr  # the control: what a student copy holds stays readable
    assert (root / "results" / "results.json").stat().st_uid == 0


def test_run_as_refuses_root_and_unknown_users(monkeypatch):
    with pytest.raises(CommandError, match="that user is root"):
        gradescope.run_as("root")
    with pytest.raises(CommandError, match="no such user"):
        gradescope.run_as(f"nobody_{uuid.uuid4().hex[:8]}")
