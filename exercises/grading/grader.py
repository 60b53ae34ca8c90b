r"""Grade the reader's code: every exercise in its own time-limited process.

``grade_file(path, module)`` grades the functions of one file against ``solutions/<module>.py``;
``grade_exercises()`` grades ``exercises/*.py``. Results are dicts::

    {"target": "rope.rotate_half", "label": "Exercise 6.1", "status": "pass" | "fail" | "not attempted",
     "kind": "pass" | "not attempted" | "missing" | "unfinished" | "signature" | "type" | "shape" | "dtype"
             | "mutated" | "raised" | "timeout" | "crashed" | "import" | "nan" | "misconception" | "numbers",
     "misconception": None or a stable key such as "sign_error", "message": "..."}

The reader's code runs in a worker process (``exercises.grading.worker``). A job that overruns
``timeout`` seconds gets its worker killed and the remaining jobs go to a fresh one, so an
infinite loop costs one timeout and never hangs the caller.
"""
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from exercises.grading.generate import exercise_modules, region_labels
from exercises.grading.paths import EXERCISES, ROOT, SOLUTIONS

DEFAULT_TIMEOUT = 10.0  # seconds per exercise: the cases are tiny, so only a hang gets near it
STARTUP_GRACE = 60.0  # seconds for the worker to start (imports) on a slow machine

_labels = {}


def label_of(target_key):
    """The stub label of a target: 'Exercise 6.1' or 'Drill alibi.1'."""
    module, name = target_key.split(".", 1)
    if module not in _labels:
        _labels[module] = region_labels((SOLUTIONS / f"{module}.py").read_text(), f"solutions/{module}.py")
    return _labels[module][name]


def _number(label):
    tail = label.split()[-1]
    return tuple(int(p) if p.isdigit() else p for p in tail.split("."))


def targets_of(module):
    """Keys of the graded targets of a solutions module, in exercise order."""
    from exercises.grading.checks import targets
    keys = [f"{module}.{name}" for name in targets(module)]
    return sorted(keys, key=lambda k: _number(label_of(k)))


def _worker_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["MPLBACKEND"] = "Agg"
    env["MT_BACKEND"] = "numpy"
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ inside students' folders
    return env


def _failure(job, kind, message):
    return {"target": job["target"], "label": job["label"], "status": "fail", "kind": kind,
            "misconception": None, "message": message}


def grade_jobs(jobs, timeout=DEFAULT_TIMEOUT):
    r"""Grade ``[{"target", "source", "attr"}]``; returns one result per job, in order.

    ``source`` is a path to a .py file, ``attr`` the name to grade in it (default: the
    target's own name).
    """
    jobs = [dict(j, index=i, source=str(Path(j["source"]).resolve()),
                 attr=j.get("attr") or j["target"].split(".", 1)[1],
                 label=j.get("label") or label_of(j["target"])) for i, j in enumerate(jobs)]
    results = [None] * len(jobs)
    pending = list(jobs)
    while pending:
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen([sys.executable, "-m", "exercises.grading.worker"], cwd=str(ROOT), env=_worker_env(),
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
            lines = queue.Queue()

            def pump(stream=proc.stdout):
                for line in stream:
                    lines.put(line)
                lines.put(None)

            threading.Thread(target=pump, daemon=True).start()
            try:
                proc.stdin.write(json.dumps(pending).encode())
                proc.stdin.close()
            except BrokenPipeError:
                pass
            current, deadline, err_from = None, time.monotonic() + STARTUP_GRACE, 0
            by_index = {j["index"]: j for j in pending}
            stop_reason = None
            while True:
                try:
                    line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    stop_reason = "timeout"
                    break
                if line is None:
                    stop_reason = "eof"
                    break
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if msg["event"] == "start":
                    current, deadline = msg["index"], time.monotonic() + timeout
                    err_from = os.fstat(err.fileno()).st_size  # this job's stderr starts here
                elif msg["event"] == "result":
                    results[msg["index"]] = msg["result"]
                    current, deadline = None, time.monotonic() + STARTUP_GRACE
                elif msg["event"] == "done":
                    break
            if stop_reason:
                proc.kill()
            proc.wait()
            if stop_reason and current is not None:
                job = by_index[current]
                if stop_reason == "timeout":
                    results[current] = _failure(job, "timeout", (
                        f"timeout: {job['attr']} ran longer than {timeout:g} s (an infinite loop, or a loop "
                        "over far more elements than the inputs have); the grader stopped it."))
                else:
                    err.seek(err_from)
                    tail = err.read().decode(errors="replace").strip().splitlines()[-5:]
                    results[current] = _failure(job, "crashed", (
                        f"crashed: the process running {job['attr']} died (exit code {proc.returncode}); "
                        "does your code call os._exit or exit the interpreter?"
                        + ("\n" + "\n".join(tail) if tail else "")))
            elif stop_reason:  # the worker died or hung outside any job: a grader problem
                err.seek(0)
                raise RuntimeError("the grading worker stopped before grading started:\n"
                                   + err.read().decode(errors="replace")[-2000:])
        pending = [j for j in pending if results[j["index"]] is None]
    return results


def grade_file(path, module, names=None, timeout=DEFAULT_TIMEOUT):
    """Grade the targets of ``module`` (all, or those named) as defined in the file ``path``."""
    keys = [k for k in targets_of(module) if names is None or k.split(".", 1)[1] in names]
    return grade_jobs([{"target": k, "source": path} for k in keys], timeout=timeout)


def grade_exercises(modules=None, timeout=DEFAULT_TIMEOUT):
    """Grade ``exercises/<module>.py`` for every exercise module; returns ``{target: result}``."""
    jobs = [{"target": k, "source": EXERCISES / f"{m}.py"}
            for m in (modules or exercise_modules()) for k in targets_of(m)]
    return {r["target"]: r for r in grade_jobs(jobs, timeout=timeout)}


def summary(result):
    """A short cell for tables: 'pass', 'not attempted', 'fail: misconception sign_error', ..."""
    if result["status"] != "fail":
        return result["status"]
    return f"fail: {result['kind']}" + (f" {result['misconception']}" if result["misconception"] else "")


def format_results(results):
    """A plain-text report, one block per result."""
    out = []
    for r in results:
        name = r["target"].split(".", 1)[1]
        head = f"{r['label']:<14} {name:<34} "
        if r["status"] == "fail":
            out.append(head + "FAIL")
            out += ["    " + line for line in r["message"].splitlines()]
        else:
            out.append(head + r["status"])
    passed = sum(r["status"] == "pass" for r in results)
    out.append(f"{passed} of {len(results)} pass.")
    return "\n".join(out)
