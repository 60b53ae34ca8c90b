r"""A check compiled: data only, made in the grader's process or read from a release.

The grader's process turns a ``Target`` into a ``Compiled`` check: the cases' inputs, the
reference's outputs (from ``solutions/``) and every misconception's outputs. It is what the stored
form of a module holds (``knowledge.py``). ``signatures`` describes a callable the same way here, for
the reference, and in the worker, for the reader's code, so the two compare as data.
"""
import copy
import inspect
from dataclasses import dataclass

from exercises.grading.comparing import to_host
from exercises.grading.targets import Case, invoke


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
        meth = getattr(obj, m, None) if isinstance(obj, type) else None      # its own, or inherited
        meth = getattr(meth, "__func__", meth)   # a classmethod's function, cls and all, not the bound method
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
            outs.append(to_host(target.output, invoke(m.impl, copy.deepcopy(case), is_class)))
        except Exception:  # a misconception that cannot run on this case never matches it
            outs.append(None)
    return outs


def _expected(target, reference, case, is_class):
    """The reference's normalised output on a case, or None on a case where it must raise ``case.raises``."""
    if not case.raises:
        return to_host(target.output, invoke(reference, copy.deepcopy(case), is_class))
    try:
        invoke(reference, copy.deepcopy(case), is_class)
    except Exception as e:
        if type(e).__name__ == case.raises:
            return None
        raise
    raise ValueError(f"{target.key}, case {case.label!r}: the reference returns instead of raising {case.raises}.")
