r"""The grader's plumbing: what a check is made of, and how an output is judged.

A checks file, ``exercises/grading/modules/<module>/checks.py``, lists ``TARGETS``: one ``Target`` per
function or class the reader writes. A target has cases (fixed seeds, float64 unless the case
is the float32 one) and misconceptions: small host-NumPy implementations of the mistakes
readers make.

The grader's process turns a target into a ``Compiled`` check, which is data only: the cases'
inputs, the reference's outputs (from ``solutions/``) and every misconception's outputs; it is
what the stored form of a module holds (``knowledge.py``). The reader's code runs elsewhere
(``worker.py``) and sends back what it returned; ``judge`` then decides here, in layers
(signature, type, shape, dtype, NaN, misconception, numbers), and its feedback never quotes code.
"""
import copy
import inspect
import numbers
from dataclasses import dataclass, field

import numpy as np  # host NumPy: the grader compares on the host

from exercises.grading.wire import Opaque, Recorded, type_name as _type_name

# ---------------------------------------------------------------------------
# What a check is made of
# ---------------------------------------------------------------------------


@dataclass
class Case:
    """One call: ``impl(*args, **kwargs)``, or for a class ``impl(*args, **kwargs)(*call_args, **call_kwargs)``."""
    label: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    call_args: tuple = ()
    call_kwargs: dict = field(default_factory=dict)
    show: str = ""  # the input, as the feedback prints it
    raises: str = ""  # the exception the reference raises here ("ValueError"); the reader's must too (last case only)


@dataclass
class Misconception:
    key: str  # stable name, asserted by tests/grading/test_grader.py
    title: str  # shown to the reader
    hint: str  # what to look at
    impl: object  # same calling convention as the target, host NumPy
    match_tol: tuple = None  # (rtol, atol) to recognise it; default: the tolerance of the expected dtype


@dataclass
class Target:
    name: str  # the function or class in solutions/<module>.py
    output: str  # "array", "int_array", "cos_sin" or "float"
    cases: object  # () -> list[Case]
    misconceptions: list
    methods: tuple = ()  # for a class: the methods the reader writes
    elementwise_arg: str = ""  # name of an input whose entries line up with the output's
    dtype_hint: str = ""
    module: str = ""  # set from the checks file's name when it is loaded
    held_out: object = None  # () -> list[Case]: cases a student copy never holds (``HELD_OUT`` of the checks file)

    @property
    def key(self):
        return f"{self.module}.{self.name}"


def normal(shape, seed, dtype=np.float64):
    """Standard normal numbers from a fixed seed, as a host array."""
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def show(name, a, note=""):
    """An input as the feedback prints it: the values when small, else shape and dtype."""
    a = np.asarray(a)
    if a.size <= 16:
        return f"{name} = {np.array2string(a, precision=4, separator=', ')}"
    return f"{name}: shape {a.shape}, {a.dtype}{', ' + note if note else ''}"


def invoke(impl, case, is_class):
    """Call ``impl`` on a case, the way the reader's code is called."""
    if is_class:
        return impl(*case.args, **case.kwargs)(*case.call_args, **case.call_kwargs)
    return impl(*case.args, **case.kwargs)


def arrays_in(case):
    """The input arrays of a case, in a fixed order (to see whether a call wrote into them)."""
    return [a for a in list(case.args) + list(case.kwargs.values()) + list(case.call_args)
            + list(case.call_kwargs.values()) if isinstance(a, np.ndarray)]


# ---------------------------------------------------------------------------
# Compiled checks: data only, made in the grader's process or read from a release
# ---------------------------------------------------------------------------

