r"""Tuning the process for speed: one explicit call, never an import.

``tune()`` is what the bench, the experiments and a long training run call
before they start; a chapter never does. It changes two things:

* **Threads for the fast kernels** (``threads.set_threads``): the fast GELU,
  softmax and attention spread blocks of rows over one thread per core.
* **Freed memory kept for reuse** (``keep_freed_memory``): glibc's allocator
  keeps freed blocks in the heap instead of handing them back to the system,
  so each training step reuses the last step's arrays instead of paying a page
  fault per 4 KiB on fresh ones. The process then keeps its peak memory until
  it exits.

A third setting can only be made before NumPy loads, so it is an environment
variable of the command, not part of ``tune()``: ``OPENBLAS_THREAD_TIMEOUT``,
how long (2^n CPU cycles) an idle OpenBLAS thread spins waiting for the next
matrix product before it sleeps. OpenBLAS's default, 2^28 cycles (about a tenth
of a second), holds a core that the fast kernels' own threads need between
products; 2^22 (about 1.6 ms) keeps the threads awake across the short gaps
between a small model's products. ``relaunch_with_blas_spin(module)`` re-runs a
``python -m`` command once with that variable set (the bench's and the
experiments' ``__main__`` do). Measurements: ``bench_results/``.
"""
import os
import sys

from . import threads

BLAS_SPIN = {"OPENBLAS_THREAD_TIMEOUT": "22"}

_state = {"threads": 1, "freed_memory_kept": False}


def tune(n_threads=None, keep_freed=True):
    """Threads for the fast kernels (default: one per core) and, on glibc, freed memory kept; returns the settings."""
    n = n_threads or os.cpu_count() or 1
    threads.set_threads(n)
    _state["threads"] = n
    if keep_freed and not _state["freed_memory_kept"]:
        _state["freed_memory_kept"] = keep_freed_memory()
    return state()


def state():
    """What ``tune()`` has changed in this process, and the BLAS spin the process started with."""
    return dict(_state, threads=threads.threads(),
                openblas_thread_timeout=os.environ.get("OPENBLAS_THREAD_TIMEOUT"))


def keep_freed_memory(mmap_threshold=32 << 20, trim_threshold=1 << 30):
    r"""Ask glibc's malloc to keep freed blocks for reuse; returns whether it accepted (False off glibc).

    By default glibc serves a block over 128 KiB from a fresh ``mmap`` and unmaps
    it on free. Raising the mmap threshold (to its 32 MiB maximum) and the trim
    threshold keeps freed blocks in the heap, where the next step finds them (a
    caching allocator, the way PyTorch's GPU allocator works).
    """
    import ctypes
    import ctypes.util
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3           # glibc's <malloc.h> parameter numbers
    return bool(mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(mallopt(M_TRIM_THRESHOLD, trim_threshold))


def relaunch_with_blas_spin(module):
    """Re-run ``python -m module ARGS`` once with ``BLAS_SPIN`` in its environment, unless the variable is set.

    Call it first thing under ``if __name__ == "__main__":``; a value the user
    set is kept, and the relaunched process finds it set and carries on.
    """
    if all(name in os.environ for name in BLAS_SPIN):
        return
    env = {**BLAS_SPIN, **os.environ}
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, "-m", module] + sys.argv[1:], env)
