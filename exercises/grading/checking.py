r"""The grader's plumbing: what a check is made of, and how an output is judged.

A checks file, ``exercises/grading/checks/<module>.py``, lists ``TARGETS``: one ``Target`` per
function or class the reader writes. A target has cases (fixed seeds, float64 unless the case
is the float32 one) and misconceptions: small host-NumPy implementations of the mistakes
readers make. ``grade_candidate`` judges the reader's object against the reference in layers
(signature, type, shape, dtype, NaN, misconception, numbers) and never quotes code.
"""
import copy
import inspect
import numbers
import traceback
from dataclasses import dataclass, field

import numpy as np  # host NumPy: the grader compares on the host

from exercises.grading.generate import function_is_stub

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


@dataclass
class Misconception:
    key: str  # stable name, asserted by tests/test_grader.py
    title: str  # shown to the reader
    hint: str  # what to look at
    impl: object  # same calling convention as the target, host NumPy


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

    @property
    def key(self):
        return f"{self.module}.{self.name}"

    @property
    def is_class(self):
        return bool(self.methods)

    def invoke(self, impl, case):
        if self.is_class:
            return impl(*case.args, **case.kwargs)(*case.call_args, **case.call_kwargs)
        return impl(*case.args, **case.kwargs)


def normal(shape, seed, dtype=np.float64):
    """Standard normal numbers from a fixed seed, as a host array."""
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def show(name, a, note=""):
    """An input as the feedback prints it: the values when small, else shape and dtype."""
    a = np.asarray(a)
    if a.size <= 16:
        return f"{name} = {np.array2string(a, precision=4, separator=', ')}"
    return f"{name}: shape {a.shape}, {a.dtype}{', ' + note if note else ''}"


def _type_name(x):
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


# ---------------------------------------------------------------------------
# The engine: signature, type/shape/dtype, NaN, misconceptions, numbers
# ---------------------------------------------------------------------------

class _Fail(Exception):
    def __init__(self, kind, message, misconception=None):
        super().__init__(message)
        self.kind, self.message, self.misconception = kind, message, misconception


def _result(target, label, status, kind, message, misconception=None):
    return {"target": target.key, "label": label, "status": status, "kind": kind,
            "misconception": misconception, "message": message}


