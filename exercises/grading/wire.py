r"""Values between the processes and in stored data: one ``.npz``, its arrays as arrays, the rest as JSON.

``dumps(value)`` is ``np.savez`` of every array in ``value`` (entries ``0``, ``1``, ...) and of
``value`` itself as JSON (entry ``value``), each array replaced by ``{"array": n}``; ``loads`` reads
it back with ``np.load(allow_pickle=False)``. Never pickle: the graded process is untrusted, and
unpickling its answer would run its code in the grader. JSON has no tuples, NumPy scalars or
objects, so those get a one-key tag (``{"tuple": [...]}``); anything the grader cannot rebuild
becomes an ``Opaque`` that keeps its type name, its shape (if it has one) and a short repr, which is
all the feedback needs. ``plain(x)`` is ``x`` as the other side will see it (a copy).
"""
import inspect
import io
import json
import numbers
import zipfile

import numpy as np

MAX_ELEMENTS = 1 << 16  # a graded output bigger than this comes back as its shape only (the largest case: 3,200)
MAX_ITEMS = 10_000  # longer lists and tuples come back as Opaque
MAX_DEPTH = 12  # nesting kept: a held-out case of chapter 13 (a config dict of dicts inside its case) goes past 8
MAX_TEXT = 2_000  # characters kept of a string or a repr
MAX_BYTES = 256 << 20  # the most ``loads`` unpacks


class Opaque:
    """A value the grader does not rebuild: its type's name, its shape if any, and a short repr."""

    def __init__(self, type_name, text="", shape=None, dtype=None):
        self.type_name, self.text = type_name, text
        self.shape = tuple(shape) if shape is not None else None
        self.dtype = np.dtype(dtype) if dtype is not None else None

    def __repr__(self):
        return self.text or f"<{self.type_name}>"


class Recorded:
    r"""A stand-in object that answers calls from a table the grader recorded with the reference.

    A case can hand the reader's function an object instead of an array, e.g. the ``rotary``
    argument of ``relative_score``. The graded process never sees the reference: it gets this
    stand-in, whose ``__call__`` binds its arguments like the original's and returns the
    recorded answer, and whose attributes are the original's values.
    """

    def __init__(self, name, params, attrs, calls):
        self._name, self._calls = name, calls
        self._params = [tuple(p) for p in params]  # (name,) or (name, default)
        for k, v in attrs.items():
            setattr(self, k, v)

    @classmethod
    def of(cls, obj, calls, attrs=()):
        r"""Record ``obj``'s answers to ``calls``, a list of ``(args, kwargs)``, and the ``attrs`` named."""
        params = [(p.name,) if p.default is p.empty else (p.name, p.default)
                  for p in inspect.signature(obj).parameters.values()]
        stand_in = cls(type(obj).__name__, params, {a: getattr(obj, a) for a in attrs}, {})
        for args, kwargs in calls:
            stand_in._calls[stand_in._key(args, kwargs)] = obj(*args, **kwargs)
        return stand_in

    def _key(self, args, kwargs):
        P = inspect.Parameter
        signature = inspect.Signature([P(p[0], P.POSITIONAL_OR_KEYWORD, default=p[1] if len(p) > 1 else P.empty)
                                       for p in self._params])
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self._name}(): {e}") from None
        bound.apply_defaults()
        return tuple(_canonical(v) for v in bound.arguments.values())

    def __call__(self, *args, **kwargs):
        key = self._key(args, kwargs)
        if key not in self._calls:
            known = "; ".join(self._show(k) for k in self._calls)
            raise LookupError(f"the grader's stand-in for {self._name} answers only the calls this case needs "
                              f"({known}); your code called {self._show(key)}. Call it the way the docstring "
                              "says.")
        return plain(self._calls[key])  # a fresh copy each call

    def _show(self, key):
        return f"{self._name}(" + ", ".join(f"{p[0]}={v!r}" for p, v in zip(self._params, key)) + ")"

    def __repr__(self):
        return f"<stand-in for {self._name}>"


def _canonical(v):
    r"""An argument as part of a key of the recorded table: numbers by value, anything else by its repr."""
    for kind, cast in (((bool, np.bool_), bool), (numbers.Integral, int), (numbers.Real, float)):
        if isinstance(v, kind):
            return cast(v)
    return repr(v)


