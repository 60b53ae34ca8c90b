r"""A check compiled (``exercises/grading/compiled.py``), on two toy targets whose outputs are worked by hand.

``scaled_sum(x, k=2.0)`` is ``k`` times the sum of ``x`` and refuses an empty ``x``; ``Scale(k)(x)`` is ``k * x``
and refuses an ``x`` that is not 1-d. Every expected number in this file is worked out in the comment beside it;
nothing here runs the course's solutions. They are the tests mutation testing of ``compiled.py`` asked for
(``bench_results/mutation_2026-12-06/grader_compiled.md``).
"""
import re

import numpy as np
import pytest

from exercises.grading.compiled import Compiled, compile_target, signature_of, signature_text, signatures
from exercises.grading.targets import Case, Misconception, Target


def scaled_sum(x, k=2.0):
    if x.size == 0:
        raise ValueError("x is empty; give at least one number.")
    return k * sum(x)  # a NumPy float64, which the "float" output turns into a Python float


class Scale:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        if x.ndim != 1:
            raise ValueError(f"x must be 1-d, got {x.ndim} dimensions.")
        return self.k * x


class ScaleAdds(Scale):  # the misconception: adds k instead of multiplying
    def __call__(self, x):
        return self.k + x


PLUS = Misconception("toy.plus", "adds k", "multiply by k.", impl=lambda x, k=2.0: k + sum(x), match_tol=(0.1, 0.1))
NO_K = Misconception("toy.no_k", "k fixed at 2", "take k.", impl=lambda x: 2.0 * sum(x))


def public():
    return [Case("pair", args=(np.array([1.0, 2.0]),), show="x = [1, 2]"),
            Case("k=3", args=(np.array([1.0, -1.0, 3.0]),), kwargs={"k": 3.0}),
            Case("empty", args=(np.array([]),), raises="ValueError")]


def held_out():
    return [Case("single", args=(np.array([5.0]),), show="(held out)"),
            Case("empty, k=1", args=(np.array([]),), kwargs={"k": 1.0}, show="(held out)", raises="ValueError")]


def toy(cases=public, held=held_out, misconceptions=(PLUS, NO_K)):
    return Target("scaled_sum", "float", cases=cases, misconceptions=list(misconceptions), elementwise_arg="x",
                  dtype_hint="float64 in, a float out", module="toy", held_out=held)


SIG_SCALED_SUM = {"scaled_sum": {"params": [["x", 1, None], ["k", 1, "2.0"]], "text": "scaled_sum(x, k=2.0)"}}


def test_a_target_compiles_to_the_reference_s_and_each_misconception_s_outputs_by_hand():
    c = compile_target(toy(), scaled_sum, "Exercise 9.1", siblings="def other():\n    pass\n")
    assert (c.module, c.name, c.label, c.output, c.methods) == ("toy", "scaled_sum", "Exercise 9.1", "float", ())
    assert (c.elementwise_arg, c.dtype_hint, c.siblings) == ("x", "float64 in, a float out", "def other():\n    pass\n")
    assert (c.key, c.is_class, c.kind, c.held_out_view) == ("toy.scaled_sum", False, "target", False)
    assert c.signatures == SIG_SCALED_SUM
    assert [case.label for case in c.cases] == ["pair", "k=3", "empty"]
    assert c.expected == [6.0, 9.0, None]  # 2 * (1 + 2); 3 * (1 - 1 + 3); refused
    assert all(type(e) is float for e in c.expected[:2])  # "float" outputs are Python floats, not NumPy arrays
    assert c.misconceptions == [
        {"key": "toy.plus", "title": "adds k", "hint": "multiply by k.", "match_tol": (0.1, 0.1),
         "outputs": [5.0, 6.0, 2.0]},  # 2 + 3; 3 + 3; 2 + 0 (it does not refuse the empty x)
        {"key": "toy.no_k", "title": "k fixed at 2", "hint": "take k.", "match_tol": None,
         "outputs": [6.0, None, 0.0]}]  # it cannot take k=3, so that output is None; 2 * 0 on the empty x
    assert all(type(o) is float for m in c.misconceptions for o in m["outputs"] if o is not None)
    held = c.held
    assert [case.label for case in held["cases"]] == ["single", "empty, k=1"]
    assert held["expected"] == [10.0, None]  # 2 * 5; refused
    assert held["outputs"] == [[7.0, 1.0], [10.0, None]]  # plus: 2 + 5, 1 + 0; no_k: 2 * 5, cannot take k=1