def signature_of(obj):
    """``[[name, kind, repr(default)]]`` of a callable, or None when it has no signature."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [[p.name, int(p.kind), repr(p.default) if p.default is not p.empty else None]
            for p in sig.parameters.values()]


def signature_text(name, obj):
    try:
        return f"{name}{inspect.signature(obj)}"
    except (TypeError, ValueError):
        return f"{name}(?)"


def signatures(name, obj, methods):
    """``{qualname: {"params", "text"}}`` of a function, or of the methods of a class the reader writes."""
    if not methods:
        return {name: {"params": signature_of(obj), "text": signature_text(name, obj)}}
    out = {}
    for m in methods:
        meth = obj.__dict__.get(m, getattr(obj, m, None)) if isinstance(obj, type) else None
        out[f"{name}.{m}"] = ({"params": signature_of(meth), "text": signature_text(f"{name}.{m}", meth)}
                              if meth is not None else None)
    return out


@dataclass
class Compiled:
    r"""Everything the grader's process needs to judge one target, as data."""
    module: str
    name: str
    label: str
    output: str
    methods: tuple
    elementwise_arg: str
    dtype_hint: str
    signatures: dict
    cases: list  # [Case], inputs as host objects
    expected: list  # the reference's outputs, normalised
    misconceptions: list  # [{"key", "title", "hint", "match_tol", "outputs": [normalised or None]}]
    siblings: str = None  # the reference's file without this exercise and the reader tests (None in a student copy)
    held: dict = None  # the held-out cases, compiled: {"cases", "expected", "outputs"} (None in a student copy)

    kind = "target"
    held_out_view = False  # True on the view that holds the held-out cases alone

    @property
    def key(self):
        return f"{self.module}.{self.name}"

    @property
    def is_class(self):
        return bool(self.methods)

    def stored(self):
        """As the stored form holds it: plain data (``wire``)."""
        held = self.held and dict(self.held, cases=[vars(c) for c in self.held["cases"]])
        return dict(vars(self), cases=[vars(c) for c in self.cases], held=held)

    @classmethod
    def from_stored(cls, d):
        held = d.get("held")
        held = held and dict(held, cases=[Case(**c) for c in held["cases"]])
        return cls(**dict(d, cases=[Case(**c) for c in d["cases"]], held=held))

    def without_held_out(self):
        """This check as a student copy stores it: the public cases alone."""
        return copy.copy(self) if self.held is None else Compiled(**dict(vars(self), held=None))

    def held_out_check(self):
        r"""The same check over the held-out cases alone (None when it has none): judged like the public one."""
        if not self.held:
            return None
        mis = [dict(m, outputs=outs) for m, outs in zip(self.misconceptions, self.held["outputs"])]
        view = Compiled(**dict(vars(self), cases=self.held["cases"], expected=self.held["expected"],
                               misconceptions=mis, held=None))
        view.held_out_view = True
        return view


def compile_target(target, reference, label, siblings=None):
    r"""Run the reference and every misconception on the target's cases, in this process."""
    cases = target.cases()
    is_class = bool(target.methods)
    if any(c.raises for c in cases[:-1]):  # the worker stops at the first raise, so only the last case may
        raise ValueError(f"{target.key}: only the last case may expect an error (raises=...).")
    expected = [_expected(target, reference, c, is_class) for c in cases]
    mis = [{"key": m.key, "title": m.title, "hint": m.hint, "match_tol": m.match_tol,
            "outputs": _outputs_of(target, m, cases, is_class)} for m in target.misconceptions]
    held = None
    if target.held_out is not None:
        extra = target.held_out()
        if any(c.raises for c in extra[:-1]):
            raise ValueError(f"{target.key}: only the last held-out case may expect an error (raises=...).")
        held = {"cases": extra, "expected": [_expected(target, reference, c, is_class) for c in extra],
                "outputs": [_outputs_of(target, m, extra, is_class) for m in target.misconceptions]}
    return Compiled(target.module, target.name, label, target.output, tuple(target.methods), target.elementwise_arg,
                    target.dtype_hint, signatures(target.name, reference, target.methods), cases, expected, mis,
                    siblings, held)


def _outputs_of(target, m, cases, is_class):
    """A misconception's normalised outputs on ``cases``; None where it cannot run."""
    outs = []
    for case in cases:
        try:
            outs.append(_norm(target.output, invoke(m.impl, copy.deepcopy(case), is_class)))
        except Exception:  # a misconception that cannot run on this case never matches it
            outs.append(None)
    return outs


def _expected(target, reference, case, is_class):
    """The reference's normalised output on a case, or None on a case where it must raise ``case.raises``."""
    if not case.raises:
        return _norm(target.output, invoke(reference, copy.deepcopy(case), is_class))
    try:
        invoke(reference, copy.deepcopy(case), is_class)
    except Exception as e:
        if type(e).__name__ == case.raises:
            return None
        raise
    raise ValueError(f"{target.key}, case {case.label!r}: the reference returns instead of raising {case.raises}.")


