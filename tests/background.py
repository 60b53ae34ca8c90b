r"""Subprocess work the suite only waits for, started when collection ends and run beside the tests.

The suite's costliest pieces are subprocesses that the main pytest process merely waits for: every chapter run
under nbval, the instructor guide replayed command by command, the known-wrong implementations graded. On a
2-core machine the main process keeps one core busy with the in-process tests while the other idles, so those
pieces run here, on one background thread (``WORKERS``), from the moment collection ends; a test that needs
one asks for its result and waits only if it is not ready yet.

* A conftest's ``pytest_collection_finish`` hook submits a job only for the tests that were selected (so
  ``-m "not slow"`` or ``-k`` starts nothing they do not need), after collection and before any test runs, with
  the place of the first test that needs it as its priority: the jobs run in the order the tests ask for them.
* A job is a function that **only runs subprocesses**, each with the environment and the working folder it was
  given when submitted (``snapshot()``): a test in the main thread may ``monkeypatch`` ``os.environ``, a module's
  attributes or the working folder at any moment, and a job must see none of it. Anything a job reads from the
  repository's Python code is computed in the main thread when it is submitted.
* ``result(key, job)`` returns the job's value, or raises what it raised. A job nobody started yet is claimed and
  run inline, so a test never waits behind jobs queued before its own; a key never submitted (the hooks not
  run, a test called some other way) is run inline too, so no test needs this module to pass.
* ``stop()`` at the session's end cancels what has not started and kills a running job's process group: a
  Ctrl-C leaves no chapter running.
"""
import concurrent.futures
import itertools
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time

_futures = {}          # key -> (Future, job)
_queue = queue.PriorityQueue()   # (priority, order, key): the lowest priority first, then in the order submitted
_threads = []         # the workers, started with the first job
#: workers: one, beside the main process, on a 2-core machine; two made the whole run slower, the main process's
#: own subprocesses sharing the cores with three streams (bench_results/suite_clock_2026-12-06/)
WORKERS = 1
_running = set()       # the Popen objects of the job running now
_lock = threading.Lock()
_T0 = time.monotonic()
_order = itertools.count()   # ties in priority keep the order of submission
_base = None           # the folder of the jobs' folders, removed by stop()


def snapshot():
    r"""The environment as it is now, before any test has changed it: what a job's subprocesses get."""
    return dict(os.environ)


def folder(name):
    r"""A new empty folder for one job's files, under one temporary folder that ``stop()`` removes."""
    global _base
    with _lock:
        if _base is None:
            _base = tempfile.mkdtemp(prefix="pe-tests-background-")
    return tempfile.mkdtemp(prefix=f"{name}-", dir=_base)


def first_use(items, wants):
    r"""The index in ``items`` (the session's, in the order they will run) of the first test ``wants(item)`` is
    true of, or None: the priority to ``submit`` a job with, so the jobs run in the order the tests need them."""
    return next((i for i, item in enumerate(items) if wants(item)), None)


def uses(fixture):
    r"""``wants`` for ``first_use``: the test asks for the fixture named ``fixture``."""
    return lambda item: fixture in getattr(item, "fixturenames", ())


def submit(key, job, priority=0):
    r"""Queue ``job()`` under ``key`` (once: a key submitted again is left as it is) and start the workers. Jobs of a
    lower ``priority`` run first: give the index of the first test that needs it (``first_use``)."""
    with _lock:
        if key in _futures:
            return
        _futures[key] = (concurrent.futures.Future(), job)
        _queue.put((priority, next(_order), key))
        while len(_threads) < WORKERS:
            _threads.append(threading.Thread(target=_work, name=f"tests-background-{len(_threads)}", daemon=True))
            _threads[-1].start()


def _claim(future):
    r"""True for the one caller that moves ``future`` from pending to running; False for everyone after."""
    with _lock:
        return not (future.running() or future.done()) and future.set_running_or_notify_cancel()


def _run_claimed(future, job, key=""):
    start = time.monotonic()
    try:
        value = job()
    except BaseException as e:  # handed to the test that asks, as the job raised it
        _log(key, start)
        future.set_exception(e)
        return
    _log(key, start)             # before the value: a test that has it finds the line written
    future.set_result(value)


def _log(key, start):
    r"""With ``PE_BACKGROUND_LOG=FILE``, one line a job: its key, the thread that ran it, when it started and ended
    (seconds since this module was imported): where the suite's time goes, for a maintainer tuning it."""
    path = os.environ.get("PE_BACKGROUND_LOG")
    if path:
        with _lock, open(path, "a") as f:
            f.write(f"{key}\t{threading.current_thread().name}\t{start - _T0:.1f}\t{time.monotonic() - _T0:.1f}\n")


def _work():
    while True:
        _, _, key = _queue.get()
        if key is None:
            return
        future, job = _futures[key]
        if _claim(future):   # False where a test claimed it first, or stop() cancelled it
            _run_claimed(future, job, key)


def result(key, job):
    r"""The value of the job under ``key``: waited for if it is running, run here if not started, and run here
    (``job``) if ``key`` was never submitted."""
    with _lock:
        entry = _futures.get(key)
    if entry is None:
        return job()
    future, queued = entry
    if _claim(future):
        _run_claimed(future, queued, key)
    return future.result()


def run(command, *, env, cwd, timeout, **kwargs):
    r"""``subprocess.run(command, capture_output=True, text=True)`` in a process group of its own, which ``stop()``
    kills; ``env`` and ``cwd`` are required, so a job never inherits what a test changed."""
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True, **kwargs)
    with _lock:
        _running.add(process)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        stdout, stderr = process.communicate()
        raise subprocess.TimeoutExpired(command, timeout, stdout, stderr) from None
    finally:
        with _lock:
            _running.discard(process)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _kill(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stop():
    r"""Cancel every job not started, kill the running ones' processes, remove the jobs' folders."""
    global _base
    with _lock:
        for future, _ in _futures.values():
            future.cancel()
        for process in list(_running):
            _kill(process)
        threads = list(_threads)
        _threads.clear()
    for _ in threads:
        _queue.put((float("-inf"), next(_order), None))
    for thread in threads:
        thread.join(timeout=30)
    with _lock:
        _futures.clear()
        base, _base = _base, None
    if base is not None:
        shutil.rmtree(base, ignore_errors=True)
