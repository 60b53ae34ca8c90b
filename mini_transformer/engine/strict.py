r"""The strict stand-in: NumPy arrays that behave like CuPy's at the host/device boundary.

``MT_BACKEND=strict`` (or ``backend.set_backend("strict")``) runs the engine on
NumPy arrays behind a wall: they refuse implicit conversion to NumPy and refuse
to mix with plain NumPy arrays, exactly where CuPy's arrays would. The engine's
tests run under it, so a host/device leak fails on a CPU machine instead of on
the first GPU a reader borrows. Nothing here is used on the NumPy or CuPy
backends.
"""
import numpy as np  # the stand-in wraps NumPy itself; nothing here imports the backend switch


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

    ndarray = StrictArray       # what backend.is_array tests against, as cupy.ndarray

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

    def from_host(self, x, dtype=None):
        """The explicit transfer ``backend.asarray`` makes: host data (or a strict array) onto the strict side."""
        if isinstance(x, StrictArray):
            return x if dtype is None or x.dtype == dtype else StrictArray(x._a.astype(dtype))
        return StrictArray(np.array(x, dtype=dtype))

    def scatter_add(self, target, index, values):
        """``target[index] += values`` with repeated indices adding up, as ``cupyx.scatter_add``."""
        np.add.at(target._a, _unwrap_tree(index, "scatter_add"), _unwrap(values, "scatter_add"))


strict = _StrictNamespace(np)