# ---------------------------------------------------------------------------
# Judging what the reader's code returned
# ---------------------------------------------------------------------------

def result(c, status, kind, message, misconception=None):
    return {"target": c.key, "label": c.label, "status": status, "kind": kind, "misconception": misconception,
            "message": message}


def _shape_note(x):
    shape = getattr(x, "shape", None)
    return f" of shape {shape}" if shape is not None else ""


def _big_array(x):
    return isinstance(x, Opaque) and x.type_name == "numpy.ndarray" and x.shape is not None


def _form(output, out, exp):
    """The first type, shape or dtype problem of one output, as (kind, sentence), or None."""
    if output == "float":
        ok = (isinstance(out, numbers.Real) and not isinstance(out, (bool, np.bool_))) or \
             (isinstance(out, np.ndarray) and out.shape == () and np.issubdtype(out.dtype, np.floating))
        return None if ok else ("type", f"returned {_type_name(out)}{_shape_note(out)}; expected a Python float "
                                        "(float(...) of the summed products).")
    if output == "cos_sin":
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            return ("type", f"returned {_type_name(out)}{_shape_note(out)}; expected a tuple (cos, sin) of two arrays.")
        for name, o, e in zip(("cos", "sin"), out, exp):
            if not isinstance(o, np.ndarray) and not _big_array(o):
                return ("type", f"{name} is {_type_name(o)}; expected an array.")
            if o.shape != e.shape:
                return ("shape", f"{name} has shape {o.shape}; expected (T, d_head) = {e.shape}.")
            if o.dtype != e.dtype:
                return ("dtype", f"{name} is {o.dtype}; expected {e.dtype}.")
        return None
    if not isinstance(out, np.ndarray) and not _big_array(out):
        return ("type", f"returned {_type_name(out)}; expected an array of the active backend (xp.ndarray).")
    if out.shape != exp.shape:
        return ("shape", f"returned shape {out.shape}; expected {exp.shape}.")
    if output == "int_array":
        if not np.issubdtype(out.dtype, np.integer):
            return ("dtype", f"returned dtype {out.dtype}; expected an integer array.")
    elif out.dtype != exp.dtype:
        return ("dtype", f"returned dtype {out.dtype}; expected {exp.dtype}.")
    return None


def _norm(output, out):
    """Host copy of an output, for comparisons."""
    from mini_transformer.engine.backend import to_numpy
    if output == "float":
        return float(out)
    if output == "cos_sin":
        return tuple(np.array(to_numpy(o)) for o in out)
    return np.array(to_numpy(out))


def _norm_or_none(output, out):
    try:
        return _norm(output, out)
    except Exception:  # an output of the wrong form (an array too big to send back) matches nothing
        return None


def _tol(dtype):
    return (1e-5, 1e-5) if np.dtype(dtype) == np.float32 else (1e-9, 1e-9)


def _parts(output, out):
    """An output as named arrays: [('', a)] or [('cos', c), ('sin', s)]."""
    if output == "cos_sin":
        return [("cos", out[0]), ("sin", out[1])]
    if output == "float":
        return [("", np.array(out))]
    return [("", out)]


def _close(output, a, b, dtype=None, tol=None):
    for (_, x), (_, y) in zip(_parts(output, a), _parts(output, b)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return False
        if output == "int_array":
            if not np.array_equal(x, y):
                return False
            continue
        rtol, atol = tol or _tol(dtype if dtype is not None else y.dtype)
        if not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=False):
            return False
    return True


def _dtype_of(output, e, case):
    """The dtype whose tolerance applies: the output's, or for a float score its inputs'."""
    if output == "cos_sin":
        return e[0].dtype
    if output == "float":
        return np.float32 if any(a.dtype == np.float32 for a in arrays_in(case)) else np.float64
    return e.dtype