def _signature(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


def _fmt_sig(name, obj):
    try:
        return f"{name}{inspect.signature(obj)}"
    except (TypeError, ValueError):
        return f"{name}(?)"


def _signature_problems(target, obj, ref):
    pairs = [(target.name, obj, ref)] if not target.is_class else [
        (f"{target.name}.{m}", obj.__dict__.get(m, getattr(obj, m, None)), ref.__dict__[m]) for m in target.methods]
    out = []
    for name, o, r in pairs:
        if o is None or _signature(o) != _signature(r):
            have = _fmt_sig(name, o) if o is not None else f"no {name}"
            out.append(f"expected {_fmt_sig(name, r)}, found {have}")
    return out


def _is_array(x):
    from mini_transformer.backend import is_array
    return is_array(x) or isinstance(x, np.ndarray)


def _host(x):
    from mini_transformer.backend import to_numpy
    return to_numpy(x)


def _form(target, out, exp):
    """The first type, shape or dtype problem of one output, as (kind, sentence), or None."""
    kind = target.output
    if kind == "float":
        ok = (isinstance(out, numbers.Real) and not isinstance(out, (bool, np.bool_))) or \
             (_is_array(out) and getattr(out, "shape", None) == () and np.issubdtype(out.dtype, np.floating))
        return None if ok else ("type", f"returned {_type_name(out)}{_shape_note(out)}; expected a Python float "
                                        "(float(...) of the summed products).")
    if kind == "cos_sin":
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            return ("type", f"returned {_type_name(out)}{_shape_note(out)}; expected a tuple (cos, sin) of two arrays.")
        for name, o, e in zip(("cos", "sin"), out, exp):
            if not _is_array(o):
                return ("type", f"{name} is {_type_name(o)}; expected an array.")
            if o.shape != e.shape:
                return ("shape", f"{name} has shape {o.shape}; expected (T, d_head) = {e.shape}.")
            if o.dtype != e.dtype:
                return ("dtype", f"{name} is {o.dtype}; expected {e.dtype}.")
        return None
    if not _is_array(out):
        return ("type", f"returned {_type_name(out)}; expected an array of the active backend (xp.ndarray).")
    if out.shape != exp.shape:
        return ("shape", f"returned shape {out.shape}; expected {exp.shape}.")
    if kind == "int_array":
        if not np.issubdtype(out.dtype, np.integer):
            return ("dtype", f"returned dtype {out.dtype}; expected an integer array.")
    elif out.dtype != exp.dtype:
        return ("dtype", f"returned dtype {out.dtype}; expected {exp.dtype}.")
    return None


def _shape_note(x):
    shape = getattr(x, "shape", None)
    return f" of shape {shape}" if shape is not None else ""


def _norm(target, out):
    """Host copy of an output, for comparisons."""
    if target.output == "float":
        return float(out)
    if target.output == "cos_sin":
        return tuple(np.array(_host(o)) for o in out)
    return np.array(_host(out))


def _tol(dtype):
    return (1e-5, 1e-5) if np.dtype(dtype) == np.float32 else (1e-9, 1e-9)


def _parts(target, out):
    """An output as named arrays: [('', a)] or [('cos', c), ('sin', s)]."""
    if target.output == "cos_sin":
        return [("cos", out[0]), ("sin", out[1])]
    if target.output == "float":
        return [("", np.array(out))]
    return [("", out)]


def _close(target, a, b, dtype=None):
    for (_, x), (_, y) in zip(_parts(target, a), _parts(target, b)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return False
        if target.output == "int_array":
            if not np.array_equal(x, y):
                return False
            continue
        rtol, atol = _tol(dtype if dtype is not None else y.dtype)
        if not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=False):
            return False
    return True


def _arrays_in(case):
    return [a for a in list(case.args) + list(case.kwargs.values()) + list(case.call_args)
            + list(case.call_kwargs.values()) if isinstance(a, np.ndarray)]


def _reader_traceback(exc, source_file):
    """The frames of an exception that lie in the reader's file."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if source_file and f.filename == source_file]
    if not frames:
        return ""
    return "\n" + "".join(traceback.format_list(frames[-3:])).rstrip()


def _call(target, impl, case):
    """Run impl on a fresh copy of the case's inputs; returns (output, inputs_after, inputs_before)."""
    fresh = copy.deepcopy(case)
    before = [a.copy() for a in _arrays_in(fresh)]
    out = target.invoke(impl, fresh)
    return out, _arrays_in(fresh), before


def _variant_outputs(target, cases):
    out = []
    for m in target.misconceptions:
        row = []
        for case in cases:
            try:
                row.append(_norm(target, target.invoke(m.impl, copy.deepcopy(case))))
            except Exception:
                row.append(None)
        out.append(row)
    return out


def _match(target, cand, expected, cases, variants):
    """The first misconception whose outputs match the candidate's on every case."""
    for m, outs in zip(target.misconceptions, variants):
        differs, ok = False, True
        for c, e, v, case in zip(cand, expected, outs, cases):
            if v is None or c is None:
                continue
            if not _close(target, c, v, _dtype_of(target, e, case)):
                ok = False
                break
            differs = differs or not _close(target, v, e, _dtype_of(target, e, case))
        if ok and differs:
            return m
    return None


def _dtype_of(target, e, case):
    """The dtype whose tolerance applies: the output's, or for a float score its inputs'."""
    if target.output == "cos_sin":
        return e[0].dtype
    if target.output == "float":
        return np.float32 if any(a.dtype == np.float32 for a in _arrays_in(case)) else np.float64
    return e.dtype


def _numbers(target, cand, expected, cases):
    for c, e, case in zip(cand, expected, cases):
        dt = _dtype_of(target, e, case)
        if _close(target, c, e, dt):
            continue
        for (name, x), (_, y) in zip(_parts(target, c), _parts(target, e)):
            x, y = np.asarray(x), np.asarray(y)
            if target.output == "int_array":
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
            msg = (f"numbers: on case '{case.label}', {int(bad.sum())} of {bad.size} entries "
                   f"({100.0 * bad.sum() / bad.size:.1f}%) are wrong ({tol_note}); max abs error {err:.4g}. "
                   f"First bad entry {where}: yours {_num(x[first] if first else x)}, expected "
                   f"{_num(y[first] if first else y)}.")
            if target.elementwise_arg and case.args and isinstance(case.args[0], np.ndarray) \
                    and case.args[0].shape == y.shape:
                msg += f" There {target.elementwise_arg}{list(first)} = {case.args[0][first]}."
            return msg + f"\nInput: {case.show}"
    return "numbers: outputs differ."


def _num(v):
    v = np.asarray(v)
    return f"{v.item():.6g}" if v.dtype.kind == "f" else str(v.item())


def grade_candidate(target, obj, reference, label, source_file=None):
    r"""Grade one reader object against the reference. Returns a result dict; never raises."""
    def fail(kind, message, misconception=None):
        return _result(target, label, "fail", kind, message, misconception)

    # 1. Is it there, and has it been touched?
    if obj is None:
        return fail("missing", f"{target.name} is not defined in your file.")
    if target.is_class != isinstance(obj, type) or not callable(obj):
        want = "a class" if target.is_class else "a function"
        return fail("type", f"{target.name} should be {want}; found {_type_name(obj)}.")
    stubs = {m: function_is_stub(obj.__dict__[m]) for m in target.methods if m in obj.__dict__} \
        if target.is_class else {target.name: function_is_stub(obj)}
    if stubs and all(stubs.values()):
        return _result(target, label, "not attempted", "not attempted", "not attempted")
    if any(stubs.values()):
        left = ", ".join(f"{target.name}.{m}" for m, s in stubs.items() if s)
        return fail("unfinished", f"{left} still raises NotImplementedError; finish it too.")

    # 2. Signature.
    problems = _signature_problems(target, obj, reference)
    if problems:
        return fail("signature", "signature: " + "; ".join(problems) + ". Keep the signature of the stub.")

    # 3. Run every case; a raise, a wrong type or a mutated input stops here.
    cases = target.cases()
    expected = [_norm(target, target.invoke(reference, copy.deepcopy(c))) for c in cases]
    raw = []
    for case, exp in zip(cases, expected):
        try:
            out, after, before = _call(target, obj, case)
        except NotImplementedError as e:
            if str(e) == label:
                return fail("unfinished", f"your code reached the stub's NotImplementedError({label!r}) on case "
                                          f"'{case.label}'; finish every part of {target.name}.")
            return fail("raised", f"raised NotImplementedError: {e} on case '{case.label}'."
                                  f"{_reader_traceback(e, source_file)}\nInput: {case.show}")
        except (Exception, SystemExit) as e:
            return fail("raised", f"raised {type(e).__name__}: {e} on case '{case.label}'."
                                  f"{_reader_traceback(e, source_file)}\nInput: {case.show}")
        form = _form(target, out, exp)
        if form and form[0] == "type":
            return fail("type", f"type: {form[1]} (case '{case.label}')")
        for a, b in zip(after, before):
            if a.shape != b.shape or a.dtype != b.dtype or not np.array_equal(a, b, equal_nan=True):
                return fail("mutated", f"mutated its input: an input array changed during the call on case "
                                       f"'{case.label}'. Build a new array (e.g. with xp.concatenate) instead "
                                       f"of writing into x.\nInput: {case.show}")
        raw.append(out)

    # 4. Shape and dtype.
    variants = None
    for case, out, exp in zip(cases, raw, expected):
        form = _form(target, out, exp)
        if form:
            variants = _variant_outputs(target, cases)
            cand = [_norm(target, o) for o in raw]
            m = _match(target, cand, expected, cases, variants)
            extra = f"\nThis looks like a known mistake, {m.title}: {m.hint}" if m else ""
            hint = f" {target.dtype_hint}" if form[0] == "dtype" and target.dtype_hint else ""
            return fail(form[0], f"{form[0]}: {form[1]}{hint} (case '{case.label}')\nInput: {case.show}{extra}",
                        m.key if m else None)
    cand = [_norm(target, o) for o in raw]

    # 5. NaN or Inf.
    for case, c in zip(cases, cand):
        for name, x in _parts(target, c):
            x = np.asarray(x)
            if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
                where = tuple(int(i) for i in np.argwhere(~np.isfinite(x))[0]) if x.ndim else ()
                return fail("nan", f"NaN or Inf: {int((~np.isfinite(x)).sum())} entries of "
                                   f"{name or 'the output'} are not finite on case '{case.label}' "
                                   f"(first at {list(where)}); the expected values are all finite.\n"
                                   f"Input: {case.show}")

    # 6. Right?
    if all(_close(target, c, e, _dtype_of(target, e, case)) for c, e, case in zip(cand, expected, cases)):
        return _result(target, label, "pass", "pass", f"{target.name}: all {len(cases)} cases pass.")

    # 7. A known misconception?
    variants = variants or _variant_outputs(target, cases)
    m = _match(target, cand, expected, cases, variants)
    if m:
        return fail("misconception", f"misconception, {m.title}: {m.hint}", m.key)

    # 8. Numbers.
    return fail("numbers", _numbers(target, cand, expected, cases))
