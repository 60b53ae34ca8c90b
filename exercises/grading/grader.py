r"""Grade the reader's code: run it in a box, judge what it returned here.

``grade_file(path, module)`` grades the exercises of one file; ``grade_exercises()`` grades
``exercises/*.py``. Results are dicts::

    {"target": "rope.rotate_half", "label": "Exercise 6.1", "status": "pass" | "fail" | "not attempted",
     "kind": "pass" | "not attempted" | "missing" | "unfinished" | "signature" | "type" | "shape" | "dtype"
             | "mutated" | "raised" | "timeout" | "crashed" | "import" | "nan" | "misconception" | "numbers"
             | "reference_import" | "sandbox" | "fails_reference" | "weak_test" | "waiting" | "link",
     "misconception": None or a stable key such as "sign_error", "message": "..."}

Every job (one exercise of one file) runs in a fresh worker process (``worker.py``, started by
``subprocess.run(..., timeout=...)``) in the box of ``sandbox.py``, so nothing one job leaves behind
reaches the next and an infinite loop costs one timeout. The worker sends back facts and outputs;
this process, which alone holds the reference's outputs, judges them (``judging.judge``,
``reader_tests.judge``). A file's first job runs alone (a file that does not load fails every job
the same way, and the others are not run); the rest run side by side.
"""
import collections
import concurrent.futures
import functools
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from exercises.grading import sandbox, wire
from exercises.grading.knowledge import graded_modules, knowledge, reference_places
from exercises.grading.paths import EXERCISES

DEFAULT_TIMEOUT = 10.0  # seconds per exercise: the cases are tiny, so only a hang gets near it
STARTUP_GRACE = 60.0  # seconds for a worker to start on a slow machine (only one that outlives its alarm waits)
MAX_FILE_BYTES = 1 << 20  # a graded file larger than this is refused
STDERR_KEPT = 8192  # bytes of the worker's console output kept for the report
WORKER = Path(__file__).resolve().parent / "worker.py"
CORES = os.cpu_count() or 1
_SLOTS = threading.BoundedSemaphore(CORES)  # worker processes at once, however many callers
_TIMED_OUT = {getattr(signal, s) for s in ("SIGALRM", "SIGXCPU") if hasattr(signal, s)}
#: ``(uid, gid)`` to run every worker as, or None: the grader's own user. The Gradescope autograder sets it
#: (``gradescope.py``, ``--run-as``) when it runs as root, so that the student's code runs unprivileged.
RUN_AS = None


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
# One job, in one worker process
# ---------------------------------------------------------------------------

def _fail(c, kind, message):
    from exercises.grading.judging import result
    return result(c, "fail", kind, message)


def implementations(c, k, own):
    r"""What reader test ``c`` runs on: the reference (its stored source), or in a student copy the
    reader's own implementations once they pass (``own``: their results), else none yet."""
    if c.reference is not None:
        return {"from": "reference", "source": c.reference}
    # a parameter that is no exercise, such as the clinic's make_patient, is given: taken as it is
    if all(own.get(p, {}).get("status") == "pass" for p in c.params if p in k.compiled):
        return {"from": "yours"}
    return {"from": "none"}


def _job(job, own, language="numpy"):
    c, k = job["check"], job["knowledge"]
    if c.kind == "reader_test":
        return {"kind": c.kind, "attr": job["attr"], "name": c.name, "module": c.module, "params": c.params,
                "implementations": implementations(c, k, own), "mutants": [m["key"] for m in c.mutants]}
    return {"kind": "target", "attr": job["attr"], "name": c.name, "methods": list(c.methods),
            "cases": [vars(case) for case in c.cases],
            "siblings": c.siblings if language == "numpy" else None}  # the reference's siblings are NumPy


def _judge(c, report):
    from exercises.grading import judging, reader_tests
    if "crashed" in report:
        return _fail(c, "crashed", str(report["crashed"]))
    try:
        return reader_tests.judge(c, report) if c.kind == "reader_test" else judging.judge(c, report)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        return _fail(c, "crashed", f"the graded process sent back something the grader cannot read "
                                   f"({type(e).__name__}); did your code write into the grader's channel?")


