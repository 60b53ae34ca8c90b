r"""Grade the reader's code: run it in a box, judge what it returned here.

``grade_file(path, module)`` grades the exercises of one file; ``grade_exercises()`` grades
``exercises/*.py``. Results are dicts::

    {"target": "rope.rotate_half", "label": "Exercise 6.1", "status": "pass" | "fail" | "not attempted",
     "kind": "pass" | "not attempted" | "missing" | "unfinished" | "signature" | "type" | "shape" | "dtype"
             | "mutated" | "raised" | "timeout" | "crashed" | "import" | "nan" | "misconception" | "numbers"
             | "reference_import" | "sandbox" | "fails_reference" | "weak_test" | "waiting" | "link",
     "misconception": None or a stable key such as "sign_error", "message": "..."}

The reader's code runs in a worker process (``worker.py``) inside the box of ``sandbox.py``: a
throwaway folder with a copy of the file, a scrubbed environment, resource limits and a guard.
The worker sends back facts and outputs; this process, which alone holds the reference's
outputs, judges them (``checking.judge``, ``reader_tests.judge``). A job that overruns its time
limit gets its worker killed and the remaining jobs go to a fresh one, so an infinite loop costs
one timeout and never hangs the caller.

``isolation="file"`` runs all of a file's jobs in one worker (your own grading);
``isolation="job"`` gives every job a fresh worker (a class: nothing one job leaves behind can
reach the next).
"""
import collections
import json
import os
import queue
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

from exercises.grading import sandbox
from exercises.grading.knowledge import graded_modules, knowledge
from exercises.grading.paths import EXERCISES, answer_paths

DEFAULT_TIMEOUT = 10.0  # seconds per exercise: the cases are tiny, so only a hang gets near it
STARTUP_GRACE = 60.0  # seconds for the worker to start (imports) on a slow machine
MAX_FILE_BYTES = 1 << 20  # a graded file larger than this is refused
MAX_LINE = 64 << 20  # the longest protocol line the grader reads
STDERR_KEPT = 8192  # bytes of the worker's console output kept for the report
WORKER = Path(__file__).resolve().parent / "worker.py"


def label_of(target_key):
    """The label of a target: 'Exercise 6.1' or 'Drill alibi.1'."""
    module, name = target_key.split(".", 1)
    return knowledge(module).labels[name]


def targets_of(module):
    """Keys of the graded targets and reader tests of a module, in exercise order."""
    return [f"{module}.{n}" for n in knowledge(module).names()]


def exercise_module_names():
    from exercises.grading.generate import exercise_modules
    return [m for m in exercise_modules() if m in graded_modules()]


# ---------------------------------------------------------------------------
# One worker process
# ---------------------------------------------------------------------------

class _Tail:
    r"""Keeps the last bytes of a stream and counts them all, however much the graded code prints."""

    def __init__(self, stream):
        self.kept, self.total = collections.deque(), 0
        self._size = 0
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream):
        for chunk in iter(lambda: stream.read(65536), b""):
            self.total += len(chunk)
            self.kept.append(chunk)
            self._size += len(chunk)
            while self._size - len(self.kept[0]) >= STDERR_KEPT:
                self._size -= len(self.kept.popleft())

    def text(self, wait=1.0):
        self._thread.join(wait)
        return b"".join(self.kept)[-STDERR_KEPT:].decode(errors="replace")


def _lines(stream, out):
    while True:
        line = stream.readline(MAX_LINE)
        if not line:
            break
        out.put(line)
    out.put(None)