def test_a_target_without_held_out_cases_compiles_to_held_none():
    c = compile_target(toy(held=None), scaled_sum, "Exercise 9.1")
    assert c.held is None and c.siblings is None
    assert c.held_out_check() is None


def test_a_class_target_builds_the_object_then_calls_it():
    cases = lambda: [Case("k=3", args=(3.0,), call_args=(np.array([1.0, 2.0]),)),  # noqa: E731
                     Case("2-d x", args=(3.0,), call_args=(np.ones((1, 2)),), raises="ValueError")]
    adds = Misconception("toy.adds", "adds k", "multiply.", impl=ScaleAdds)
    held = lambda: [Case("k=0.5", args=(0.5,), call_args=(np.array([4.0]),)),  # noqa: E731
                    Case("0-d x", args=(0.5,), call_args=(np.array(4.0),), raises="ValueError")]
    t = Target("Scale", "array", cases=cases, misconceptions=[adds], methods=["__init__", "__call__"], module="toy",
               held_out=held)
    c = compile_target(t, Scale, "Exercise 9.2")
    assert c.methods == ("__init__", "__call__") and c.is_class
    assert c.signatures == {
        "Scale.__init__": {"params": [["self", 1, None], ["k", 1, None]], "text": "Scale.__init__(self, k)"},
        "Scale.__call__": {"params": [["self", 1, None], ["x", 1, None]], "text": "Scale.__call__(self, x)"}}
    assert np.array_equal(c.expected[0], [3.0, 6.0]) and c.expected[1] is None  # 3 * [1, 2]; refused
    out = c.misconceptions[0]["outputs"]
    assert np.array_equal(out[0], [4.0, 5.0]) and np.array_equal(out[1], [[4.0, 4.0]])  # 3 + [1, 2]; 3 + ones
    assert np.array_equal(c.held["expected"][0], [2.0]) and c.held["expected"][1] is None  # 0.5 * [4]; refused
    (held_out,) = c.held["outputs"]
    assert np.array_equal(held_out[0], [4.5]) and np.array_equal(held_out[1], 4.5)  # 0.5 + [4]; 0.5 + 4


def test_calls_never_write_into_the_stored_cases():
    # a reference and a misconception that write into their input (the reference even before it refuses):
    # each call gets its own deep copy, so the stored cases and the next call see the inputs as written
    def doubled_in_place(x):
        x *= 2.0
        if np.any(x < 0):
            raise ValueError("x must be non-negative.")
        return x

    def halved_in_place(x):
        x *= 0.5
        return x

    cases = lambda: [Case("pair", args=(np.array([1.0, 2.0]),)),  # noqa: E731
                     Case("negative", args=(np.array([-1.0]),), raises="ValueError")]
    mis = [Misconception("toy.half", "halves", "double.", impl=halved_in_place),
           Misconception("toy.same", "returns x", "double.", impl=lambda x: x + 0.0)]
    t = Target("doubled", "array", cases=cases, misconceptions=mis, module="toy",
               held_out=lambda: [Case("four", args=(np.array([4.0]),)),
                                 Case("held negative", args=(np.array([-3.0]),), raises="ValueError")])
    c = compile_target(t, doubled_in_place, "Exercise 9.3")
    assert [a.tolist() for case in c.cases + c.held["cases"] for a in case.args] == [[1.0, 2.0], [-1.0], [4.0], [-3.0]]
    assert np.array_equal(c.expected[0], [2.0, 4.0]) and np.array_equal(c.held["expected"][0], [8.0])
    half, same = (m["outputs"] for m in c.misconceptions)
    assert [o.tolist() for o in half] == [[0.5, 1.0], [-0.5]] and [o.tolist() for o in same] == [[1.0, 2.0], [-1.0]]
    assert [[o.tolist() for o in outs] for outs in c.held["outputs"]] == [[[2.0], [-1.5]], [[4.0], [-3.0]]]


