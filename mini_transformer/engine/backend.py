r"""The one place that knows which array library runs.

Every other module in ``mini_transformer`` computes through ``xp``, a stand-in
for the active array module (NumPy by default, CuPy on a GPU), and never
imports NumPy itself. That is what keeps the GPU path real.

Choose the backend with the environment variable ``MT_BACKEND`` (``numpy``,
``cupy`` or ``strict``) before the first import, or with ``set_backend(name)``
at any time before you build tensors. ``strict`` is NumPy behind a wall that
behaves like CuPy at the host boundary (``strict.py``).

Importing this module reads ``MT_BACKEND`` and nothing else: it sets no
environment variable, changes no allocator setting and starts no thread.
Making training fast is an explicit call, ``mini_transformer.engine.kernels.tune()``.
"""
import contextlib
import os

import numpy as np

hostnp = np  # what other modules use for host-side work (file I/O, data pipelines, plots)

BACKENDS = ("numpy", "cupy", "strict")

_module = np
_name = "numpy"
_from_host = np.asarray        # the explicit host-to-device transfer of the active library
_scatter_add = np.add.at       # target[index] += values, repeated indices adding up


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
    add_at = getattr(cupy.add, "at", None)
    if add_at is None:         # CuPy before 13 has only cupyx.scatter_add
        import cupyx
        add_at = cupyx.scatter_add
    return cupy, cupy.asarray, add_at


def _load_numpy():
    return np, np.asarray, np.add.at


def _load_strict():
    from . import strict       # strict imports NumPy itself, never this module
    return strict.strict, strict.strict.from_host, strict.strict.scatter_add


_LOADERS = {"numpy": _load_numpy, "cupy": _load_cupy, "strict": _load_strict}


def set_backend(name):
    """Make ``name`` ('numpy', 'cupy' or 'strict') the active array library."""
    global _module, _name, _from_host, _scatter_add
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {name!r}.")
    _module, _from_host, _scatter_add = _LOADERS[name]()
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
    return isinstance(x, _module.ndarray)


def asarray(x, dtype=None):
    """Move ``x`` (a NumPy array, list or scalar) onto the active backend."""
    return _from_host(x, dtype)


def to_numpy(x):
    """Bring an array of any backend (or a Tensor) back to host NumPy."""
    if hasattr(x, "requires_grad") and hasattr(x, "data"):
        x = x.data  # a Tensor
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "get"):  # cupy.ndarray, or the strict stand-in's array
        return x.get()
    return np.asarray(x)


def synchronize():
    """Wait for the GPU to finish queued work (a no-op on the CPU backends); timings need it."""
    if _name == "cupy":
        _module.cuda.Stream.null.synchronize()


def scatter_add(target, index, values):
    r"""``target[index] += values`` in place, where repeated indices add up (NumPy's ``add.at``)."""
    _scatter_add(target, index, values)


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