def type_name(x):
    """``x``'s type as the feedback names it: ``float``, ``numpy.ndarray``."""
    if isinstance(x, Opaque):
        return x.type_name
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def _short(text):
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."


def _opaque(x):
    try:
        text = _short(repr(x))
    except Exception:  # a reader's object whose repr raises
        text = ""
    shape = getattr(x, "shape", None)
    try:
        shape = [int(n) for n in shape] if shape is not None else None
    except (TypeError, ValueError):
        shape = None
    return Opaque(type_name(x), text, shape)


def _pack(x, arrays, limit, depth=0):
    r"""``x`` as JSON data, its arrays appended to ``arrays``; never raises on a reader's object."""
    try:
        if x is None or type(x) in (bool, float) or type(x) is int and x.bit_length() < 64:
            return x
        if type(x) is str:
            return _short(x) if limit else x
        if depth > MAX_DEPTH:
            pass
        elif isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind in "biufc":
            if not limit or x.size <= limit:
                arrays.append(np.array(x))  # a copy; a NumPy scalar becomes a 0-d array
                return {"scalar" if isinstance(x, np.generic) else "array": len(arrays) - 1}
            x = Opaque("numpy.ndarray", f"an array of {x.size} elements", x.shape, x.dtype)
        elif type(x) in (list, tuple) and len(x) <= MAX_ITEMS:
            items = [_pack(v, arrays, limit, depth + 1) for v in x]
            return items if type(x) is list else {"tuple": items}
        elif type(x) is dict and len(x) <= MAX_ITEMS and all(type(k) is str for k in x):
            return {"dict": {k: _pack(v, arrays, limit, depth + 1) for k, v in x.items()}}
        elif isinstance(x, Recorded):
            attrs = {k: v for k, v in vars(x).items() if not k.startswith("_")}
            return {"recorded": _pack([x._name, x._params, attrs, list(x._calls.items())], arrays, None)}
        x = x if isinstance(x, Opaque) else _opaque(x)
        return {"opaque": [x.type_name, x.text, list(x.shape) if x.shape is not None else None,
                           x.dtype.str if x.dtype is not None else None]}
    except Exception:  # a reader's subclass that misbehaves under inspection
        return {"opaque": ["unknown", "", None, None]}


def _unpack(d, arrays):
    if isinstance(d, list):
        return [_unpack(v, arrays) for v in d]
    if not isinstance(d, dict):
        return d
    (tag, v), = d.items()
    if tag in ("array", "scalar"):
        return arrays[v] if tag == "array" else arrays[v][()]
    if tag == "tuple":
        return tuple(_unpack(x, arrays) for x in v)
    if tag == "dict":
        return {k: _unpack(x, arrays) for k, x in v.items()}
    if tag == "recorded":
        name, params, attrs, calls = _unpack(v, arrays)
        return Recorded(name, params, attrs, dict(calls))
    if tag == "opaque":
        return Opaque(*v)
    raise ValueError(f"unknown value tag {tag!r} on the wire")


def plain(x, limit=MAX_ELEMENTS):
    r"""``x`` as the other side of the wire sees it: a copy, with arrays over ``limit`` elements and
    everything else the grader does not rebuild made ``Opaque``."""
    arrays = []
    return _unpack(_pack(x, arrays, limit), arrays)


def dumps(value):
    """``value`` as the bytes of one ``.npz``."""
    arrays = []
    text = json.dumps(_pack(value, arrays, None))
    out = io.BytesIO()
    np.savez(out, value=np.array(text), **{str(n): a for n, a in enumerate(arrays)})
    return out.getvalue()


def loads(data):
    """The value ``dumps`` wrote; refuses an archive that would unpack to more than ``MAX_BYTES``."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        if sum(i.file_size for i in z.infolist()) > MAX_BYTES:
            raise ValueError(f"the archive unpacks to more than {MAX_BYTES >> 20} MB")
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        arrays = [z[str(n)] for n in range(len(z.files) - 1)]
        return _unpack(json.loads(str(z["value"])), arrays)