@pytest.mark.parametrize("cases, held, message", [
    (lambda: [public()[0], public()[2], public()[1]], None,
     "toy.scaled_sum: only the last case may expect an error (raises=...)."),
    (public, lambda: [held_out()[0], held_out()[1], held_out()[0]],
     "toy.scaled_sum: only the last held-out case may expect an error (raises=...)."),
], ids=["public", "held out"])
def test_only_the_last_case_may_expect_an_error(cases, held, message):
    # the middle one of three cases refuses: the worker would stop there and never run the third
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        compile_target(toy(cases=cases, held=held), scaled_sum, "Exercise 9.1")


def test_a_reference_that_returns_where_an_error_is_due_is_refused_and_another_error_goes_through():
    lying = lambda: [Case("pair", args=(np.array([1.0, 2.0]),), raises="ValueError")]  # noqa: E731
    with pytest.raises(ValueError, match="^toy.scaled_sum, case 'pair': the reference returns instead of raising "
                                         "ValueError.$"):
        compile_target(toy(cases=lying, held=None), scaled_sum, "Exercise 9.1")
    other = lambda: [Case("empty", args=(np.array([]),), raises="KeyError")]  # noqa: E731
    with pytest.raises(ValueError, match="^x is empty"):  # the reference's own error, not swallowed
        compile_target(toy(cases=other, held=None), scaled_sum, "Exercise 9.1")


def test_the_stored_form_is_plain_data_and_reads_back_to_the_same_check():
    c = compile_target(toy(), scaled_sum, "Exercise 9.1", siblings="")
    s = c.stored()
    assert set(s) == {"module", "name", "label", "output", "methods", "elementwise_arg", "dtype_hint", "signatures",
                      "cases", "expected", "misconceptions", "siblings", "held"}
    assert (s["module"], s["name"], s["label"], s["expected"]) == ("toy", "scaled_sum", "Exercise 9.1", [6.0, 9.0, None])
    assert s["cases"][0] == {"label": "pair", "args": c.cases[0].args, "kwargs": {}, "call_args": (),
                             "call_kwargs": {}, "show": "x = [1, 2]", "raises": ""}
    assert all(type(x) is dict for x in s["cases"] + s["held"]["cases"])
    assert s["held"]["cases"][1]["raises"] == "ValueError" and s["held"]["expected"] == [10.0, None]
    assert all(type(x) is Case for x in c.held["cases"])  # storing leaves the check itself alone
    back = Compiled.from_stored(s)
    assert back == c and all(type(x) is Case for x in back.cases + back.held["cases"])
    student = c.without_held_out().stored()
    assert student["held"] is None and Compiled.from_stored(student).held is None
    del student["held"]  # a stored form written before held-out cases existed
    assert Compiled.from_stored(student) == c.without_held_out()


def test_a_student_copy_drops_the_held_out_cases_and_leaves_the_check_alone():
    c = compile_target(toy(), scaled_sum, "Exercise 9.1")
    student = c.without_held_out()
    assert student.held is None and c.held is not None
    assert vars(student) == dict(vars(c), held=None)
    again = student.without_held_out()  # nothing held: an equal copy, not the same object
    assert again == student and again is not student
    view = c.held_out_check()  # a check with no held-out cases is copied whole, its view flag with it
    assert view.without_held_out().held_out_view is True