def _match(c, cand):
    """The first misconception whose outputs match the candidate's on every case."""
    for m in c.misconceptions:
        differs, ok = False, True
        for got, e, v, case in zip(cand, c.expected, m["outputs"], c.cases):
            if case.raises:  # where an error is due: a misconception that returns matches a candidate that returns it
                if v is None:
                    continue
                try:
                    same = got is not None and _close(c.output, got, v, None, m["match_tol"])
                except (TypeError, ValueError):
                    same = False
                if not same:
                    ok = False
                    break
                differs = True
                continue
            if v is None or got is None:
                continue
            dt = _dtype_of(c.output, e, case)
            try:
                same = _close(c.output, got, v, dt, m["match_tol"])
            except (TypeError, ValueError):
                same = False
            if not same:
                ok = False
                break
            differs = differs or not _close(c.output, v, e, dt)
        if ok and differs:
            return m
    return None


def _num(v):
    r"""A number with every digit it has: 0.9210609793663025, not 0.921061 (a float32 slip shows)."""
    v = np.asarray(v)
    return repr(float(v.item())) if v.dtype.kind == "f" else str(v.item())


def _numbers(c, cand):
    for got, e, case in zip(cand, c.expected, c.cases):
        if case.raises:
            continue
        dt = _dtype_of(c.output, e, case)
        if _close(c.output, got, e, dt):
            continue
        for (name, x), (_, y) in zip(_parts(c.output, got), _parts(c.output, e)):
            x, y = np.asarray(x), np.asarray(y)
            if c.output == "int_array":
                bad = x != y
                tol_note = "exact integers"
            else:
                rtol, atol = _tol(dt)
                bad = ~np.isclose(x, y, rtol=rtol, atol=atol)
                tol_note = f"rtol {rtol:g}, atol {atol:g}"
            if not bad.any():
                continue
            first = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
            err = float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64))))
            where = f"{name}[{', '.join(map(str, first))}]" if name else (
                f"[{', '.join(map(str, first))}]" if first else "the value")
            xv, yv = (x[first] if first else x), (y[first] if first else y)
            off = float(np.asarray(xv, dtype=np.float64) - np.asarray(yv, dtype=np.float64))
            msg = (f"numbers: on case '{case.label}', {int(bad.sum())} of {bad.size} entries "
                   f"({100.0 * bad.sum() / bad.size:.1f}%) are wrong ({tol_note}); max abs error {err:.4g}. "
                   f"First bad entry {where}: yours {_num(xv)}, expected {_num(yv)} (off by {off:.3g}).")
            if c.elementwise_arg and case.args and isinstance(case.args[0], np.ndarray) \
                    and case.args[0].shape == y.shape:
                msg += f" There {c.elementwise_arg}{list(first)} = {case.args[0][first]}."
            return msg + f"\nInput: {case.show}"
    return "numbers: outputs differ."


def judge_problems(c, report):
    r"""The checks that come before any output: the file, the sandbox, presence, stubs, signature.

    Returns a result dict, or None when the reader's outputs are to be judged.
    """
    def fail(kind, message, misconception=None):
        return result(c, "fail", kind, message, misconception)

    if report.get("reference_import"):
        return fail("reference_import", "imports the reference: your code tried to use the reference solutions "
                                        f"({report['reference_import']}). Graded code must stand on its own.")
    if report.get("violations"):
        return fail("sandbox", "blocked: your code tried to do something the grader does not allow: "
                               + "; ".join(report["violations"]) + ".")
    if report.get("import_error"):
        return fail("import", report["import_error"])
    found = report["found"]
    if found == "missing":
        return fail("missing", f"{c.name} is not defined in your file.")
    if found not in ("function", "class") or (found == "class") != c.is_class:
        want = "a class" if c.is_class else "a function"
        return fail("type", f"{c.name} should be {want}; found {report['type_name']}.")
    stubs = report["stubs"]
    if stubs and all(stubs.values()):
        return result(c, "not attempted", "not attempted", "not attempted")
    if any(stubs.values()):
        left = ", ".join(f"{c.name}.{m}" for m, s in stubs.items() if s)
        return fail("unfinished", f"{left} still raises NotImplementedError; finish it too.")
    problems = []
    for qual, want in c.signatures.items():
        have = report["signatures"].get(qual)
        if have is None or have["params"] != want["params"]:
            problems.append(f"expected {want['text']}, found {have['text'] if have else 'no ' + qual}")
    if problems:
        return fail("signature", "signature: " + "; ".join(problems) + ". Keep the signature of the stub.")
    return None


