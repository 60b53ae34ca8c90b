r"""The one place that knows which array library runs.

Every other module in ``mini_transformer`` computes through ``xp``, a stand-in
for the active array module (NumPy by default, CuPy on a GPU), and never
imports NumPy itself. That is what keeps the GPU path real.

Choose the backend with the environment variable ``MT_BACKEND`` (``numpy``,
``cupy`` or ``strict``) before the first import, or with ``set_backend(name)``
at any time before you build tensors.

Other settings, read once at import: ``MT_THREADS`` (threads for large
elementwise kernels, one per core by default), ``MT_KEEP_FREED_MEMORY=0``
(leave glibc's allocator as it is, see ``keep_freed_memory``), and
``OPENBLAS_THREAD_TIMEOUT`` (set to 22 unless you set it, see below).

``strict`` is NumPy wearing CuPy's manners: its arrays refuse implicit
conversion to NumPy, and refuse to mix with plain NumPy arrays, exactly where
CuPy's would. The engine's tests run under it, so a host/device leak fails on
a CPU machine instead of on the first GPU a reader borrows.
"""
import contextlib
import os
import threading

# After a matrix product an idle OpenBLAS thread spins for 2^n CPU cycles, waiting for the next one, before it
# sleeps; n = OPENBLAS_THREAD_TIMEOUT, 28 by default (about a tenth of a second), clamped to [4, 30]. A
# sleeping thread costs a wake-up at the next product; a spinning one holds a core. n = 22 (about 1.6 ms)
# keeps the threads awake across the short gaps between a small model's products and lets them sleep
# during the long elementwise stretches in which this engine's own threads (``parallel_rows``) need that
# core. Measured in alternating runs on 2 cores, ms a step: workbook 14.6 (n = 4), 14.1 (18), 13.5 (20),
# 13.0 (22), 13.4 (24); larger 220 (4), 225 (20), 232 (22), and in other pairings 242 (20) against 291 (24),
# 228 (20) against 220 (22). OpenBLAS reads this when NumPy is first imported, so it acts only when this
# import comes first; a value you set yourself wins.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "22")

import numpy as np  # noqa: E402  host NumPy: only for I/O, data on the host and the strict stand-in

hostnp = np  # what other modules use for host-side work (file I/O, data pipelines)

BACKENDS = ("numpy", "cupy", "strict")


# ---------------------------------------------------------------------------
# The strict stand-in: NumPy arrays that behave like CuPy's at the boundary
# ---------------------------------------------------------------------------