def _run(job, timeout, limits, wrap, private_dirs, own, language="numpy"):
    r"""Grade one job in a fresh worker: ``(result, loaded)``, ``loaded`` False when the file itself failed.

    ``language="torch"``: the worker hands the reader's code tensors and turns what it returns back into
    arrays (``worker.torch_boundary``); a PyTorch file's own functions stand in for the rest of it."""
    c, display = job["check"], job["display"]
    job_s = timeout * (1 + len(c.mutants) if c.kind == "reader_test" else 1)  # a reader test runs once per mutant too
    command = (shlex.split(wrap) if wrap else []) + [sys.executable, "-I", "-B", str(WORKER)]
    with tempfile.TemporaryDirectory(prefix=f"pe-grade-{c.module}-") as folder, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err, _SLOTS:
        request = {"file": shutil.copyfile(job["source"], os.path.join(folder, f"{c.module}.py")), "display": display,
                   "job": _job(job, own, language), "language": language, "job_s": job_s,
                   "private_dirs": [str(p) for p in private_dirs],
                   "limits": dict(vars(limits), wall_s=timeout,
                                  cpu_s=limits.cpu_s or int(STARTUP_GRACE + timeout + job_s)),
                   "reference": [[str(p) for p in reference_places()[0]], reference_places()[1]]}
        as_user = {}
        if RUN_AS is not None:  # the job's folder and file become the unprivileged user's; nothing else does
            for p in (folder, request["file"]):
                os.chown(p, *RUN_AS)
            as_user = {"user": RUN_AS[0], "group": RUN_AS[1], "extra_groups": []}
        try:
            code = subprocess.run(command, input=wire.dumps(request), stdout=out, stderr=err, cwd=folder,
                                  env=sandbox.environment(folder), timeout=STARTUP_GRACE + timeout + job_s,
                                  start_new_session=True, **as_user).returncode
        except subprocess.TimeoutExpired:
            code = None
        out.seek(0)
        answer = out.read()
        err.seek(max(0, err.seek(0, os.SEEK_END) - STDERR_KEPT))
        printed = err.read().decode(errors="replace")
    timed_out = code is None or abs(code) % 128 in _TIMED_OUT  # an alarm, the CPU limit, or the grader's own limit
    tail = "".join("\n" + line for line in printed.strip().splitlines()[-5:])
    ready, _, rest = answer.partition(b"\n")
    load, loaded, report = rest.partition(b"\n")
    if ready != b"ready":
        raise RuntimeError("the grading worker stopped before it loaded any code (is --memory-mb too low?):\n"
                           + printed[-2000:])
    if not loaded:
        return (_fail(c, "timeout", f"timeout: loading {display} took longer than {timeout:g} s (code at the top "
                                    "level of your file that never ends?); the grader stopped it.") if timed_out else
                _fail(c, "crashed", f"crashed: the process died while loading {display} (exit code {code}).{tail}"),
                False)
    try:
        load, report = json.loads(load), wire.loads(report) if report else None
        if not isinstance(load, dict) or not isinstance(report, (dict, type(None))):
            raise ValueError(report)
    except Exception:
        return _fail(c, "crashed", "crashed: the graded process wrote something that is not the grader's answer "
                                   "into the grader's channel."), True
    if any(load.values()):
        return _judge(c, load), False
    if report is None:
        return (_fail(c, "timeout", f"timeout: {job['attr']} ran longer than {job_s:g} s (an infinite loop, or a "
                                    "loop over far more elements than the inputs have); the grader stopped it.")
                if timed_out else
                _fail(c, "crashed", f"crashed: the process running {job['attr']} died (exit code {code}); does your "
                                    "code call os._exit or exit the interpreter, or use more memory than allowed?"
                                    f"{tail}"), True)
    result = _judge(c, report)
    if isinstance(report.get("printed"), int) and report["printed"] > 1 << 20:
        result["message"] += (f"\n(Your code printed {report['printed'] / (1 << 20):.1f} MB; the grader kept only "
                              "the start.)")
    return result, True


# ---------------------------------------------------------------------------
# Jobs
# ---------------------------------------------------------------------------

def _grade_file(jobs, run, own, failed=None):
    r"""``(results, failed)`` of ``jobs``, all on one file: its first job alone, then the others side by side.

    ``failed`` is the result of a job whose file failed to load (given, or found here): the file fails
    to load the same way every time, so every job gets that verdict without running.
    """
    if jobs and failed is None:
        path, display = jobs[0]["source"], jobs[0]["display"]
        if not os.path.isfile(path) or os.path.getsize(path) > MAX_FILE_BYTES:
            failed = (_fail(jobs[0]["check"], "missing", f"there is no file {display}.") if not os.path.isfile(path)
                      else _fail(jobs[0]["check"], "import", f"{display} is larger than {MAX_FILE_BYTES >> 20} MiB; "
                                                           "the grader does not load it."))
        else:
            first, loaded = run(jobs[0], own=own)
            if loaded:
                with concurrent.futures.ThreadPoolExecutor(CORES) as pool:
                    return [first] + [r for r, _ in pool.map(lambda j: run(j, own=own), jobs[1:])], None
            failed = first
    return [_fail(j["check"], failed["kind"], failed["message"]) for j in jobs], failed