def judge(c, report):
    r"""Judge one target from the worker's report of what the reader's code did. Never raises on bad data."""
    def fail(kind, message, misconception=None):
        return result(c, "fail", kind, message, misconception)

    early = judge_problems(c, report)
    if early:
        return early

    # Run every case; a raise, a wrong type or a mutated input stops here.
    raw = []
    for i, (case, exp, call) in enumerate(zip(c.cases, c.expected, report["calls"])):
        if "raised" in call:
            r = call["raised"]
            if r["type"] == "NotImplementedError" and r["message"] == c.label:
                return fail("unfinished", f"your code reached the stub's NotImplementedError({c.label!r}) on case "
                                          f"'{case.label}'; finish every part of {c.name}.")
            if case.raises and r["type"] == case.raises:
                raw.append(None)  # refused, as it must
                continue
            must = f" It must raise {case.raises} here." if case.raises else ""
            return fail("raised", f"raised {r['type']}: {r['message']} on case '{case.label}'.{must}"
                                  f"{r['where']}\nInput: {case.show}")
        out = call["out"]
        if case.raises:  # returned where it must raise: judged after the other cases
            raw.append(out)
            continue
        form = _form(c.output, out, exp)
        if form and form[0] == "type":
            return fail("type", f"type: {form[1]} (case '{case.label}')")
        before = arrays_in(case)
        after = report["after"][i]
        if len(after) != len(before) or any(
                a.shape != b.shape or a.dtype != b.dtype or not np.array_equal(a, b, equal_nan=True)
                for a, b in zip(after, before)):
            return fail("mutated", f"mutated its input: an input array changed during the call on case "
                                   f"'{case.label}'. Build a new array (e.g. with xp.concatenate) instead "
                                   f"of writing into x.\nInput: {case.show}")
        raw.append(out)
    if len(raw) != len(c.cases):
        return fail("crashed", "the grader did not get an answer for every case.")

    # Shape and dtype.
    for case, out, exp in zip(c.cases, raw, c.expected):
        if case.raises:
            continue
        form = _form(c.output, out, exp)
        if form:
            m = _match(c, [_norm_or_none(c.output, o) for o in raw])
            extra = f"\nThis looks like a known mistake, {m['title']}: {m['hint']}" if m else ""
            hint = f" {c.dtype_hint}" if form[0] == "dtype" and c.dtype_hint else ""
            return fail(form[0], f"{form[0]}: {form[1]}{hint} (case '{case.label}')\nInput: {case.show}{extra}",
                        m["key"] if m else None)
    cand = [(_norm_or_none(c.output, o) if o is not None else None) if case.raises else _norm(c.output, o)
            for case, o in zip(c.cases, raw)]
    no_error = [(case, o) for case, o in zip(c.cases, raw) if case.raises and o is not None]

    # NaN or Inf.
    for case, got in zip(c.cases, cand):
        for name, x in _parts(c.output, got) if got is not None else []:
            x = np.asarray(x)
            if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
                where = tuple(int(i) for i in np.argwhere(~np.isfinite(x))[0]) if x.ndim else ()
                return fail("nan", f"NaN or Inf: {int((~np.isfinite(x)).sum())} entries of "
                                   f"{name or 'the output'} are not finite on case '{case.label}' "
                                   f"(first at {list(where)}); the expected values are all finite.\n"
                                   f"Input: {case.show}")

    # Right?
    if not no_error and all(case.raises or _close(c.output, got, e, _dtype_of(c.output, e, case))
                            for got, e, case in zip(cand, c.expected, c.cases)):
        return result(c, "pass", "pass", f"{c.name}: all {len(c.cases)} cases pass.")

    # A known misconception?
    m = _match(c, cand)
    if m:
        return fail("misconception", f"misconception, {m['title']}: {m['hint']}", m["key"])

    # Numbers, or the error that never came.
    if no_error and all(case.raises or _close(c.output, got, e, _dtype_of(c.output, e, case))
                        for got, e, case in zip(cand, c.expected, c.cases)):
        case, out = no_error[0]
        return fail("no_error", f"no error: returned {_type_name(out)}{_shape_note(out)} on case '{case.label}', "
                                f"where {c.name} must raise {case.raises}.\nInput: {case.show}")
    return fail("numbers", _numbers(c, cand))


__all__ = ["Case", "Misconception", "Target", "Recorded", "normal", "show", "Compiled", "compile_target", "judge"]
