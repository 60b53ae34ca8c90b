r"""Instructor tools, end to end through the commands: the student release and grading a class."""
import csv
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from exercises.grading import notebooks
from exercises.grading.generate import generated_text, region_labels
from exercises.grading.paths import SOLUTIONS

LABELS = region_labels((SOLUTIONS / "rope.py").read_text())   # {name: "Exercise 6.N"}
WAVE = LABELS["wavelength_table"]

ROOT = Path(__file__).resolve().parents[2]


def _run(*args, timeout=240):
    out = subprocess.run([sys.executable, "-m", "exercises", *args], capture_output=True, text=True, cwd=ROOT,
                         timeout=timeout)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


@pytest.mark.slow
def test_release_drops_answers_and_outputs(tmp_path):
    _run("release", "06_rope", "--out", str(tmp_path))
    nb = nbformat.read(tmp_path / "06_rope.ipynb", as_version=4)
    nbformat.validate(nb)
    full = notebooks.read_chapter("06_rope")
    answers = [c for c in full.cells if notebooks.ANSWER_TAG in notebooks.tags(c)]
    hints = [c for c in full.cells if notebooks.HINT_TAG in notebooks.tags(c)]
    assert len(answers) >= 13 and len(hints) >= 10   # ten references, three check-yourself answers; the hints
    assert len(nb.cells) == len(full.cells) - len(answers) - len(hints)
    text = "\n".join(c.source for c in nb.cells)
    assert "<details>" not in text and "reveal(" not in text.replace("import reveal", "")
    assert "Check yourself" in text and "Which is their\n# critical pair" not in text and "critical pair" in text
    assert "Hint 1" not in text
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)
    assert all(not any(t.startswith("nbval") for t in notebooks.tags(c)) for c in nb.cells)
    assert "jupytext" not in nb.metadata and nb.metadata["kernelspec"]["name"] == "python3"


def _student_with_a_misconception_and_a_hang():
    text = generated_text("rope")
    text = text.replace('    # TODO: Exercise 6.1\n    raise NotImplementedError("Exercise 6.1")\n',
                        "    h = x.shape[-1] // 2\n    return xp.concatenate([x[..., h:], -x[..., :h]], axis=-1)\n")
    return text.replace(f'    # TODO: {WAVE}\n    raise NotImplementedError("{WAVE}")\n',
                        "    while True:\n        pass\n")


@pytest.mark.slow
def test_grade_folder_one_row_per_student(tmp_path):
    class_dir = tmp_path / "submissions"
    (class_dir / "alice" / "exercises").mkdir(parents=True)
    (class_dir / "alice" / "exercises" / "rope.py").write_text((SOLUTIONS / "rope.py").read_text())
    (class_dir / "bob.py").write_text(_student_with_a_misconception_and_a_hang())
    report = tmp_path / "report"
    stdout = _run("grade-folder", str(class_dir), "--out", str(report), "--timeout", "5")
    assert "alice" in stdout and "bob" in stdout

    with open(tmp_path / "report.csv") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"alice", "bob"}
    columns = [c for c in rows["alice"] if c not in ("student", "passed", "total")]
    expected = sorted((f"{label.split()[-1]} {name}" for name, label in LABELS.items() if "." not in name),
                      key=lambda c: tuple(int(p) for p in c.split()[0].split(".")))
    assert columns == expected and columns[0] == "6.1 rotate_half"                     # in exercise order
    assert all(rows["alice"][c] == "pass" for c in columns) and rows["alice"]["passed"] == str(len(columns))
    assert rows["bob"]["6.1 rotate_half"] == "fail: misconception sign_error"
    wave = f"{WAVE.split()[-1]} wavelength_table"
    assert rows["bob"][wave] == "fail: timeout"
    assert {rows["bob"][c] for c in columns if c not in ("6.1 rotate_half", wave)} == {"not attempted"}
    assert rows["bob"]["passed"] == "0"

    data = json.loads((tmp_path / "report.json").read_text())
    bob = next(s for s in data["students"] if s["student"] == "bob")
    assert "rotate_half" in bob["results"]["6.1 rotate_half"]["message"]
    assert bob["results"][wave]["kind"] == "timeout"