def grade_jobs(jobs, timeout=DEFAULT_TIMEOUT, limits=None, wrap=None, private_dirs=(), display=None, known=None,
               language="numpy", held_out=False):
    r"""Grade ``[{"target", "source", "attr"}]``; returns one result per job, in order.

    ``source`` is a path to a .py file, ``attr`` the name to grade in it (default: the target's
    own name). A file's reader tests run after its other exercises. ``display`` maps a source
    path to the name its messages use; ``known`` maps a module to the ``Knowledge`` to grade it
    by (default: ``knowledge(module)``). ``language="torch"`` grades PyTorch code (the drills' ``--torch``).

    ``held_out=True`` (the instructor's grading) then runs every target that passed its public cases on its
    held-out cases, in a job of its own, and merges the two verdicts (``merge_held_out``): a hang costs one
    time limit, not two. A student copy has no held-out case, and ``grade`` runs the public cases alone.
    """
    if held_out:
        out = grade_jobs(jobs, timeout, limits, wrap, private_dirs, display, known, language)
        extra = []
        for i, (j, r) in enumerate(zip(jobs, out)):
            module, name = j["target"].split(".", 1)
            c = ((known or {}).get(module) or knowledge(module)).check(name)
            if c.kind == "target" and c.held_out_check() is not None:
                if r["status"] == "pass":
                    extra.append(dict(j, held_of=i))
                else:
                    out[i] = dict(r, public=r["status"], held_out="not run")
        if extra:
            held = grade_jobs(extra, timeout, limits, wrap, private_dirs, display, known, language)
            for j, h in zip(extra, held):
                out[j["held_of"]] = merge_held_out(out[j["held_of"]], h)
        return out
    run_one = functools.partial(_run, timeout=timeout, limits=limits or sandbox.Limits(), wrap=wrap,
                                private_dirs=private_dirs, language=language)
    groups = collections.defaultdict(list)
    for i, j in enumerate(jobs):
        module, name = j["target"].split(".", 1)
        k = (known or {}).get(module) or knowledge(module)
        source = str(Path(j["source"]).resolve())
        check = k.check(name).held_out_check() if "held_of" in j else k.check(name)
        groups[source, module].append({"index": i, "source": source, "knowledge": k, "check": check,
                                       "display": (display or {}).get(source, str(j["source"])),
                                       "attr": j.get("attr") or name})

    def grade_group(group):
        k = group[0]["knowledge"]
        targets = [p for p in group if p["check"].kind == "target"]
        tests = [p for p in group if p["check"].kind == "reader_test"]
        got, failed = _grade_file(targets, run_one, {})
        results = dict(zip([p["index"] for p in targets], got))
        own = {p["check"].name: results[p["index"]] for p in targets if not p["check"].held_out_view}
        # a student copy runs a reader test on the reader's own code: grade what it needs first
        needed = sorted({n for p in tests if p["check"].reference is None for n in p["check"].params
                         if n not in own and n in k.compiled})
        got, failed = _grade_file([dict(group[0], attr=n, check=k.check(n)) for n in needed], run_one, {}, failed)
        own.update(zip(needed, got))
        results.update(zip([p["index"] for p in tests], _grade_file(tests, run_one, own, failed)[0]))
        return results

    with concurrent.futures.ThreadPoolExecutor(CORES) as pool:
        results = {i: r for done in pool.map(grade_group, groups.values()) for i, r in done.items()}
    return [results[i] for i in range(len(jobs))]


def merge_held_out(public, held):
    r"""One verdict from a target's public and held-out results; both are kept (``public``, ``held_out``).

    A target passes when it passes both. Where only the held-out cases fail, the result is that failure,
    with ``failed_on: "held-out"``, and its message never shows a held-out input: it names the kind of
    failure, and the misconception when the outputs match one.
    """
    out = dict(public, public=public["status"], held_out=held["status"])
    if public["status"] != "pass":
        return out
    module, name = public["target"].split(".", 1)
    n = len(knowledge(module).check(name).held["cases"])
    if held["status"] == "pass":
        return dict(out, message=f"{public['message']} The {n} held-out cases pass too.")
    if held["kind"] == "misconception":
        what = held["message"]
    else:
        what = (f"{held['kind'].replace('_', ' ')}: your code passes the public cases but not the {n} held-out ones "
                "(other sizes, seeds and edge cases; their inputs are not shown). Does it work for any valid "
                "input, or only for the ones the public cases use?")
    return dict(out, status="fail", kind=held["kind"], misconception=held["misconception"], failed_on="held-out",
                message=f"held-out cases: {what}")


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
    held = " (held-out)" if result.get("failed_on") == "held-out" else ""
    return f"fail{held}: {result['kind']}" + (f" {result['misconception']}" if result["misconception"] else "")


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
