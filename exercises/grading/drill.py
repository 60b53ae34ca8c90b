r"""Timed drills: retype a piece of the book from a blank file, against the clock.

    python -m exercises drill                 # list the drills, their targets and your best times
    python -m exercises drill rope            # write a blank file and start the clock
    python -m exercises drill rope --grade    # grade it, stop the clock, record the attempt
    python -m exercises drill --history rope  # plot your times to a PNG
    python -m exercises drill rope --torch    # the same drill in PyTorch (when it is installed)
    python -m exercises drill rope --grade --torch

The blank files go to ``exercises/drills/attempts/`` and the history to ``.drill_history.json``
at the repository root; both are git-ignored. A PyTorch drill (``language="torch"``) is the
same drill, with the same checks and misconceptions: its blank, ``<name>_torch.py``, has the
same signatures and docstrings with ``import torch`` (``generate.torch_drill_text``), and its
grading hands the code tensors and turns the tensors it returns back into arrays in the graded
process (``worker.torch_boundary``), so this process judges exactly what it judges in NumPy and
never imports torch. Its times are kept apart: each attempt in the history names its language. Override them with ``--attempts-dir`` and
``--history-file``, or with the environment variables ``PE_DRILL_DIR`` and
``PE_DRILL_HISTORY``. ``PE_DRILL_CLOCK`` (seconds since the epoch) stands in for the clock,
for tests.
"""
import dataclasses
import importlib.util
import json
import os
import re
import time
from pathlib import Path

from mini_transformer.engine.files import atomic_write
from exercises.grading.drill_target import Drill
from exercises.grading.errors import CommandError
from exercises.grading.generate import TORCH_MARKER, drill_text, torch_drill_text
from exercises.grading.grader import DEFAULT_TIMEOUT, format_results, grade_file
from exercises.grading.paths import ROOT


def drills():
    r"""``{name: Drill}`` of every module that has one, in the book's order: from its folder's ``checks.py``,
    or in a student copy (which has no checks) from its stored form."""
    from exercises.grading import modules, stored
    from exercises.grading.generate import labels_of
    found = {}
    for m in modules.names():
        d = modules.drill(m)
        if d is not None:
            found[m] = dataclasses.replace(d, module=m)
    for m in stored.modules():
        d = (stored.read(m) or {}).get("drill")
        if d and m not in found:
            found[m] = Drill(tuple(d["names"]), d["minutes"], m)

    def chapter(m):  # "Exercise 6.1" -> 6; a module of drills only comes after the chapters
        numbers = [int(lab.split()[-1].split(".")[0]) for lab in labels_of(m).values() if lab.startswith("Exercise ")]
        return (min(numbers) if numbers else float("inf"), m)
    return {m: found[m] for m in sorted(found, key=chapter)}


LANGUAGES = {"numpy": "NumPy", "torch": "PyTorch"}

INSTALL_TORCH = (
    "The PyTorch drills need PyTorch, which is not installed here (the workbook itself never needs it).\n"
    "Install the CPU wheel and run the command again:\n\n"
    "    pip install torch                                                       # macOS, Windows\n"
    "    pip install torch --index-url https://download.pytorch.org/whl/cpu      # Linux, CPU only\n\n"
    "The NumPy drills need nothing more: leave out --torch.")

# The grader's feedback names NumPy's idioms in a few places; in a PyTorch drill it names PyTorch's.
_TORCH_FEEDBACK = [(".astype(x.dtype)", ".to(x.dtype)"), ("xp.concatenate", "torch.cat"),
                   ("an array of the active backend (xp.ndarray)", "a torch.Tensor"),
                   ("; expected an array.", "; expected a torch.Tensor."), ("Build a new array", "Build a new tensor")]


def torch_available():
    r"""Whether ``import torch`` would work here, found without importing it (this process never does)."""
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # a broken or blocked install
        return False


def need_torch():
    r"""Refuse, saying how to install PyTorch, with exit code 2 when it is not installed."""
    if not torch_available():
        raise CommandError(INSTALL_TORCH, code=2)