class StrictArray(np.lib.mixins.NDArrayOperatorsMixin):
    """A NumPy array behind a wall: it converts to NumPy only through ``.get()``."""

    __slots__ = ("_a",)
    __array_priority__ = 100

    def __init__(self, a):
        self._a = a

    # Implicit conversion is exactly what CuPy refuses.
    def __array__(self, *args, **kwargs):
        raise TypeError(
            "Implicit conversion of a strict-backend array to a NumPy array is not allowed "
            "(CuPy refuses it too); call backend.to_numpy(x) where you really need host data.")

    def get(self):
        """Explicit transfer to the host, as ``cupy.ndarray.get()``."""
        return self._a.copy()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(_unwrap(x, ufunc.__name__) for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(_unwrap(x, ufunc.__name__) for x in kwargs["out"])
        return _wrap(getattr(ufunc, method)(*inputs, **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        return _wrap(func(*_unwrap_tree(args, func.__name__), **_unwrap_tree(kwargs, func.__name__)))

    # Attributes and methods fall through to the wrapped array, results rewrapped.
    def __getattr__(self, name):
        if name.startswith("__"):  # no __array_interface__ or buffer back door to NumPy
            raise AttributeError(name)
        attr = getattr(self._a, name)
        if callable(attr):
            return lambda *a, **k: _wrap(attr(*_unwrap_tree(a, name), **_unwrap_tree(k, name)))
        return _wrap(attr)

    def __getitem__(self, idx):
        return _wrap(self._a[_unwrap_tree(idx, "__getitem__")])

    def __setitem__(self, idx, value):
        self._a[_unwrap_tree(idx, "__setitem__")] = _unwrap(value, "__setitem__")

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (_wrap(x) for x in self._a)

    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __bool__(self):
        return bool(self._a)

    def __index__(self):
        return self._a.__index__()

    def __repr__(self):
        return "strict_" + repr(self._a)

    @property
    def T(self):
        return StrictArray(self._a.T)

    @property
    def shape(self):
        return self._a.shape

    @property
    def dtype(self):
        return self._a.dtype

    @property
    def ndim(self):
        return self._a.ndim

    @property
    def size(self):
        return self._a.size

    @property
    def nbytes(self):
        return self._a.nbytes


def _unwrap(x, where):
    if isinstance(x, StrictArray):
        return x._a
    if isinstance(x, np.ndarray):
        raise TypeError(
            f"{where} mixed a host NumPy array of shape {x.shape} with a strict-backend array; "
            "CuPy refuses this. Move it with backend.asarray(x) first.")
    return x


def _unwrap_tree(x, where):
    if isinstance(x, tuple):
        return tuple(_unwrap_tree(v, where) for v in x)
    if isinstance(x, list):
        return [_unwrap_tree(v, where) for v in x]
    if isinstance(x, dict):
        return {k: _unwrap_tree(v, where) for k, v in x.items()}
    return _unwrap(x, where)


def _wrap(x):
    if isinstance(x, np.ndarray):
        return StrictArray(x)
    if isinstance(x, np.generic):  # CuPy returns 0-d arrays where NumPy returns scalars
        return StrictArray(np.asarray(x))
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    if isinstance(x, list):
        return [_wrap(v) for v in x]
    return x


class _StrictNamespace:
    """``numpy`` (or one of its submodules) seen through the strict wall."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        attr = getattr(self._module, name)
        if isinstance(attr, type) or isinstance(attr, np.dtype):
            return attr  # dtypes and classes pass through untouched
        if hasattr(attr, "__name__") and type(attr).__name__ == "module":
            return _StrictNamespace(attr)
        if callable(attr):
            def call(*args, **kwargs):
                return _wrap(attr(*_unwrap_tree(args, name), **_unwrap_tree(kwargs, name)))
            call.__name__ = name
            return call
        return attr

    def asarray(self, x, dtype=None):
        if isinstance(x, StrictArray):
            return x if dtype is None or x.dtype == dtype else StrictArray(x._a.astype(dtype))
        if isinstance(x, np.ndarray):
            raise TypeError("strict.asarray was given a host NumPy array; use backend.asarray, "
                            "which is the explicit transfer (cupy.asarray copies host data too).")
        return StrictArray(np.asarray(x, dtype=dtype))

    array = asarray


strict = _StrictNamespace(np)


# ---------------------------------------------------------------------------
# Choosing the backend
# ---------------------------------------------------------------------------

_module = np
_name = "numpy"


def _load_cupy():
    try:
        import cupy
    except ImportError as e:
        raise RuntimeError(
            "The CuPy backend was requested, but CuPy is not installed. Install the wheel that "
            "matches your CUDA version, for example `pip install cupy-cuda12x`, or use "
            "MT_BACKEND=numpy.") from e
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # CUDARuntimeError without a driver
        raise RuntimeError(
            f"The CuPy backend was requested and CuPy is installed, but no usable GPU was found "
            f"({e}). Run on a machine with an NVIDIA GPU and driver, or use MT_BACKEND=numpy.") from e
    if n < 1:
        raise RuntimeError("The CuPy backend was requested and CuPy is installed, but it sees no "
                           "GPU. Run on a machine with an NVIDIA GPU, or use MT_BACKEND=numpy.")
    return cupy


def set_backend(name):
    """Make ``name`` ('numpy', 'cupy' or 'strict') the active array library."""
    global _module, _name
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {name!r}.")
    if name == "numpy":
        _module = np
    elif name == "strict":
        _module = strict
    else:
        _module = _load_cupy()
    _name = name
    vars(xp).clear()        # forget the functions the stand-in remembered from the previous backend


def get_backend():
    """Name of the active backend."""
    return _name


@contextlib.contextmanager
def using(name):
    """Run a block under another backend, then restore the previous one."""
    previous = _name
    set_backend(name)
    try:
        yield
    finally:
        set_backend(previous)


class _Active:
    """``xp.exp(...)`` is ``numpy.exp`` or ``cupy.exp``, whichever is active now.

    Each name is looked up on the active module once and then kept on the
    stand-in, so later uses are a plain attribute read; ``set_backend`` forgets
    them all.
    """

    def __getattr__(self, name):
        value = getattr(_module, name)
        setattr(self, name, value)
        return value

    def __repr__(self):
        return f"<active array module: {_name}>"


xp = _Active()


def is_array(x):
    """True for an array of the active backend."""
    if _name == "strict":
        return isinstance(x, StrictArray)
    return isinstance(x, _module.ndarray)


def asarray(x, dtype=None):
    """Move ``x`` (a NumPy array, list or scalar) onto the active backend."""
    if _name == "strict":
        if isinstance(x, StrictArray):
            return x if dtype is None or x.dtype == dtype else StrictArray(x._a.astype(dtype))
        return StrictArray(np.array(x, dtype=dtype))
    return _module.asarray(x, dtype=dtype)


def to_numpy(x):
    """Bring an array of any backend (or a Tensor) back to host NumPy."""
    if hasattr(x, "data") and not isinstance(x, (np.ndarray, StrictArray)) and hasattr(x, "requires_grad"):
        x = x.data  # a Tensor
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, StrictArray):
        return x.get()
    if hasattr(x, "get"):  # cupy.ndarray
        return x.get()
    return np.asarray(x)


_pool = None


_threads = max(1, int(os.environ.get("MT_THREADS", os.cpu_count() or 1)))
_blocks_per_thread = 4
_min_parallel_work = 1 << 20


def threads():
    """Threads for large elementwise kernels and stacks of small products: ``MT_THREADS``, or one per core."""
    return _threads


def parallel_rows(kernel, n_rows, work):
    r"""Run ``kernel(start, stop)`` over the rows ``[0, n_rows)`` in blocks, on every core, in threads.

    NumPy releases the interpreter lock inside its array loops, so the blocks of
    a large elementwise kernel run on different cores at once; BLAS already
    does this for matrix products, nothing does it for ``exp`` or ``tanh``.
    There are a few blocks per core and each thread takes the next free one, so
    a core that another program slows down just does fewer blocks instead of
    holding the others up. Small work (under 2^20 elements, where handing
    blocks between threads costs more than it saves), one core, or a GPU (which
    is parallel already): one plain call. ``kernel`` must only write rows
    ``start:stop``.
    """
    global _pool
    n = threads()
    if _name == "cupy" or n < 2 or n_rows < 2 or work < _min_parallel_work:
        kernel(0, n_rows)
        return
    if _pool is None:
        import concurrent.futures
        _pool = concurrent.futures.ThreadPoolExecutor(n - 1, thread_name_prefix="mt-rows")
    n_blocks = min(n_rows, n * _blocks_per_thread)
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


def keep_freed_memory(mmap_threshold=32 << 20, trim_threshold=1 << 30):
    r"""Ask the C allocator (glibc's malloc) to keep freed blocks for reuse instead of handing them back.

    Every training step allocates and frees the same few dozen large arrays. By
    default glibc serves a block over 128 KiB from a fresh ``mmap`` and unmaps it
    on free, so the next step's array of the same size starts as untouched pages
    and pays a page fault per 4 KiB on its first write: about a fifth of a
    *larger*-configuration step. Raising the mmap threshold (to its 32 MiB
    maximum) and the trim threshold makes freed blocks stay in the heap, where
    the next step finds them (a caching allocator, the way PyTorch's GPU
    allocator works). The cost: the process keeps its peak memory until it
    exits. Called once at import unless ``MT_KEEP_FREED_MEMORY=0``; returns
    whether the allocator accepted it (False off glibc, on macOS or Windows).
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


freed_memory_kept = os.environ.get("MT_KEEP_FREED_MEMORY", "1") != "0" and keep_freed_memory()


def sum_of_products(a, b, axis=-1):
    r"""\sum a \odot b over the last axis (``axis=-1``: one number per row) or, for two 2-D arrays,
    over the rows (``axis=0``: one number per column).

    On the CPU ``einsum`` multiplies and adds in one pass with no ``a * b``
    temporary, about twice as fast as a product and then a sum. CuPy plans an
    ``einsum`` on the host at every call, which costs more than the kernel it
    saves, so on a GPU it is the product and then the sum.
    """
    if axis not in (-1, 0):
        raise ValueError(f"sum_of_products: axis must be -1 (rows) or 0 (columns), got {axis}.")
    if _name == "cupy":
        return (a * b).sum(axis=axis)
    return _module.einsum("...j,...j->..." if axis == -1 else "ij,ij->j", a, b)


def synchronize():
    """Wait for the GPU to finish queued work (a no-op on the CPU backends); timings need it."""
    if _name == "cupy":
        _module.cuda.Stream.null.synchronize()


def scatter_add(target, index, values):
    r"""``target[index] += values`` in place, where repeated indices add up (NumPy's ``add.at``)."""
    if _name == "strict":
        _host_scatter_add(target._a, _unwrap_tree(index, "scatter_add"), _unwrap(values, "scatter_add"))
    elif _name == "cupy" and not hasattr(_module.add, "at"):   # CuPy before 13 has only cupyx.scatter_add
        import cupyx
        cupyx.scatter_add(target, index, values)
    elif _name == "cupy":
        _module.add.at(target, index, values)
    else:
        _host_scatter_add(target, index, values)


def _host_scatter_add(target, index, values):
    r"""NumPy's ``add.at``, with a fast path for one integer array into the first axis (an embedding's gradient).

    ``add.at`` visits the elements one by one; sorting the ids instead puts each
    id's rows next to each other, ``add.reduceat`` sums every run of equal ids
    in one pass, and each distinct row of ``target`` is written once.
    """
    if (not isinstance(index, np.ndarray) or index.dtype.kind not in "iu" or index.size == 0
            or index.min() < 0 or index.max() >= target.shape[0]):   # add.at wraps -1 or names the bad id
        np.add.at(target, index, values)
        return
    ids = index.reshape(-1)                                   # (n,)
    rows = np.broadcast_to(values, index.shape + target.shape[1:]).reshape((ids.size,) + target.shape[1:])
    order = np.argsort(ids, kind="stable")
    ids = ids[order]                                          # sorted, equal ids side by side
    starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))   # first row of each run
    target[ids[starts]] += np.add.reduceat(rows[order], starts, axis=0)


class Generator:
    r"""A seeded random generator whose draws land on the active backend.

    Numbers are drawn on the host with NumPy's PCG64 and then moved, so a seed
    gives the same numbers on every backend: a model initialised on a GPU is
    the model initialised on a laptop.
    """

    def __init__(self, seed):
        self.seed = seed
        self._rng = np.random.default_rng(seed)

    def normal(self, loc=0.0, scale=1.0, size=None, dtype="float32"):
        return asarray(self._rng.normal(loc, scale, size).astype(dtype))

    def uniform(self, low=0.0, high=1.0, size=None, dtype="float32"):
        return asarray(self._rng.uniform(low, high, size).astype(dtype))

    def integers(self, low, high=None, size=None):
        return asarray(self._rng.integers(low, high, size))

    def permutation(self, n):
        return asarray(self._rng.permutation(n))

    def random(self, size=None, dtype="float32"):
        return asarray(self._rng.random(size).astype(dtype))

    @property
    def host(self):
        """The host NumPy generator, for data that stays on the host."""
        return self._rng


def rng(seed):
    """A seeded ``Generator`` for the active backend."""
    return Generator(seed)


set_backend(os.environ.get("MT_BACKEND", "numpy"))
