r"""Blocks of rows on every core: what lets NumPy's elementwise loops use more than one core.

NumPy releases the interpreter lock inside its array loops, so blocks of one
large elementwise kernel can run on different cores at once; BLAS already does
this for matrix products, nothing does it for ``exp`` or ``tanh``. There are a
few blocks per thread and each thread takes the next free one, so a core that
another program slows down just does fewer blocks instead of holding the
others up.

The engine uses one thread until ``set_threads(n)`` (or ``kernels.tune()``) asks
for more; importing this module starts nothing.
"""
import threading

from .. import backend
from ..validate import check_int

_threads = 1
_pool = None
_BLOCKS_PER_THREAD = 4
MIN_PARALLEL_WORK = 1 << 20   # elements: below this, handing blocks between threads costs more than it saves


def threads():
    """How many threads the fast kernels spread their rows over (1 until ``set_threads``)."""
    return _threads


def set_threads(n):
    """Spread the fast kernels' rows over ``n`` threads (1: no threads at all); returns the previous count."""
    global _threads, _pool
    n = check_int("set_threads: n", n, minimum=1, why="1 runs everything on the calling thread")
    previous, _threads = _threads, n
    if _pool is not None and n != previous:
        _pool.shutdown()
        _pool = None
    return previous


def parallel_rows(kernel, n_rows, work):
    r"""Run ``kernel(start, stop)`` over the rows ``[0, n_rows)``, in blocks spread over ``threads()`` threads.

    ``work`` (elements) decides whether threads pay: small work, one thread, or a
    GPU (parallel already) gets one plain call. ``kernel`` must only write rows
    ``start:stop``.
    """
    global _pool
    n = _threads
    if backend.get_backend() == "cupy" or n < 2 or n_rows < 2 or work < MIN_PARALLEL_WORK:
        kernel(0, n_rows)
        return
    if _pool is None:
        import concurrent.futures
        _pool = concurrent.futures.ThreadPoolExecutor(n - 1, thread_name_prefix="mt-rows")
    n_blocks = min(n_rows, n * _BLOCKS_PER_THREAD)
    bounds = [n_rows * i // n_blocks for i in range(n_blocks + 1)]
    blocks, lock = list(zip(bounds[:-1], bounds[1:])), threading.Lock()

    def take_blocks():
        while True:
            with lock:
                if not blocks:
                    return
                start, stop = blocks.pop()
            kernel(start, stop)
    jobs = [_pool.submit(take_blocks) for _ in range(n - 1)]
    take_blocks()                                        # the calling thread works too
    for job in jobs:
        job.result()
