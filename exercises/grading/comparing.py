r"""How two outputs are compared: both as host arrays, within the tolerance of the expected dtype.

An output is one array, a ``(cos, sin)`` pair or a float (a target's ``output``); every comparison
the grader makes, the reference against a misconception when a check is compiled and the reader's
output against both when it is judged, goes through ``close``.
"""
import numpy as np  # host NumPy: the grader compares on the host

from exercises.grading.targets import arrays_in


def to_host(output, out):
    """Host copy of an output, for comparisons."""
    from mini_transformer.engine.backend import to_numpy
    if output == "float":
        return float(out)
    if output == "cos_sin":
        return tuple(np.array(to_numpy(o)) for o in out)
    return np.array(to_numpy(out))


def on_host_or_none(output, out):
    """``to_host``, or None where the output cannot be compared at all."""
    try:
        return to_host(output, out)
    except Exception:  # an output of the wrong form (an array too big to send back) matches nothing
        return None


def tolerance(dtype):
    """``(rtol, atol)`` for an expected value of ``dtype``: float32 keeps about seven digits, float64 far more."""
    return (1e-5, 1e-5) if np.dtype(dtype) == np.float32 else (1e-9, 1e-9)


def parts(output, out):
    """An output as named arrays: [('', a)] or [('cos', c), ('sin', s)]."""
    if output == "cos_sin":
        return [("cos", out[0]), ("sin", out[1])]
    if output == "float":
        return [("", np.array(out))]
    return [("", out)]


def close(output, a, b, dtype=None, tol=None):
    """Whether ``a`` matches ``b`` in every part: integers exactly, floats within ``tol`` or ``dtype``'s tolerance."""
    for (_, x), (_, y) in zip(parts(output, a), parts(output, b)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return False
        if output == "int_array":
            if not np.array_equal(x, y):
                return False
            continue
        rtol, atol = tol or tolerance(dtype if dtype is not None else y.dtype)
        if not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=False):
            return False
    return True


def tolerance_dtype(output, e, case):
    """The dtype whose tolerance applies: the output's, or for a float score its inputs'."""
    if output == "cos_sin":
        return e[0].dtype
    if output == "float":
        return np.float32 if any(a.dtype == np.float32 for a in arrays_in(case)) else np.float64
    return e.dtype