def language_of(path):
    r"""``"torch"`` for a file that carries the PyTorch blank's marker line, else ``"numpy"``."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return "numpy"
    return "torch" if re.search(rf"^{re.escape(TORCH_MARKER)}\s*$", text, re.M) else "numpy"


def _stem(name, language):
    return name if language == "numpy" else f"{name}_{language}"


def _in(language):
    return "" if language == "numpy" else f" in {LANGUAGES[language]}"


def _flag(language):
    return "" if language == "numpy" else f" --{language}"


def attempts_dir(override=None):
    return Path(override or os.environ.get("PE_DRILL_DIR") or ROOT / "exercises" / "drills" / "attempts")


def history_path(override=None):
    return Path(override or os.environ.get("PE_DRILL_HISTORY") or ROOT / ".drill_history.json")


def now():
    """Seconds since the epoch; ``PE_DRILL_CLOCK`` replaces the real clock in tests."""
    fake = os.environ.get("PE_DRILL_CLOCK")
    return float(fake) if fake else time.time()


def _mmss(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def load_history(path):
    path = Path(path)
    if not path.exists():
        return []
    try:
        return json.loads(path.read_text())["attempts"]
    except (ValueError, KeyError) as e:
        raise CommandError(f"The drill history {path} is not valid JSON ({e}); move it aside and try again.")


def _runs(history, name, language):
    """The attempts at one drill in one language (an attempt recorded before languages were is NumPy)."""
    return [a for a in history if a["drill"] == name and a.get("language", "numpy") == language]


def best_time(history, name, language="numpy"):
    times = [a["elapsed_s"] for a in _runs(history, name, language) if a["passed"]]
    return min(times) if times else None


def _get(name):
    found = drills()
    if name not in found:
        raise CommandError(f"There is no drill called {name!r}. The drills are: {', '.join(found)}.")
    return found[name]


def start(name, attempts=None, history=None, language="numpy"):
    """Write the blank file and start the clock. Returns the text printed."""
    drill = _get(name)
    if language == "torch":
        need_torch()
    folder = attempts_dir(attempts)
    folder.mkdir(parents=True, exist_ok=True)
    stem = _stem(name, language)
    path = folder / f"{stem}.py"
    moved = ""
    if path.exists():  # never lose a half-finished attempt, and say where it went
        previous = folder / f"{stem}.previous.py"
        path.replace(previous)
        moved = (f"Your previous attempt was moved to {previous} (an older one there is replaced).\n")
    blank = torch_drill_text if language == "torch" else drill_text
    path.write_text(blank(drill.module, drill.names, name, drill.minutes))
    started = now()
    (folder / f"{stem}.clock.json").write_text(json.dumps({"drill": name, "language": language, "started": started}))
    best = best_time(load_history(history_path(history)), name, language)
    return (moved + f"Drill '{name}'{_in(language)}: write {', '.join(drill.names)} in\n    {path}\n"
            f"Target {_mmss(drill.minutes * 60)}. The clock is running"
            + (f"; your best{_in(language)} is {_mmss(best)}." if best is not None else ".")
            + f"\nWhen you are done: python -m exercises drill {name} --grade{_flag(language)}")


def grade(name, attempts=None, history=None, timeout=DEFAULT_TIMEOUT, language="numpy"):
    r"""Grade the attempt, report the time against the target, append to the history.

    ``language`` picks the attempt, ``<name>.py`` or ``<name>_torch.py`` (the PyTorch one when it is the only
    one there); a file with the PyTorch marker is graded in PyTorch whichever it is."""
    drill = _get(name)
    if language == "torch":
        need_torch()
    folder = attempts_dir(attempts)
    if language == "numpy" and not (folder / f"{name}.py").exists() and (folder / f"{name}_torch.py").exists():
        language = "torch"  # the one attempt there is in PyTorch
    stem = _stem(name, language)
    path = folder / f"{stem}.py"
    if not path.exists():
        raise CommandError(f"No attempt at {path}. Start one with: python -m exercises drill {name}{_flag(language)}")
    if language_of(path) == "torch":  # a PyTorch blank, whichever name it has
        language = "torch"
        need_torch()
    results = grade_file(path, drill.module, names=drill.names, timeout=timeout, language=language)
    passed = all(r["status"] == "pass" for r in results)
    report = format_results(results)
    for numpy_words, torch_words in (_TORCH_FEEDBACK if language == "torch" else []):
        report = report.replace(numpy_words, torch_words)
    lines = [report]
    clock = folder / f"{stem}.clock.json"
    if not clock.exists():
        lines.append("The clock is not running (this attempt was already graded as passing), so nothing is "
                     f"recorded. Start a new attempt with: python -m exercises drill {name}{_flag(language)}")
        return passed, "\n".join(lines)
    started = json.loads(clock.read_text())["started"]
    finished = now()
    elapsed = finished - started
    hist_file = history_path(history)
    hist = load_history(hist_file)
    previous_best = best_time(hist, name, language)
    hist.append({"drill": name, "language": language, "started": started, "finished": finished,
                 "elapsed_s": elapsed, "target_s": drill.minutes * 60, "passed": passed,
                 "results": {r["label"]: r["status"] if r["status"] != "fail" else f"fail: {r['kind']}"
                             for r in results}})
    text = json.dumps({"attempts": hist}, indent=1)
    atomic_write(hist_file, lambda f: f.write(text.encode()))  # never half a history
    target = drill.minutes * 60
    verdict = (f"under the target by {_mmss(target - elapsed)}" if elapsed <= target
               else f"over the target by {_mmss(elapsed - target)}")
    if passed:
        clock.unlink()  # the attempt is over
        best = best_time(hist, name, language)
        record = " A new best." if previous_best is None or elapsed < previous_best else ""
        lines.append(f"Drill '{name}'{_in(language)} passes in {_mmss(elapsed)}, {verdict} ({_mmss(target)})."
                     f"{record} Best{_in(language)}: {_mmss(best)}.")
    else:
        lines.append(f"Drill '{name}'{_in(language)} does not pass yet; {_mmss(elapsed)} so far ({verdict}). The "
                     f"clock keeps running: fix it and grade again.")
    return passed, "\n".join(lines)


def history_figure(drill, runs, language="numpy"):
    """The figure of a drill's attempts: minutes per attempt, passes and fails marked, the target line."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    n = list(range(1, len(runs) + 1))
    minutes = [a["elapsed_s"] / 60 for a in runs]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(n, minutes, color="0.7", zorder=1)
    ax.scatter([i for i, a in zip(n, runs) if a["passed"]],
               [m for m, a in zip(minutes, runs) if a["passed"]], label="passed", zorder=2)
    ax.scatter([i for i, a in zip(n, runs) if not a["passed"]],
               [m for m, a in zip(minutes, runs) if not a["passed"]], marker="x", color="C3",
               label="not passing yet", zorder=2)
    ax.axhline(drill.minutes, linestyle="--", color="k", linewidth=1, label=f"target {drill.minutes:g} min")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # attempt 1, 2, 3: never 1.5
    ax.set_xlabel("attempt")
    ax.set_ylabel("minutes")
    ax.set_title(f"Drill '{drill.name}'{_in(language)}")
    ax.legend(loc="best")
    fig.tight_layout()
    return fig


def plot_history(name, history=None, out=None, attempts=None, language="numpy"):
    """Plot the attempts at one drill (in one language) to a PNG; returns its path."""
    import matplotlib.pyplot as plt

    drill = _get(name)
    runs = _runs(load_history(history_path(history)), name, language)
    if not runs:
        raise CommandError(f"No recorded attempts at '{name}'{_in(language)} in {history_path(history)} yet.")
    out = Path(out) if out else attempts_dir(attempts) / f"{_stem(name, language)}_history.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig = history_figure(drill, runs, language)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def listing(history=None):
    r"""The drills, their targets, and the best times in NumPy and in PyTorch."""
    hist = load_history(history_path(history))
    lines = [f"{'drill':<12} {'target':>6}  {'best':>5}  {'PyTorch':>7}  writes"]
    for d in drills().values():
        best = [best_time(hist, d.name, language) for language in LANGUAGES]
        lines.append(f"{d.name:<12} {_mmss(d.minutes * 60):>6}  "
                     + "  ".join(f"{_mmss(b) if b is not None else '-':>{w}}" for b, w in zip(best, (5, 7)))
                     + f"  {', '.join(d.names)}")
    return "\n".join(lines)
