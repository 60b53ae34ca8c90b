r"""Judging what the reader's code returned, in layers, with feedback that never quotes code.

The reader's code runs in a worker (``worker.py``) and sends back what it returned; ``judge`` then
decides here, against a ``Compiled`` check, layer by layer: signature, type, shape, dtype, NaN,
misconception, numbers. The first layer that fails is the feedback.
"""
import numbers

import numpy as np  # host NumPy: the grader judges on the host

from exercises.grading.comparing import close, on_host_or_none, parts, to_host, tolerance, tolerance_dtype
from exercises.grading.targets import arrays_in
from exercises.grading.wire import Opaque, type_name


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
        return None if ok else ("type", f"returned {type_name(out)}{_shape_note(out)}; expected a Python float "
                                        "(float(...) of the summed products).")
    if output == "cos_sin":
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            return ("type", f"returned {type_name(out)}{_shape_note(out)}; expected a tuple (cos, sin) of two arrays.")
        for name, o, e in zip(("cos", "sin"), out, exp):
            if not isinstance(o, np.ndarray) and not _big_array(o):
                return ("type", f"{name} is {type_name(o)}; expected an array.")
            if o.shape != e.shape:
                return ("shape", f"{name} has shape {o.shape}; expected (T, d_head) = {e.shape}.")
            if o.dtype != e.dtype:
                return ("dtype", f"{name} is {o.dtype}; expected {e.dtype}.")
        return None
    if not isinstance(out, np.ndarray) and not _big_array(out):
        return ("type", f"returned {type_name(out)}; expected an array of the active backend (xp.ndarray).")
    if out.shape != exp.shape:
        return ("shape", f"returned shape {out.shape}; expected {exp.shape}.")
    if output == "int_array":
        if not np.issubdtype(out.dtype, np.integer):
            return ("dtype", f"returned dtype {out.dtype}; expected an integer array.")
    elif out.dtype != exp.dtype:
        return ("dtype", f"returned dtype {out.dtype}; expected {exp.dtype}.")
    return None


def _match(c, cand):
    """The first misconception whose outputs match the candidate's on every case."""
    for m in c.misconceptions:
        differs, ok = False, True
        for got, e, v, case in zip(cand, c.expected, m["outputs"], c.cases):
            if case.raises:  # where an error is due: a misconception that returns matches a candidate that returns it
                if v is None:
                    continue
                try:
                    same = got is not None and close(c.output, got, v, None, m["match_tol"])
                except (TypeError, ValueError):
                    same = False
                if not same:
                    ok = False
                    break
                differs = True
                continue
            if v is None or got is None:
                continue
            dt = tolerance_dtype(c.output, e, case)
            try:
                same = close(c.output, got, v, dt, m["match_tol"])
            except (TypeError, ValueError):
                same = False
            if not same:
                ok = False
                break
            differs = differs or not close(c.output, v, e, dt)
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
        dt = tolerance_dtype(c.output, e, case)
        if close(c.output, got, e, dt):
            continue
        for (name, x), (_, y) in zip(parts(c.output, got), parts(c.output, e)):
            x, y = np.asarray(x), np.asarray(y)
            if c.output == "int_array":
                bad = x != y
                tol_note = "exact integers"
            else:
                rtol, atol = tolerance(dt)
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
            m = _match(c, [on_host_or_none(c.output, o) for o in raw])
            extra = f"\nThis looks like a known mistake, {m['title']}: {m['hint']}" if m else ""
            hint = f" {c.dtype_hint}" if form[0] == "dtype" and c.dtype_hint else ""
            return fail(form[0], f"{form[0]}: {form[1]}{hint} (case '{case.label}')\nInput: {case.show}{extra}",
                        m["key"] if m else None)
    cand = [(on_host_or_none(c.output, o) if o is not None else None) if case.raises else to_host(c.output, o)
            for case, o in zip(c.cases, raw)]
    no_error = [(case, o) for case, o in zip(c.cases, raw) if case.raises and o is not None]

    # NaN or Inf.
    for case, got in zip(c.cases, cand):
        for name, x in parts(c.output, got) if got is not None else []:
            x = np.asarray(x)
            if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
                where = tuple(int(i) for i in np.argwhere(~np.isfinite(x))[0]) if x.ndim else ()
                return fail("nan", f"NaN or Inf: {int((~np.isfinite(x)).sum())} entries of "
                                   f"{name or 'the output'} are not finite on case '{case.label}' "
                                   f"(first at {list(where)}); the expected values are all finite.\n"
                                   f"Input: {case.show}")

    # Right?
    if not no_error and all(case.raises or close(c.output, got, e, tolerance_dtype(c.output, e, case))
                            for got, e, case in zip(cand, c.expected, c.cases)):
        return result(c, "pass", "pass", f"{c.name}: all {len(c.cases)} cases pass.")

    # A known misconception?
    m = _match(c, cand)
    if m:
        return fail("misconception", f"misconception, {m['title']}: {m['hint']}", m["key"])

    # Numbers, or the error that never came.
    if no_error and all(case.raises or close(c.output, got, e, tolerance_dtype(c.output, e, case))
                        for got, e, case in zip(cand, c.expected, c.cases)):
        case, out = no_error[0]
        return fail("no_error", f"no error: returned {type_name(out)}{_shape_note(out)} on case '{case.label}', "
                                f"where {c.name} must raise {case.raises}.\nInput: {case.show}")
    return fail("numbers", _numbers(c, cand))
