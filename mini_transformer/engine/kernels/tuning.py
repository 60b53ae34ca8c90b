r"""Tuning the process for speed: one explicit call, never an import.

``tune()`` is what the bench, the experiments and a long training run call
before they start; a chapter never does (a chapter calls ``chapter_threads()``,
below, in its first cell, where the reader sees it). It changes three things:

* **Threads for the fast kernels** (``threads.set_threads``): the fast GELU,
  softmax and attention spread blocks of rows over one thread per core.
* **Freed memory kept for reuse** (``keep_freed_memory``): glibc's allocator
  keeps freed blocks in the heap instead of handing them back to the system,
  so each training step reuses the last step's arrays instead of paying a page
  fault per 4 KiB on fresh ones. The process then keeps its peak memory until
  it exits.
* **A thread governor** (``Governor``): while a training loop runs
  (``model.train.train`` calls ``step_done()`` after every step), it times a
  few steps on every core and a few on one thread (the fast kernels' pool and
  BLAS both, ``blas_threads``), keeps the faster, and checks again every few
  hundred steps or as soon as steps slow down. On a quiet machine every core
  wins; when another program holds a core, threads that wait for it lose to
  one thread (a step of two BLAS threads waits for the slower half, and the
  slower half waits for the scheduler to give its core back), so one thread
  wins. Without ``tune()``, ``step_done()`` does nothing.

A fourth setting can only be made before NumPy loads, so it is an environment
variable of the command, not part of ``tune()``: ``OPENBLAS_THREAD_TIMEOUT``,
how long (2^n CPU cycles) an idle OpenBLAS thread spins waiting for the next
matrix product before it sleeps. OpenBLAS's default, 2^28 cycles (about a tenth
of a second), holds a core that the fast kernels' own threads need between
products; 2^22 (about 1.6 ms) keeps the threads awake across the short gaps
between a small model's products. ``relaunch_with_blas_spin(module)`` re-runs a
``python -m`` command once with that variable set (the bench's and the
experiments' ``__main__`` do). Measurements: ``bench_results/``.
"""
import ctypes
import os
import statistics
import sys
import time

from . import threads
from ..validate import check_int

BLAS_SPIN = {"OPENBLAS_THREAD_TIMEOUT": "22"}

_state = {"threads": 1, "freed_memory_kept": False, "governor": None}


# Not mutated: it sets BLAS threads and glibc's malloc, which a test sees only by changing its own process.
def tune(n_threads=None, keep_freed=True, adaptive=True):  # pragma: no mutate block
    """Threads for the fast kernels (default: one per core), on glibc freed memory kept, and (``adaptive``)
    a ``Governor`` that falls back to one thread while that is faster; returns the settings."""
    n = n_threads or os.cpu_count() or 1
    threads.set_threads(n)
    _state["threads"] = n
    if keep_freed and not _state["freed_memory_kept"]:
        _state["freed_memory_kept"] = keep_freed_memory()
    _state["governor"] = Governor(n) if adaptive and n > 1 else None
    return state()


# Not mutated: it reads OpenBLAS via ctypes, which a test sees only by changing its own process.
def state():  # pragma: no mutate block
    """What ``tune()`` has changed in this process, and the BLAS spin the process started with."""
    g = _state["governor"]
    blas = blas_threads() if "lib" in _openblas_cache else None   # never loads a library just to report
    return dict(_state, threads=threads.threads(), blas_threads=blas,
                governor=g.report() if g is not None else None,
                openblas_thread_timeout=os.environ.get("OPENBLAS_THREAD_TIMEOUT"))


def chapter_threads(n=1):
    r"""Run BLAS and the fast kernels on ``n`` threads (one by default) in this process, print what changed, return it.

    A chapter's models are tiny: their matrix products take microseconds, too
    little to share between threads, and OpenBLAS's default (a thread per core)
    makes every product wait for the slowest of its threads. When another program
    holds a core, that wait is the scheduler's: one training cell of chapter 6
    took 46 s on the default threads beside other work and 6 s on one thread
    (issue 36; every chapter's time both ways is in ``bench_results/reader_clock/``).
    A chapter calls this in its first cell, in view; delete the line to run on
    your machine's defaults.
    """
    n = check_int("chapter_threads: n", n, minimum=1, why="1 runs every matrix product on the calling thread")
    blas_before = blas_threads()
    blas_now = blas_threads(n) if blas_before is not None else None
    kernels_before = threads.set_threads(n)
    blas = (f"BLAS {blas_now} thread{'s' * (blas_now != 1)} (it had {blas_before})" if blas_now is not None
            else "BLAS left as it is (no OpenBLAS found to set: another BLAS, or a system other than Linux)")
    print(f"chapter_threads: {blas}; fast kernels {n} thread{'s' * (n != 1)} (they had {kernels_before}).")
    return {"blas_threads": blas_now, "blas_threads_before": blas_before,
            "threads": n, "threads_before": kernels_before}


def step_done():
    """Tell the governor a training step has ended (``model.train.train`` calls this); nothing without ``tune()``."""
    g = _state["governor"]
    if g is not None:
        g.step_done()


_openblas_cache = {}   # "lib": the handle _openblas found (or None), once it has looked


