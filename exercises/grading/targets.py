r"""What a check is made of: the words a checks file is written in.

A checks file, ``exercises/grading/modules/<module>/checks.py``, lists ``TARGETS``: one ``Target`` per
function or class the reader writes. A target has cases (fixed seeds, float64 unless the case
is the float32 one) and misconceptions: small host-NumPy implementations of the mistakes
readers make. ``invoke`` calls an implementation on a case, the same way in the grader's process
(the reference, the misconceptions) and in the worker (the reader's code).
"""
from dataclasses import dataclass, field

import numpy as np  # host NumPy: the cases' inputs live on the host


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
