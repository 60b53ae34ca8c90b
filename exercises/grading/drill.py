r"""Timed drills: retype a piece of the book from a blank file, against the clock.

    python -m exercises drill                 # list the drills, their targets and your best times
    python -m exercises drill rope            # write a blank file and start the clock
    python -m exercises drill rope --grade    # grade it, stop the clock, record the attempt
    python -m exercises drill --history rope  # plot your times to a PNG

The blank files go to ``exercises/drills/attempts/`` and the history to ``.drill_history.json``
at the repository root; both are git-ignored. Override them with ``--attempts-dir`` and
``--history-file``, or with the environment variables ``PE_DRILL_DIR`` and
``PE_DRILL_HISTORY``. ``PE_DRILL_CLOCK`` (seconds since the epoch) stands in for the clock,
for tests.
"""
import dataclasses
import json
import os
import time
from pathlib import Path

from mini_transformer.model.checkpoint import atomic_write
from exercises.grading.generate import drill_text
from exercises.grading.grader import DEFAULT_TIMEOUT, format_results, grade_file
from exercises.grading.paths import ROOT


@dataclasses.dataclass(frozen=True)
class Drill:
    r"""A module's drill, the ``DRILL`` of its ``modules/<module>/checks.py``; its name is the module's."""
    names: tuple  # the functions and classes you write
    minutes: float  # the target time, from the source chapter's "Retype by hand" table
    module: str = ""  # the solutions module it is cut from: filled in from the folder it is found in

    @property
    def name(self):
        """What you type after `drill`: the module's name."""
        return self.module


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
        raise SystemExit(f"The drill history {path} is not valid JSON ({e}); move it aside and try again.")


def best_time(history, name):
    times = [a["elapsed_s"] for a in history if a["drill"] == name and a["passed"]]
    return min(times) if times else None


def _get(name):
    found = drills()
    if name not in found:
        raise SystemExit(f"There is no drill called {name!r}. The drills are: {', '.join(found)}.")
    return found[name]


def start(name, attempts=None, history=None):
    """Write the blank file and start the clock. Returns the text printed."""
    drill = _get(name)
    folder = attempts_dir(attempts)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    moved = ""
    if path.exists():  # never lose a half-finished attempt, and say where it went
        previous = folder / f"{name}.previous.py"
        path.replace(previous)
        moved = (f"Your previous attempt was moved to {previous} (an older one there is replaced).\n")
    path.write_text(drill_text(drill.module, drill.names, name, drill.minutes))
    started = now()
    (folder / f"{name}.clock.json").write_text(json.dumps({"drill": name, "started": started}))
    best = best_time(load_history(history_path(history)), name)
    return (moved + f"Drill '{name}': write {', '.join(drill.names)} in\n    {path}\n"
            f"Target {_mmss(drill.minutes * 60)}. The clock is running"
            + (f"; your best is {_mmss(best)}." if best is not None else ".")
            + f"\nWhen you are done: python -m exercises drill {name} --grade")


def grade(name, attempts=None, history=None, timeout=DEFAULT_TIMEOUT):
    """Grade the attempt, report the time against the target, append to the history."""
    drill = _get(name)
    folder = attempts_dir(attempts)
    path = folder / f"{name}.py"
    if not path.exists():
        raise SystemExit(f"No attempt at {path}. Start one with: python -m exercises drill {name}")
    results = grade_file(path, drill.module, names=drill.names, timeout=timeout)
    passed = all(r["status"] == "pass" for r in results)
    lines = [format_results(results)]
    clock = folder / f"{name}.clock.json"
    if not clock.exists():
        lines.append("The clock is not running (this attempt was already graded as passing), so nothing is "
                     f"recorded. Start a new attempt with: python -m exercises drill {name}")
        return passed, "\n".join(lines)
    started = json.loads(clock.read_text())["started"]
    finished = now()
    elapsed = finished - started
    hist_file = history_path(history)
    hist = load_history(hist_file)
    previous_best = best_time(hist, name)
    hist.append({"drill": name, "started": started, "finished": finished, "elapsed_s": elapsed,
                 "target_s": drill.minutes * 60, "passed": passed,
                 "results": {r["label"]: r["status"] if r["status"] != "fail" else f"fail: {r['kind']}"
                             for r in results}})
    text = json.dumps({"attempts": hist}, indent=1)
    atomic_write(hist_file, lambda f: f.write(text.encode()))  # never half a history
    target = drill.minutes * 60
    verdict = (f"under the target by {_mmss(target - elapsed)}" if elapsed <= target
               else f"over the target by {_mmss(elapsed - target)}")
    if passed:
        clock.unlink()  # the attempt is over
        best = best_time(hist, name)
        record = " A new best." if previous_best is None or elapsed < previous_best else ""
        lines.append(f"Drill '{name}' passes in {_mmss(elapsed)}, {verdict} ({_mmss(target)}).{record} "
                     f"Best: {_mmss(best)}.")
    else:
        lines.append(f"Drill '{name}' does not pass yet; {_mmss(elapsed)} so far ({verdict}). The clock keeps "
                     f"running: fix it and grade again.")
    return passed, "\n".join(lines)


def history_figure(drill, runs):
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
    ax.set_title(f"Drill '{drill.name}'")
    ax.legend(loc="best")
    fig.tight_layout()
    return fig


def plot_history(name, history=None, out=None, attempts=None):
    """Plot the attempts at one drill to a PNG; returns its path."""
    import matplotlib.pyplot as plt

    drill = _get(name)
    runs = [a for a in load_history(history_path(history)) if a["drill"] == name]
    if not runs:
        raise SystemExit(f"No recorded attempts at '{name}' in {history_path(history)} yet.")
    out = Path(out) if out else attempts_dir(attempts) / f"{name}_history.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig = history_figure(drill, runs)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def listing(history=None):
    hist = load_history(history_path(history))
    lines = ["drill        target  best    writes"]
    for d in drills().values():
        best = best_time(hist, d.name)
        lines.append(f"{d.name:<12} {_mmss(d.minutes * 60):>6}  {_mmss(best) if best is not None else '-':>6}  "
                     f"{', '.join(d.names)}")
    return "\n".join(lines)