# Not mutated: it loads OpenBLAS via ctypes, which a test sees only by changing its own process.
def _openblas():  # pragma: no mutate block
    """The OpenBLAS library NumPy loaded, as a ctypes handle with its thread-count calls; None if there is none
    (another BLAS, another system than Linux, or CuPy, where NumPy's BLAS is not what runs)."""
    if "lib" in _openblas_cache:
        return _openblas_cache["lib"]
    lib = None
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
        for path in sorted(paths):
            handle = ctypes.CDLL(path)
            for prefix, suffix in (("scipy_openblas", "64_"), ("scipy_openblas", ""), ("openblas", "64_"),  # NumPy 2, 1.22-1.26
                                   ("openblas", "")):
                get = getattr(handle, f"{prefix}_get_num_threads{suffix}", None)
                put = getattr(handle, f"{prefix}_set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    get.restype, put.argtypes = ctypes.c_int, [ctypes.c_int]
                    lib = (get, put)
                    break
            if lib:
                break
    except OSError:
        lib = None
    _openblas_cache["lib"] = lib
    return lib


# Not mutated: it sets OpenBLAS's threads via ctypes, which a test sees only by changing its own process.
def blas_threads(n=None):  # pragma: no mutate block
    """OpenBLAS's thread count (set it to ``n`` first, when given); None where it cannot be read or set."""
    lib = _openblas()
    if lib is None:
        return None
    get, put = lib
    if n is not None:
        put(int(n))
    return get()


class Governor:
    r"""Between every core and one thread, the one whose training steps are measured faster, checked as it runs.

    ``step_done()`` after each step. Until its first call nothing changes (a
    process that tunes and then does anything but train runs on every core);
    from then on the governor times ``probe`` steps on one thread, then
    ``probe`` on ``n`` (the first step after each switch is not counted:
    threads wake up in it), keeps the setting with the lower median,
    and runs on it. A step on ``n`` threads ``patience`` times slower than the
    one-thread median ends that probe at once (a busy core makes waiting threads
    several times slower, and there is no need to see it three times). It
    probes again after ``period`` steps, or as soon as the median of the last
    ``probe`` steps is ``patience`` times the winner's: the load of the machine
    changed.
    """

    def __init__(self, n, probe=3, period=200, patience=1.3, clock=time.perf_counter):
        self.n, self.probe, self.period, self.patience, self.clock = n, probe, period, patience, clock
        self.blas_n = blas_threads() or 1
        self.choice, self.expected = n, None
        self.plan, self.times, self.recent, self.steps = [], {}, [], 0
        self.switches, self.last = 0, None              # the first step_done() starts the clock and the probe

    def _start_probe(self):
        self.plan = [1] * (self.probe + 1) + [self.n] * (self.probe + 1)   # a warm-up step after each switch
        self.times = {self.n: [], 1: []}
        self._use(self.plan[0])

    def _use(self, n):
        threads.set_threads(n)
        blas_threads(self.blas_n if n > 1 else 1)
        self.current = n

    def step_done(self):
        now = self.clock()
        dt, self.last = (now - self.last if self.last is not None else None), now
        if dt is None:
            self._start_probe()
            return
        if self.plan:                                    # probing: this step ran on plan[0] threads
            n = self.plan.pop(0)
            self.times[n].append(dt)
            one = self.times[1][1:]
            if n > 1 and len(self.times[n]) > 1 and one and dt > self.patience * statistics.median(one):
                self.plan = []                           # clearly slower on n threads: no need to see it again
            if not self.plan:
                self._decide()
            elif self.plan[0] != self.current:
                self._use(self.plan[0])
            return
        self.steps += 1
        self.recent = (self.recent + [dt])[-self.probe:]
        slow = len(self.recent) == self.probe and statistics.median(self.recent) > self.patience * self.expected
        if self.steps >= self.period or slow:
            self._start_probe()

    def _decide(self):
        timed = {n: statistics.median(t[1:]) for n, t in self.times.items() if len(t) > 1}   # t[0]: warm-up
        choice = min(timed, key=timed.get)
        self.switches += choice != self.choice
        self.choice, self.expected = choice, timed[choice]
        self.steps, self.recent = 0, []
        self._use(choice)

    def report(self):
        """The governor's choice (threads), the step time it expects, and how often it changed its mind."""
        return {"threads_now": self.choice, "expected_step_s": self.expected, "switches": self.switches,
                "probe": self.probe, "period": self.period, "patience": self.patience}


# Not mutated: it calls glibc's mallopt via ctypes, which a test sees only by changing its own process.
def keep_freed_memory(mmap_threshold=32 << 20, trim_threshold=1 << 30):  # pragma: no mutate block
    r"""Ask glibc's malloc to keep freed blocks for reuse; returns whether it accepted (False off glibc).

    By default glibc serves a block over 128 KiB from a fresh ``mmap`` and unmaps
    it on free. Raising the mmap threshold (to its 32 MiB maximum) and the trim
    threshold keeps freed blocks in the heap, where the next step finds them (a
    caching allocator, the way PyTorch's GPU allocator works).
    """
    import ctypes.util
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3           # glibc's <malloc.h> parameter numbers
    return bool(mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(mallopt(M_TRIM_THRESHOLD, trim_threshold))


# Not mutated: it replaces the process with os.execve, which a test cannot survive.
def relaunch_with_blas_spin(module):  # pragma: no mutate block
    """Re-run ``python -m module ARGS`` once with ``BLAS_SPIN`` in its environment, unless the variable is set.

    Call it first thing under ``if __name__ == "__main__":``; a value the user
    set is kept, and the relaunched process finds it set and carries on.
    """
    if all(name in os.environ for name in BLAS_SPIN):
        return
    env = {**BLAS_SPIN, **os.environ}
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, "-m", module] + sys.argv[1:], env)