class _Run:
    r"""One worker process: its request in, its events out, its console output kept short."""

    def __init__(self, request, folder, wrap):
        command = shlex.split(wrap) if wrap else []
        command += [sys.executable, "-I", "-B", str(WORKER)]
        self.proc = subprocess.Popen(command, cwd=folder, env=sandbox.environment(folder), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.stderr = _Tail(self.proc.stderr)
        self.lines = queue.Queue()
        threading.Thread(target=_lines, args=(self.proc.stdout, self.lines), daemon=True).start()
        try:
            self.proc.stdin.write(json.dumps(request).encode())
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass

    def next_event(self, deadline):
        r"""The next event as a dict, or the reason there is none: 'timeout', 'eof' or 'garbled'."""
        try:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return "timeout"
        if line is None:
            return "eof"
        try:
            msg = json.loads(line)
        except ValueError:
            return "garbled"
        return msg if isinstance(msg, dict) and isinstance(msg.get("event"), str) else "garbled"

    def stop(self, kill):
        if kill:
            try:
                os.killpg(self.proc.pid, 9)  # its whole session: anything it started dies with it
            except (OSError, AttributeError):  # no process groups (Windows), or already gone
                self.proc.kill()
        try:
            self.proc.wait(timeout=STARTUP_GRACE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ---------------------------------------------------------------------------
# Jobs
# ---------------------------------------------------------------------------

def _fail(c, kind, message):
    from exercises.grading.checking import result
    return result(c, "fail", kind, message)


def _is_test(c):
    return getattr(c, "kind", "") == "reader_test"


def _job_payload(job, own_results):
    c, k = job["check"], job["knowledge"]
    if _is_test(c):
        if k.has_reference:
            impl = {"from": "reference", "source": k.reference_source(c.params, exclude=list(k.tests))}
        elif all(own_results.get(p, {}).get("status") == "pass" for p in c.params if p in k.compiled):
            impl = {"from": "yours"}  # a student copy: the reader's own implementations, once they pass
            # (a parameter that is no exercise, such as the clinic's make_patient, is given: taken as it is)
        else:
            impl = {"from": "none"}
        return {"index": job["index"], "kind": "reader_test", "attr": job["attr"], "name": c.name, "module": c.module,
                "params": c.params, "implementations": impl, "mutants": [m["key"] for m in c.mutants]}
    from exercises.grading.checking import case_to_wire
    siblings = [n for n in k.compiled if n != c.name]
    return {"index": job["index"], "kind": "target", "attr": job["attr"], "name": c.name, "methods": list(c.methods),
            "cases": [case_to_wire(case) for case in c.cases],
            "siblings": k.reference_source(siblings, exclude=[c.name])}


def _judge(job, report, load):
    from exercises.grading import checking, reader_tests
    c = job["check"]
    report = dict(report)
    report["violations"] = list(load.get("violations") or []) + list(report.get("violations") or [])
    report["reference_import"] = load.get("reference_import") or report.get("reference_import") or ""
    if "crashed" in report:
        return _fail(c, "crashed", str(report["crashed"]))
    try:
        return reader_tests.judge(c, report) if _is_test(c) else checking.judge(c, report)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        return _fail(c, "crashed", f"the graded process sent back something the grader cannot read "
                                   f"({type(e).__name__}); did your code write into the grader's channel?")


def _load_failed(load):
    return bool(load and (load.get("import_error") or load.get("reference_import") or load.get("violations")
                          or load.get("dead")))


def _run_group(path, display, jobs, timeout, isolation, limits, wrap, private_dirs, own_results):
    r"""Grade ``jobs`` (dicts with "index", "check", "attr", "knowledge") on one file; ``{index: result}``."""
    results = {}
    if not jobs:
        return results
    if not os.path.isfile(path):
        return {j["index"]: _fail(j["check"], "missing", f"there is no file {display}.") for j in jobs}
    if os.path.getsize(path) > MAX_FILE_BYTES:
        return {j["index"]: _fail(j["check"], "import", f"{display} is larger than {MAX_FILE_BYTES >> 20} MiB; "
                                  "the grader does not load it.") for j in jobs}
    folder, copy = sandbox.throwaway_folder(path, jobs[0]["check"].module)
    try:
        load, attempts, pending = None, collections.Counter(), list(jobs)
        while pending:
            if _load_failed(load):  # the file fails to load the same way every time: say so for every job
                for j in pending:
                    results[j["index"]] = (_fail(j["check"], *load["dead"]) if load.get("dead")
                                           else _judge(j, {"import_error": load.get("import_error")}, load))
                break
            batch = pending if isolation == "file" else pending[:1]
            got, load = _run_batch(batch, folder, copy, display, timeout, limits, wrap, private_dirs, own_results)
            results.update(got)
            for j in batch:
                attempts[j["index"]] += 1
                if j["index"] not in results and attempts[j["index"]] >= 2:
                    results[j["index"]] = _fail(j["check"], "crashed", "crashed: the graded process kept dying "
                                                "before it could run this exercise.")
            pending = [j for j in pending if j["index"] not in results]
    finally:
        sandbox.remove_folder(folder)
    return results


def _run_batch(batch, folder, copy, display, timeout, limits, wrap, private_dirs, own_results):
    r"""One worker over ``batch``: ``({index: result}, what loading did)``."""
    scale = {j["index"]: 1 + len(j["check"].mutants) if _is_test(j["check"]) else 1 for j in batch}
    limits = dict(limits.to_json())
    limits["cpu_s"] = limits["cpu_s"] or int(STARTUP_GRACE + timeout * (1 + sum(scale.values())))
    request = {"file": copy, "display": display, "limits": limits,
               "reference_dirs": [str(p) for p in answer_paths()],
               "private_dirs": [str(p) for p in private_dirs],
               "mutant_modules": sorted({j["check"].module for j in batch if _is_test(j["check"])}),
               "jobs": [_job_payload(j, own_results) for j in batch]}
    by_index = {j["index"]: j for j in batch}
    results, current, load, ready, stop = {}, None, None, False, None
    run = _Run(request, folder, wrap)
    deadline = time.monotonic() + STARTUP_GRACE
    while stop is None:
        msg = run.next_event(deadline)
        if isinstance(msg, str):
            stop = msg
            break
        event = msg["event"]
        if event == "ready" and not ready:
            ready, deadline = True, time.monotonic() + timeout  # loading the file has the time of one exercise
        elif event == "loaded" and ready and load is None:
            load = {"import_error": msg.get("import_error"), "violations": list(msg.get("violations") or []),
                    "reference_import": msg.get("reference_import") or ""}
            deadline = time.monotonic() + timeout
        elif event == "start" and load is not None and current is None and msg.get("index") in by_index \
                and msg["index"] not in results:
            current = msg["index"]
            deadline = time.monotonic() + timeout * scale[current]
        elif event == "result" and current is not None and msg.get("index") == current \
                and isinstance(msg.get("report"), dict):
            results[current] = _judge(by_index[current], msg["report"], load)
            current, deadline = None, time.monotonic() + timeout
        elif event == "done" and current is None and load is not None:
            break
        else:
            stop = "garbled"
    run.stop(kill=stop is not None)
    tail = run.stderr.text().strip().splitlines()[-5:]
    tail_text = ("\n" + "\n".join(tail)) if tail else ""
    if stop and not ready:
        raise RuntimeError("the grading worker stopped before it loaded any code (is --memory-mb too low?):\n"
                           + run.stderr.text()[-2000:])
    if stop and load is None:
        load = {"dead": ("timeout", f"timeout: loading {display} took longer than {timeout:g} s (code at the "
                                    "top level of your file that never ends?); the grader stopped it.")
                if stop == "timeout" else
                ("crashed", f"crashed: the process died while loading {display} (exit code "
                            f"{run.proc.returncode}).{tail_text}")}
    elif stop and current is not None:
        job = by_index[current]
        if stop == "timeout":
            results[current] = _fail(job["check"], "timeout", (
                f"timeout: {job['attr']} ran longer than {timeout * scale[current]:g} s (an infinite loop, or a loop "
                "over far more elements than the inputs have); the grader stopped it."))
        elif stop == "garbled":
            results[current] = _fail(job["check"], "crashed", "crashed: the graded process wrote something that "
                                     "is not the grader's protocol into the grader's channel.")
        else:
            results[current] = _fail(job["check"], "crashed", (
                f"crashed: the process running {job['attr']} died (exit code {run.proc.returncode}); does your "
                f"code call os._exit or exit the interpreter, or use more memory than allowed?{tail_text}"))
    if run.stderr.total > 1 << 20:
        for r in results.values():
            r["message"] += (f"\n(Your code printed {run.stderr.total / (1 << 20):.1f} MB; the grader kept only the "
                             "end.)")
    return results, load


def grade_jobs(jobs, timeout=DEFAULT_TIMEOUT, isolation="file", limits=None, wrap=None, private_dirs=(),
               display=None):
    r"""Grade ``[{"target", "source", "attr"}]``; returns one result per job, in order.

    ``source`` is a path to a .py file, ``attr`` the name to grade in it (default: the target's
    own name). A file's reader tests run after its other exercises. ``display`` maps a source
    path to the name its messages use.
    """
    limits = limits or sandbox.Limits()
    prepared = []
    for i, j in enumerate(jobs):
        module, name = j["target"].split(".", 1)
        k = knowledge(module)
        source = str(Path(j["source"]).resolve())
        prepared.append({"index": i, "source": source, "display": (display or {}).get(source, str(j["source"])),
                         "attr": j.get("attr") or name, "check": k.check(name), "knowledge": k})
    results = [None] * len(prepared)
    groups = collections.defaultdict(list)
    for p in prepared:
        groups[(p["source"], p["check"].module)].append(p)
    for (source, _), group in groups.items():
        k, display_path = group[0]["knowledge"], group[0]["display"]
        run = lambda jobs_, own: _run_group(source, display_path, jobs_, timeout, isolation, limits,  # noqa: E731
                                            wrap, private_dirs, own)
        own = {}
        for i, r in run([p for p in group if not _is_test(p["check"])], {}).items():
            results[i] = r
            own[r["target"].split(".", 1)[1]] = r
        tests = [p for p in group if _is_test(p["check"])]
        if tests and not k.has_reference:  # a student copy runs a reader test on the reader's own code
            needed = sorted({n for p in tests for n in p["check"].params if n not in own and n in k.compiled})
            extra = [{"index": -1 - n, "source": source, "display": display_path, "attr": name,
                      "check": k.check(name), "knowledge": k} for n, name in enumerate(needed)]
            own.update({r["target"].split(".", 1)[1]: r for r in run(extra, {}).values()})
        for i, r in run(tests, own).items():
            results[i] = r
    return results


def grade_file(path, module, names=None, timeout=DEFAULT_TIMEOUT, **kwargs):
    """Grade the targets of ``module`` (all, or those named) as defined in the file ``path``."""
    keys = [k for k in targets_of(module) if names is None or k.split(".", 1)[1] in names]
    return grade_jobs([{"target": k, "source": path} for k in keys], timeout=timeout, **kwargs)


def grade_exercises(modules=None, timeout=DEFAULT_TIMEOUT):
    """Grade ``exercises/<module>.py`` for every exercise module; returns ``{target: result}``."""
    jobs = [{"target": k, "source": EXERCISES / f"{m}.py"}
            for m in (modules or exercise_module_names()) for k in targets_of(m)]
    return {r["target"]: r for r in grade_jobs(jobs, timeout=timeout)}


# ---------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------

_PHRASES = {"reference_import": "imports the reference", "sandbox": "blocked by the sandbox",
            "fails_reference": "fails the reference", "waiting": "needs its implementations first",
            "link": "hands in a link"}


def summary(result):
    """A short cell for tables: 'pass', 'not attempted', 'fail: misconception sign_error', ..."""
    if result["status"] != "fail":
        return result["status"]
    if result["kind"] == "weak_test":
        caught, n = result.get("caught", ("?", "?"))
        return f"fail: weak test (caught {caught} of {n})"
    if result["kind"] in _PHRASES:
        return f"fail: {_PHRASES[result['kind']]}"
    return f"fail: {result['kind']}" + (f" {result['misconception']}" if result["misconception"] else "")


def format_results(results):
    """A plain-text report, one block per result; a file that does not import is reported once."""
    out = []
    by_message = collections.Counter(r["message"] for r in results if r["kind"] == "import")
    said = set()
    for r in results:
        name = r["target"].split(".", 1)[1]
        head = f"{r['label']:<14} {name:<34} "
        if r["kind"] == "import" and by_message[r["message"]] > 1:
            if r["message"] not in said:
                said.add(r["message"])
                out.append(f"{r['message']}\nNone of its {by_message[r['message']]} exercises can be graded until "
                           "it imports.")
            continue
        if r["status"] == "fail":
            out.append(head + "FAIL")
            out += ["    " + line for line in r["message"].splitlines()]
        else:
            out.append(head + r["status"])
    passed = sum(r["status"] == "pass" for r in results)
    out.append(f"{passed} of {len(results)} pass.")
    return "\n".join(out)
