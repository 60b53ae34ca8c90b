r"""The machinery around the exercises: the generator, the grade command, drills, and ``use``.

Each is driven the way a reader or an author drives it: through the command, with a fake clock
for the drills, on copies of the exercise file in temporary folders.
"""
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from exercises.grading import generate as gen
from exercises.grading.drill import drills
from exercises.grading.grader import format_results, grade_file, label_of, targets_of

DRILLS = drills()  # {name: Drill}, found in the module folders

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------

def test_every_region_becomes_the_one_stub_format():
    for module in gen.solution_modules():
        source = (gen.SOLUTIONS / f"{module}.py").read_text()
        stubbed = gen.stub_source(source)
        labels = [lab for lab, *_ in gen.regions(source)]
        assert labels, f"solutions/{module}.py has no solution regions"
        assert "SOLUTION" not in stubbed
        for label in set(labels):
            assert re.fullmatch(r"(Exercise \d+\.\d+|Drill [a-z0-9_]+\.\d+)", label), label
            assert stubbed.count(f"# TODO: {label}\n") == labels.count(label)
            assert stubbed.count(f'raise NotImplementedError("{label}")\n') == labels.count(label)


def test_exercise_numbers_follow_the_chapter():
    labels = [label_of(k) for k in targets_of("rope")]
    assert labels == [f"Exercise 6.{i}" for i in range(1, len(labels) + 1)] and len(labels) >= 9
    assert [k.split(".", 1)[1] for k in targets_of("rope")][:2] == ["rotate_half", "apply_rotary"]


def test_drift_ignores_your_code_but_not_the_interface():
    text = gen.generated_text("rope")
    assert gen.drift("rope", text) == []
    filled = text.replace('    # TODO: Exercise 6.1\n    raise NotImplementedError("Exercise 6.1")\n',
                          "    h = x.shape[-1] // 2\n    return xp.concatenate([-x[..., h:], x[..., :h]], axis=-1)\n")
    filled = filled.replace("from mini_transformer.engine.backend import xp\n",
                            "from mini_transformer.engine.backend import xp\nimport numpy as np\n")
    filled += "\n\ndef my_helper():\n    return 1\n"
    assert filled != text and gen.drift("rope", filled) == []
    renumbered = text.replace('raise NotImplementedError("Exercise 6.2")', 'raise NotImplementedError("Exercise 6.9")')
    assert any("stub of apply_rotary" in p for p in gen.drift("rope", renumbered))
    redoc = text.replace("Worked example:", "Example:")
    assert any("rotate_half" in p and "docstring" in p for p in gen.drift("rope", redoc))
    resigned = text.replace("def wavelength_table(d_head, base=10000.0):", "def wavelength_table(d_head, base=100.0):")
    assert any("wavelength_table" in p for p in gen.drift("rope", resigned))


def test_generate_never_overwrites_your_code(tmp_path, monkeypatch):
    monkeypatch.setattr(gen, "EXERCISES", tmp_path)
    assert "wrote exercises/rope.py" in gen.generate()  # one line per exercise module
    path = tmp_path / "rope.py"
    assert path.read_text() == gen.generated_text("rope")
    mine = path.read_text().replace('    # TODO: Exercise 6.6\n    raise NotImplementedError("Exercise 6.6")\n',
                                    "    return 2 * math.pi * base ** (2 * xp.arange(d_head // 2) / d_head)\n")
    path.write_text(mine)
    assert any("rope.py" in line and "not overwritten" in line for line in gen.generate()) and path.read_text() == mine
    assert gen.generate(check=True) == []  # your body is yours; the interface still matches
    gen.generate(force=True)
    assert path.read_text() == gen.generated_text("rope")


@pytest.mark.slow
def test_a_written_exercise_is_graded_for_real(tmp_path):
    """Fill two bodies of a copy of the stubs: each is graded on its own, the rest stay skipped."""
    text = gen.generated_text("rope")
    text = text.replace('    # TODO: Exercise 6.2\n    raise NotImplementedError("Exercise 6.2")\n',
                        "    return (x * cos + rotate_half(x) * sin).astype(x.dtype)\n")  # uses the 6.1 stub
    text = text.replace('    # TODO: Exercise 6.1\n    raise NotImplementedError("Exercise 6.1")\n',
                        "    h = x.shape[-1] // 2\n    return xp.concatenate([x[..., h:], -x[..., :h]], axis=-1)\n")
    path = tmp_path / "rope.py"
    path.write_text(text)
    by_label = {r["label"]: r for r in grade_file(path, "rope")}
    assert by_label["Exercise 6.1"]["kind"] == "misconception"
    assert by_label["Exercise 6.1"]["misconception"] == "sign_error"
    assert by_label["Exercise 6.2"]["status"] == "pass"  # graded with the reference rotate_half
    assert {by_label[f"Exercise 6.{i}"]["status"] for i in range(3, 9)} == {"not attempted"}


