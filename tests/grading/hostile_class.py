r"""A class you cannot trust, written and graded in a subprocess: a job for the background threads.

``job(env)`` returns the function that writes the class folder (``write_class``: one correct student, one who
wrote nothing, one student per kind of attack, and two files outside the submissions), grades it with
``grade_folder`` in a fresh Python whose environment holds a secret (``PE_TEST_SECRET``) no submission may read,
and returns what ``tests/grading/test_sandbox.py`` checks. ``tests/grading/conftest.py`` submits it when a
selected test asks for ``hostile_graded``.
"""
import hashlib
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import background  # noqa: E402

from exercises.grading.generate import generated_text, region_labels  # noqa: E402
from exercises.grading.paths import GRADING, SOLUTIONS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 3.0
CORRECT = (SOLUTIONS / "rope.py").read_text()


LABELS = region_labels(CORRECT)  # {name: "Exercise 6.N"}: the numbers come from solutions/ alone


def _correct_with(top="", **bodies):
    r"""The reference's file with code added at the top and some exercises' bodies (by name) prefixed."""
    text = CORRECT.replace("import math\n", "import math\nimport os\nimport sys\n" + top + "\n", 1)
    for name, extra in bodies.items():
        marker = f"# BEGIN SOLUTION {LABELS[name]}\n"
        start = text.index(marker)
        indent = text[text.rindex("\n", 0, start) + 1:start]
        text = text.replace(marker, marker + "".join(f"{indent}{line}\n" for line in extra.strip().splitlines()), 1)
    return text


def write_class(root):
    r"""The class folder ``root / "class"`` and the two files outside it; ``(class folder, outside, keep)``."""
    outside, keep = root / "outside.txt", root / "keep.txt"
    outside.write_text("the teacher's notes\n")
    keep.write_text("another file\n")
    class_dir = root / "class"
    (class_dir / "alice" / "exercises").mkdir(parents=True)
    (class_dir / "alice" / "exercises" / "rope.py").write_text(CORRECT)
    (class_dir / "bob.py").write_text(generated_text("rope"))
    students = {
        # deletes a file outside its folder at import time, and carries on when refused
        "vandal": _correct_with(top=f"try:\n    os.remove({str(outside)!r})\nexcept OSError:\n    pass\n"),
        # writes outside its folder from one exercise only
        "scribbler": _correct_with(**{"rotate_half": f"open({str(keep)!r}, 'w').write('overwritten')"}),
        # imports the reference
        "copier": "from solutions.rope import *  # noqa\n",
        # forks without end in one exercise, allocates without end in another
        "forker": _correct_with(**{"rotate_half": "while True:\n    os.fork()"}),
        "hog": _correct_with(**{"apply_rotary": "hoard = []\nwhile True:\n    hoard.append(xp.empty(1 << 24))"}),
        # prints tens of megabytes, then answers correctly
        "chatterbox": _correct_with(**{"rotate_half": "print('x' * (20 << 20))"}),
        # never returns
        "sleeper": _correct_with(**{"RotaryEmbedding": "while True:\n    pass"}),
        # patches the grader in memory, forges the grader's protocol, and reads the environment
        "patcher": _correct_with(top="""
import numpy
numpy.allclose = numpy.array_equal = lambda *a, **k: True
for name, module in list(sys.modules.items()):
    if name.startswith("exercises.grading") or name == "__main__":
        for attr in ("judge", "run_cases", "describe", "encode", "decode"):
            if hasattr(module, attr):
                setattr(module, attr, lambda *a, **k: {"found": "function", "stubs": {}, "signatures": {}})
""", **{"wavelength_table": """
import json
for fd in range(3, 30):
    for index in range(12):
        try:
            os.write(fd, (json.dumps({"event": "result", "index": index, "report": {"found": "function"}}) + "\\n").encode())
        except OSError:
            pass
raise RuntimeError('secret: ' + os.environ.get('PE_TEST_SECRET', 'none here'))"""}),
        # edits the grader's own files on disk
        "tamperer": _correct_with(top="""
try:
    open(os.path.join(os.path.dirname(sys.modules["exercises.grading.wire"].__file__), "judging.py"), "a").write("#")
except OSError:
    pass
"""),
    }
    for name, text in students.items():
        (class_dir / f"{name}.py").write_text(text)
    (class_dir / "liar").mkdir()
    os.symlink(SOLUTIONS / "rope.py", class_dir / "liar" / "rope.py")  # hands in a link to the reference
    return class_dir, outside, keep


GRADE = ("import json, sys\n"
         "from exercises.grading.instructor import grade_folder\n"
         "from exercises.grading.sandbox import Limits\n"
         "a = json.loads(sys.argv[1])\n"
         "report = grade_folder(a['folder'], a['out'], timeout=a['timeout'], limits=Limits(memory_mb=a['memory_mb']))\n"
         "with open(a['record'], 'w') as f:\n"
         "    json.dump(report, f)\n")


def job(env):
    r"""``run()``: the class written in a new folder and graded with small limits, the grader's environment holding
    the secret; ``{"report", "root", "outside", "keep", "judging_unchanged"}``."""
    env = dict(env, PE_TEST_SECRET="the grader's token")

    def run():
        root = Path(background.folder("hostile"))
        class_dir, outside, keep = write_class(root)
        judging = GRADING / "judging.py"
        before = hashlib.sha256(judging.read_bytes()).hexdigest()
        args = {"folder": str(class_dir), "out": str(root / "report"), "timeout": TIMEOUT, "memory_mb": 600,
                "record": str(root / "returned.json")}
        done = background.run([sys.executable, "-c", GRADE, json.dumps(args)], env=env, cwd=str(ROOT), timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return {"report": json.loads((root / "returned.json").read_text()), "root": root, "outside": outside,
                "keep": keep, "judging_unchanged": hashlib.sha256(judging.read_bytes()).hexdigest() == before}
    return run