def test_the_held_out_view_judges_the_held_out_cases_like_public_ones():
    c = compile_target(toy(), scaled_sum, "Exercise 9.1", siblings="")
    view = c.held_out_check()
    assert view.held_out_view is True and c.held_out_view is False
    assert view.cases is c.held["cases"] and view.expected == [10.0, None] and view.held is None
    assert view.misconceptions == [dict(c.misconceptions[0], outputs=[7.0, 1.0]),
                                   dict(c.misconceptions[1], outputs=[10.0, None])]
    assert view.misconceptions[0]["key"] == "toy.plus" and view.misconceptions[1]["match_tol"] is None
    assert c.misconceptions[0]["outputs"] == [5.0, 6.0, 2.0]  # the public check keeps its own outputs
    same = ("module", "name", "label", "output", "methods", "elementwise_arg", "dtype_hint", "signatures", "siblings")
    assert all(getattr(view, f) == getattr(c, f) for f in same)


# ---------------------------------------------------------------------------
# signatures: the same data for the reference here and the reader's code in the worker
# ---------------------------------------------------------------------------

def every_kind(a, /, b, c=2, *args, scale=0.5, d=None, **kw):
    pass


class Base:
    def reset(self, to=0):
        pass


class Rot(Base):
    def __init__(self, d_head, base=10000.0):
        pass

    def __call__(self, x, offset=0):
        pass


def test_signature_of_lists_name_kind_and_default_and_none_without_a_signature():
    # kinds are inspect.Parameter's: 0 positional-only, 1 positional-or-keyword, 2 *args, 3 keyword-only, 4 **kw;
    # a default is its repr ("None" for a default of None), no default is None
    assert signature_of(every_kind) == [["a", 0, None], ["b", 1, None], ["c", 1, "2"], ["args", 2, None],
                                        ["scale", 3, "0.5"], ["d", 3, "None"], ["kw", 4, None]]
    assert signature_of(1) is None  # not callable: TypeError
    assert signature_of(type) is None  # a builtin without a signature: ValueError
    assert signature_text("every_kind", every_kind) == "every_kind(a, /, b, c=2, *args, scale=0.5, d=None, **kw)"
    assert signature_text("n", 1) == "n(?)" and signature_text("type", type) == "type(?)"


def test_signatures_of_a_function_and_of_a_class_s_own_inherited_and_missing_methods():
    assert signatures("f", every_kind, ()) == {"f": {"params": signature_of(every_kind),
                                                     "text": "f(a, /, b, c=2, *args, scale=0.5, d=None, **kw)"}}
    assert signatures("Rot", Rot, ("__init__", "__call__", "reset", "extend")) == {
        "Rot.__init__": {"params": [["self", 1, None], ["d_head", 1, None], ["base", 1, "10000.0"]],
                         "text": "Rot.__init__(self, d_head, base=10000.0)"},
        "Rot.__call__": {"params": [["self", 1, None], ["x", 1, None], ["offset", 1, "0"]],
                         "text": "Rot.__call__(self, x, offset=0)"},
        "Rot.reset": {"params": [["self", 1, None], ["to", 1, "0"]], "text": "Rot.reset(self, to=0)"},  # inherited
        "Rot.extend": None}  # the class has no such method
    # a function where a class is due has none of the methods (not even the __call__ every function has)
    assert signatures("Rot", every_kind, ("__init__", "__call__")) == {"Rot.__init__": None, "Rot.__call__": None}


class Built:
    @classmethod
    def from_config(cls, cfg, scale=1.0):
        return cls()

    @staticmethod
    def width(d):
        return d


class BuiltAgain(Built):
    pass


@pytest.mark.parametrize("cls", [Built, BuiltAgain], ids=["own", "inherited"])
def test_signatures_of_a_classmethod_and_a_staticmethod(cls):
    # a classmethod shows cls, as a method shows self: a reader who drops or renames a parameter is told
    got = signatures("B", cls, ("from_config", "width"))
    assert got == {"B.from_config": {"params": [["cls", 1, None], ["cfg", 1, None], ["scale", 1, "1.0"]],
                                     "text": "B.from_config(cls, cfg, scale=1.0)"},
                   "B.width": {"params": [["d", 1, None]], "text": "B.width(d)"}}