@pytest.mark.slow
def test_grade_command_reports_not_attempted():
    out = subprocess.run([sys.executable, "-m", "exercises", "grade", "rope", "--file",
                          str(gen.SOLUTIONS / "rope.py")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    n = len(targets_of("rope"))
    assert f"{n} of {n} pass." in out.stdout


# ---------------------------------------------------------------------------
# Drills, driven end to end through the command with a fake clock
# ---------------------------------------------------------------------------

def test_drills_match_the_source_table():
    assert {name: (d.names, d.minutes) for name, d in DRILLS.items()} == {
        "rope": (("rotate_half", "apply_rotary", "RotaryEmbedding"), 15),
        "sinusoidal": (("sinusoidal_positional_encoding",), 6),
        "alibi": (("alibi_slopes", "alibi_bias"), 8),
        "t5": (("relative_position_bucket",), 12),
        "today": (("mrope_position_ids", "proportional_inv_freq", "sink_attention"), 20),
    }


@pytest.mark.parametrize("name", sorted(DRILLS))
def test_blank_drill_file_has_only_signatures_and_docstrings(name):
    drill = DRILLS[name]
    text = gen.drill_text(drill.module, drill.names, name, drill.minutes)
    reference = (gen.SOLUTIONS / f"{drill.module}.py").read_text()
    body_lines = {line.strip() for _, first, last, _ in gen.regions(reference)
                  for line in reference.splitlines()[first + 1:last] if line.strip()}
    assert not body_lines & {line.strip() for line in text.splitlines()}  # no line of any solution
    for n in drill.names:
        assert re.search(rf"^(def|class) {n}\b", text, re.M)
    compile(text, f"{name}.py", "exec")


def _drill(args, env, check=True):
    out = subprocess.run([sys.executable, "-m", "exercises", "drill", *args], capture_output=True, text=True,
                         cwd=ROOT, env=env, timeout=120)
    if check:
        assert out.returncode == 0, out.stdout + out.stderr
    return out


@pytest.mark.slow
def test_drill_end_to_end(tmp_path):
    history = tmp_path / "history.json"
    env = dict(os.environ, PE_DRILL_DIR=str(tmp_path / "attempts"), PE_DRILL_HISTORY=str(history),
               MPLBACKEND="Agg")

    started = _drill(["rope"], dict(env, PE_DRILL_CLOCK="1000"))
    attempt = tmp_path / "attempts" / "rope.py"
    assert attempt.exists() and "Target 15:00" in started.stdout

    blank = _drill(["rope", "--grade"], dict(env, PE_DRILL_CLOCK="1300"), check=False)
    assert blank.returncode == 1 and blank.stdout.count("not attempted") == 3 and "5:00 so far" in blank.stdout

    attempt.write_text((gen.SOLUTIONS / "rope.py").read_text())  # a perfect retype
    done = _drill(["rope", "--grade"], dict(env, PE_DRILL_CLOCK=str(1000 + 12 * 60)))
    assert "passes in 12:00, under the target by 3:00" in done.stdout

    attempts = json.loads(history.read_text())["attempts"]
    assert [(a["passed"], a["elapsed_s"]) for a in attempts] == [(False, 300.0), (True, 720.0)]
    listing = _drill([], env).stdout.splitlines()
    assert "12:00" in next(line for line in listing if line.startswith("rope "))  # the listing shows the best time

    plotted = _drill(["--history", "rope"], env)
    png = tmp_path / "attempts" / "rope_history.png"
    assert str(png) in plotted.stdout and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    again = _drill(["rope", "--grade"], dict(env, PE_DRILL_CLOCK="5000"))  # the clock stopped at the pass
    assert "not running" in again.stdout and len(json.loads(history.read_text())["attempts"]) == 2


# ---------------------------------------------------------------------------
# The chapters' import helper
# ---------------------------------------------------------------------------

def test_use_picks_yours_when_written_and_the_reference_otherwise(tmp_path, monkeypatch, capsys):
    import numpy as np

    from exercises import use
    from solutions import rope as reference
    text = gen.generated_text("rope").replace(
        '    # TODO: Exercise 6.2\n    raise NotImplementedError("Exercise 6.2")\n',
        "    return (x * cos + rotate_half(x) * sin).astype(x.dtype)\n")  # calls the unwritten 6.1
    (tmp_path / "rope.py").write_text(text)
    import exercises
    monkeypatch.setattr(exercises, "__path__", [str(tmp_path)])  # exercises.rope is now the copy
    monkeypatch.delenv("PE_USE_REFERENCE", raising=False)
    saved = sys.modules.pop("exercises.rope", None)
    try:
        rotate_half, apply_rotary = use("rope", "rotate_half", "apply_rotary")
        RotaryEmbedding = use("rope", "RotaryEmbedding")  # a second call must not mistake patched stubs for yours
        mine = sys.modules["exercises.rope"]
        monkeypatch.setenv("PE_USE_REFERENCE", "1")
        forced = use("rope", "apply_rotary")
    finally:
        sys.modules.pop("exercises.rope", None)
        if saved is not None:
            sys.modules["exercises.rope"] = saved
    printed = capsys.readouterr().out
    assert mine.__file__ == str(tmp_path / "rope.py")
    assert rotate_half is reference.rotate_half and RotaryEmbedding is reference.RotaryEmbedding
    assert apply_rotary.__module__ == "exercises.rope" and apply_rotary.__code__.co_filename == mine.__file__
    assert re.search(r"apply_rotary\s+yours", printed) and re.search(r"RotaryEmbedding\s+reference", printed)
    cos, sin = RotaryEmbedding(4)(1, offset=1)
    assert np.allclose(apply_rotary(np.array([[1.0, 0.0, 0.0, 0.0]]), cos, sin)[0, [0, 2]], [math.cos(1), math.sin(1)])
    assert forced is reference.apply_rotary


# ---------------------------------------------------------------------------
# The reader's rough edges
# ---------------------------------------------------------------------------

def _broken_rope():
    """The generated rope.py with a colon missing on rotate_half's def line (line N of the file)."""
    text = gen.generated_text("rope").replace("def rotate_half(x):", "def rotate_half(x)", 1)
    line = next(n for n, s in enumerate(text.splitlines(), 1) if s == "def rotate_half(x)")
    return text, line


def test_a_file_that_does_not_import_is_reported_once_with_its_line(tmp_path):
    text, line = _broken_rope()
    path = tmp_path / "rope.py"
    path.write_text(text)
    results = grade_file(path, "rope")
    assert {r["kind"] for r in results} == {"import"} and len({r["message"] for r in results}) == 1
    report = format_results(results)
    assert report.count("does not import") == 1, report
    assert f"line {line}: def rotate_half(x)" in report and f"None of its {len(results)} exercises" in report
    assert "FAIL" not in report  # not eight (nine) separate failures


def test_use_says_the_file_does_not_import_not_that_nothing_is_written(tmp_path, monkeypatch, capsys):
    import exercises
    from exercises import use
    from solutions import rope as reference
    text, line = _broken_rope()
    (tmp_path / "rope.py").write_text(text)
    monkeypatch.setattr(exercises, "__path__", [str(tmp_path)])
    monkeypatch.delenv("PE_USE_REFERENCE", raising=False)
    saved = sys.modules.pop("exercises.rope", None)
    try:
        rotate_half, apply_rotary = use("rope", "rotate_half", "apply_rotary")
    finally:
        sys.modules.pop("exercises.rope", None)
        if saved is not None:
            sys.modules["exercises.rope"] = saved
    printed = capsys.readouterr().out
    assert printed.count("SyntaxError") == 1 and f"line {line}: def rotate_half(x)" in printed, printed
    assert "not written yet" not in printed
    assert re.search(r"apply_rotary\s+reference\s+\(exercises/rope.py does not import\)", printed), printed
    assert rotate_half is reference.rotate_half and apply_rotary is reference.apply_rotary


def test_restarting_a_drill_says_where_the_unfinished_attempt_went(tmp_path):
    env = dict(os.environ, PE_DRILL_DIR=str(tmp_path / "attempts"), PE_DRILL_HISTORY=str(tmp_path / "h.json"),
               PE_DRILL_CLOCK="1000")
    first = _drill(["alibi"], env)
    attempt = tmp_path / "attempts" / "alibi.py"
    assert "previous attempt" not in first.stdout
    attempt.write_text(attempt.read_text() + "\n# half an answer\n")
    second = _drill(["alibi"], env)
    previous = tmp_path / "attempts" / "alibi.previous.py"
    assert f"Your previous attempt was moved to {previous}" in second.stdout, second.stdout
    assert previous.read_text().endswith("# half an answer\n") and "half an answer" not in attempt.read_text()


def test_drill_history_plot_counts_attempts_in_whole_numbers():
    from exercises.grading.drill import history_figure
    runs = [{"elapsed_s": 700.0, "passed": False}, {"elapsed_s": 610.0, "passed": True}]  # matplotlib would say 1.25
    fig = history_figure(DRILLS["t5"], runs)
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks


@pytest.mark.slow
def test_grade_one_exercise_by_its_number():
    out = subprocess.run([sys.executable, "-m", "exercises", "grade", "rope", "--exercise", "6.2", "--file",
                          str(gen.SOLUTIONS / "rope.py")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "apply_rotary" in out.stdout and "rotate_half" not in out.stdout and "1 of 1 pass." in out.stdout
    bad = subprocess.run([sys.executable, "-m", "exercises", "grade", "rope", "--exercise", "9.9"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode != 0 and "no exercise 9.9 in rope" in bad.stderr
