r"""Values on the wire: what the grader sends the graded process, what comes back, what a release stores.

Plain JSON with a tag per value, never pickle: the graded process is untrusted, and unpickling
its answer would run its code in the grader. Arrays travel as dtype, shape and base64 bytes;
anything the grader cannot rebuild comes back as an ``Opaque`` that keeps its type name, its
shape (if it has one) and a short repr, which is all the feedback needs.
"""
import base64
import inspect
import numbers

import numpy as np

MAX_ELEMENTS = 1 << 22  # an output bigger than this (32 MB of float64) comes back as its shape only
MAX_ITEMS = 10_000  # longer lists and tuples come back as Opaque
MAX_DEPTH = 8
MAX_TEXT = 2_000  # characters kept of a string or a repr


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
        self._name, self._params, self._calls = name, [tuple(p) for p in params], calls
        for k, v in attrs.items():
            setattr(self, k, v)

    @classmethod
    def of(cls, obj, calls, attrs=()):
        r"""Record ``obj``'s answers to ``calls``, a list of ``(args, kwargs)``, and the ``attrs`` named."""
        params = [(p.name, p.default if p.default is not p.empty else _REQUIRED)
                  for p in inspect.signature(obj).parameters.values()]
        stand_in = cls(type(obj).__name__, params, {a: getattr(obj, a) for a in attrs}, {})
        for args, kwargs in calls:
            stand_in._calls[stand_in._key(args, kwargs)] = obj(*args, **kwargs)
        return stand_in

    def _key(self, args, kwargs):
        if len(args) > len(self._params):
            raise TypeError(f"{self._name}() takes {len(self._params)} arguments, got {len(args)}.")
        bound = dict(zip([n for n, _ in self._params], args))
        for k, v in kwargs.items():
            if k not in [n for n, _ in self._params] or k in bound:
                raise TypeError(f"{self._name}() got an unexpected or repeated argument {k!r}.")
            bound[k] = v
        values = []
        for name, default in self._params:
            v = bound.get(name, default)
            if v is _REQUIRED:
                raise TypeError(f"{self._name}() is missing the argument {name!r}.")
            values.append(_canonical(v))
        return tuple(values)

    def __call__(self, *args, **kwargs):
        key = self._key(args, kwargs)
        if key not in self._calls:
            known = "; ".join(self._show(k) for k in self._calls)
            raise LookupError(f"the grader's stand-in for {self._name} answers only the calls this case needs "
                              f"({known}); your code called {self._show(key)}. Call it the way the docstring "
                              "says.")
        return decode(encode(self._calls[key]))  # a fresh copy each call

    def _show(self, key):
        return f"{self._name}(" + ", ".join(f"{n}={v!r}" for (n, _), v in zip(self._params, key)) + ")"

    def __repr__(self):
        return f"<stand-in for {self._name}>"


class _Required:
    def __repr__(self):
        return "<required>"


_REQUIRED = _Required()


def _canonical(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    return repr(v)


def _array(a):
    a = np.ascontiguousarray(a)
    return {"t": "a", "d": a.dtype.str, "s": list(a.shape), "b": base64.b64encode(a.tobytes()).decode()}


def _short(text):
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."


def _opaque(x):
    try:
        text = _short(repr(x))
    except Exception:  # a reader's object whose repr raises
        text = ""
    t = type(x)
    name = t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"
    shape = getattr(x, "shape", None)
    try:
        shape = [int(n) for n in shape] if shape is not None else None
    except (TypeError, ValueError):
        shape = None
    return {"t": "o", "type": name, "r": text, "s": shape}


def encode(x, depth=0):
    """``x`` as JSON-safe data; never raises on a reader's object."""
    try:
        if depth > MAX_DEPTH:
            return _opaque(x)
        if x is None:
            return {"t": "n"}
        if isinstance(x, Opaque):
            return {"t": "o", "type": x.type_name, "r": x.text, "s": list(x.shape) if x.shape is not None else None,
                    "d": x.dtype.str if x.dtype is not None else None}
        if isinstance(x, Recorded):
            return {"t": "rec", "name": x._name, "params": [[n, encode(d, depth + 1)] for n, d in x._params],
                    "attrs": {k: encode(v, depth + 1) for k, v in vars(x).items() if not k.startswith("_")},
                    "calls": [[encode(list(k), depth + 1), encode(v, depth + 1)] for k, v in x._calls.items()]}
        if isinstance(x, _Required):
            return {"t": "req"}
        if type(x) is bool:
            return {"t": "b", "v": x}
        if type(x) is int:
            return {"t": "i", "v": str(x)}
        if type(x) is float:
            return {"t": "f", "v": repr(x)}
        if type(x) is str:
            return {"t": "str", "v": _short(x)}
        if isinstance(x, np.generic) and x.dtype.kind in "biufc":
            return {"t": "g", "d": x.dtype.str, "b": base64.b64encode(x.tobytes()).decode()}
        if isinstance(x, np.ndarray) and x.dtype.kind in "biufc":
            if x.size > MAX_ELEMENTS:
                return {"t": "o", "type": "numpy.ndarray", "r": f"an array of {x.size} elements", "s": list(x.shape),
                        "d": x.dtype.str}
            return _array(x)
        if type(x) in (tuple, list) and len(x) <= MAX_ITEMS:
            return {"t": type(x).__name__, "v": [encode(v, depth + 1) for v in x]}
        if type(x) is dict and len(x) <= MAX_ITEMS and all(type(k) is str for k in x):
            return {"t": "dict", "v": {k: encode(v, depth + 1) for k, v in x.items()}}
        return _opaque(x)
    except Exception:  # a reader's subclass that misbehaves under inspection
        return {"t": "o", "type": "unknown", "r": "", "s": None}


def decode(d):
    """The value ``encode`` described (arrays as host NumPy arrays)."""
    t = d["t"]
    if t == "n":
        return None
    if t == "b":
        return bool(d["v"])
    if t == "i":
        return int(d["v"])
    if t == "f":
        return float(d["v"])
    if t == "str":
        return str(d["v"])
    if t == "a":
        raw = base64.b64decode(d["b"])
        return np.frombuffer(raw, dtype=np.dtype(d["d"])).reshape(d["s"]).copy()
    if t == "g":
        return np.frombuffer(base64.b64decode(d["b"]), dtype=np.dtype(d["d"]))[0]
    if t == "tuple":
        return tuple(decode(v) for v in d["v"])
    if t == "list":
        return [decode(v) for v in d["v"]]
    if t == "dict":
        return {k: decode(v) for k, v in d["v"].items()}
    if t == "req":
        return _REQUIRED
    if t == "rec":
        calls = {tuple(decode(k)): decode(v) for k, v in d["calls"]}
        return Recorded(d["name"], [(n, decode(v)) for n, v in d["params"]],
                        {k: decode(v) for k, v in d["attrs"].items()}, calls)
    if t == "o":
        return Opaque(d["type"], d.get("r", ""), d.get("s"), d.get("d"))
    raise ValueError(f"unknown value tag {t!r} on the wire")
