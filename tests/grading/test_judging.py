r"""The grader's judging and comparing, on checks built by hand.

Each test builds a ``Compiled`` check and a worker's report as data (no worker process, no reference
module) and asserts the verdict and the feedback sentence, worked out by hand from the inputs. They are
the tests mutation testing of ``judging.py`` and ``comparing.py`` asked for
(``bench_results/mutation_2026-12-06/judging_comparing.md``).
"""
import numpy as np
import pytest

from exercises.grading.compiled import Compiled
from exercises.grading.comparing import close, on_host_or_none, parts, to_host, tolerance, tolerance_dtype
from exercises.grading.judging import _big_array, _match, _num, _numbers, judge, judge_problems, result
from exercises.grading.targets import Case, arrays_in
from exercises.grading.wire import Opaque

SIG = {"f": {"params": [["x", 1, None]], "text": "f(x)"}}


def check(cases, expected, output="array", misconceptions=(), elementwise_arg="", dtype_hint="", methods=(),
          signatures=SIG):
    return Compiled(module="m", name="f", label="Exercise 0.1", output=output, methods=methods,
                    elementwise_arg=elementwise_arg, dtype_hint=dtype_hint, signatures=signatures, cases=list(cases),
                    expected=list(expected), misconceptions=list(misconceptions))


def report(c, calls, after=None, **over):
    r"""What the worker sends back: every case's input arrays unchanged, unless ``after`` says otherwise."""
    calls = [x if isinstance(x, dict) else {"out": x} for x in calls]
    if after is None:
        after = [[a.copy() for a in arrays_in(case)] for case, x in zip(c.cases, calls) if "out" in x]
    return dict({"found": "function", "type_name": "function", "stubs": {"f": False}, "signatures": SIG,
                 "calls": calls, "after": after}, **over)


def raised(type_, message="bad", where=""):
    return {"raised": {"type": type_, "message": message, "where": where}}


X = np.array([1.0, 2.0, 3.0, 4.0])
SMALL = Case("small", args=(X,), show="x = [1, 2, 3, 4]")
TOO_LONG = Case("too long", args=(9,), show="T = 9", raises="ValueError")
MISTAKE = {"key": "m.twice", "title": "twice over", "hint": "scale once.", "match_tol": None}


# ---------------------------------------------------------------------------
# comparing.py
# ---------------------------------------------------------------------------

def test_tolerance_is_seven_digits_for_float32_and_nine_for_everything_else():
    assert tolerance(np.float32) == (1e-5, 1e-5)
    assert tolerance("float32") == (1e-5, 1e-5)
    assert tolerance(np.float64) == (1e-9, 1e-9)
    assert tolerance(np.float16) == (1e-9, 1e-9)


def test_parts_names_each_array_of_an_output():
    c, s = np.zeros(2), np.ones(2)
    assert [(n, a.tolist()) for n, a in parts("cos_sin", (c, s))] == [("cos", [0.0, 0.0]), ("sin", [1.0, 1.0])]
    [(name, a)] = parts("float", 0.5)
    assert name == "" and isinstance(a, np.ndarray) and a.shape == () and a == 0.5
    [(name, a)] = parts("array", X)
    assert name == "" and a is X


@pytest.mark.parametrize("a, b, dtype, tol, want", [
    ([1.0, 2.0], [1.0, 2.0 + 1e-9], None, None, True),        # |d| 1e-9 <= 1e-9 + 1e-9 * 2
    ([1.0, 2.0], [1.0, 2.0 + 4e-9], None, None, False),       # 4e-9 > 3e-9
    ([1.0], [1.0 + 1.5e-5], np.float32, None, True),          # 1.5e-5 <= 1e-5 + 1e-5 * 1.000015
    ([1.0], [1.0 + 3e-5], np.float32, None, False),
    ([1.0], [1.0 + 1.5e-5], None, None, False),               # the expected value's own dtype, float64
    ([1.0], [1.05], None, (0.0, 0.1), True),                  # a misconception's own tolerance wins
    ([1.0], [1.05], np.float32, (0.0, 0.01), False),
    ([np.nan], [np.nan], None, None, False),                  # a NaN never matches, even a NaN
    ([1.0, 2.0], [1.0, 2.0, 3.0], None, None, False),         # shapes differ
])
def test_close_on_floats_by_hand(a, b, dtype, tol, want):
    assert close("array", np.array(a), np.array(b), dtype, tol) is want


def test_close_on_float32_expected_values_uses_their_tolerance():
    assert close("array", np.array([1.0]), np.array([1.0 + 1.5e-5], dtype=np.float32))
    assert not close("array", np.array([1.0]), np.array([1.0 + 3e-5], dtype=np.float32))


def test_close_on_integers_is_exact_and_on_a_pair_checks_both():
    assert close("int_array", np.array([1, 2]), np.array([1, 2]))
    assert not close("int_array", np.array([1, 2]), np.array([1, 3]))
    assert not close("int_array", np.array([1, 2]), np.array([[1, 2]]))
    assert not close("int_array", np.array([[1, 2]]), np.array([[1, 2], [1, 2]]))
    # a float off by far less than any tolerance is still not the integer
    assert not close("int_array", np.array([1.0, 2.0 + 1e-12]), np.array([1, 2]))
    one, two = np.array([1.0]), np.array([2.0])
    assert close("cos_sin", (one, two), (one, two))
    assert not close("cos_sin", (one, two), (one, one))     # the sin differs
    assert not close("cos_sin", (two, two), (one, two))     # the cos differs
    assert close("float", 0.25, 0.25) and not close("float", 0.25, 0.5)


def test_tolerance_dtype_is_the_outputs_or_for_a_score_its_inputs():
    e32, e64 = np.zeros(2, np.float32), np.zeros(2)
    assert tolerance_dtype("cos_sin", (e32, e64), SMALL) == np.float32
    assert tolerance_dtype("array", e32, SMALL) == np.float32
    assert tolerance_dtype("float", 0.5, Case("c", args=(e64, e32))) == np.float32
    assert tolerance_dtype("float", 0.5, Case("c", args=(e64, e64))) == np.float64
    assert tolerance_dtype("float", 0.5, Case("c", args=(3,))) == np.float64


def test_to_host_copies_and_on_host_or_none_refuses_what_cannot_be_compared():
    x = np.array([1.0, 2.0])
    h = to_host("array", x)
    h[0] = 9.0
    assert x[0] == 1.0                                      # a copy: the reader's array is never written
    f = to_host("float", np.float32(0.5))
    assert type(f) is float and f == 0.5
    cos, sin = to_host("cos_sin", [x, x])
    assert type(cos) is np.ndarray and cos.tolist() == [1.0, 2.0] and sin is not x
    assert on_host_or_none("float", Opaque("numpy.ndarray", shape=(3,))) is None
    assert on_host_or_none("cos_sin", 1.0) is None
    assert on_host_or_none("array", x).tolist() == [1.0, 2.0]


# ---------------------------------------------------------------------------
# judging.py: the checks before any output
# ---------------------------------------------------------------------------

def _problem(**over):
    c = check([SMALL], [2 * X])
    return judge_problems(c, report(c, [2 * X], **over))


def test_a_report_without_problems_goes_on_to_the_outputs():
    assert _problem() is None
    assert result(check([SMALL], [X]), "pass", "pass", "ok") == {
        "target": "m.f", "label": "Exercise 0.1", "status": "pass", "kind": "pass", "misconception": None,
        "message": "ok"}


@pytest.mark.parametrize("over, kind, message", [
    ({"reference_import": "solutions.rope"}, "reference_import",
     "imports the reference: your code tried to use the reference solutions (solutions.rope). "
     "Graded code must stand on its own."),
    ({"violations": ["opened a socket", "wrote /etc"]}, "sandbox",
     "blocked: your code tried to do something the grader does not allow: opened a socket; wrote /etc."),
    ({"import_error": "SyntaxError on line 3"}, "import", "SyntaxError on line 3"),
    ({"found": "missing"}, "missing", "f is not defined in your file."),
    ({"found": "other", "type_name": "int"}, "type", "f should be a function; found int."),
    ({"found": "class", "type_name": "type"}, "type", "f should be a function; found type."),
    ({"signatures": {"f": {"params": [["y", 1, None]], "text": "f(y)"}}}, "signature",
     "signature: expected f(x), found f(y). Keep the signature of the stub."),
    ({"signatures": {}}, "signature", "signature: expected f(x), found no f. Keep the signature of the stub."),
])
def test_each_problem_before_the_outputs_by_hand(over, kind, message):
    r = _problem(**over)
    assert (r["status"], r["kind"], r["message"], r["misconception"]) == ("fail", kind, message, None)


def test_a_class_for_a_function_and_stubs_all_or_some():
    c = check([SMALL], [X], methods=("__init__", "__call__"),
              signatures={"f.__init__": {"params": [], "text": "f.__init__()"},
                          "f.__call__": {"params": [], "text": "f.__call__()"}})
    base = dict(found="class", signatures=c.signatures)
    assert judge_problems(c, report(c, [X], **base)) is None
    r = judge_problems(c, report(c, [X], **dict(base, found="function", type_name="function")))
    assert (r["kind"], r["message"]) == ("type", "f should be a class; found function.")
    r = judge_problems(c, report(c, [X], **dict(base, stubs={"__init__": True, "__call__": True})))
    assert (r["status"], r["kind"], r["message"]) == ("not attempted", "not attempted", "not attempted")
    r = judge_problems(c, report(c, [X], **dict(base, stubs={"__init__": False, "__call__": True})))
    assert (r["status"], r["kind"], r["message"]) == (
        "fail", "unfinished", "f.__call__ still raises NotImplementedError; finish it too.")
    r = judge_problems(c, report(c, [X], **dict(base, stubs={})))
    assert r is None                                            # no stub to speak of: judged on its outputs


# ---------------------------------------------------------------------------
# judging.py: the outputs, layer by layer
# ---------------------------------------------------------------------------

def test_right_numbers_pass_and_a_refusal_where_one_is_due_counts():
    c = check([SMALL, TOO_LONG], [2 * X, None])
    r = judge(c, report(c, [2 * X + 1e-10, raised("ValueError")]))
    assert (r["status"], r["kind"], r["message"]) == ("pass", "pass", "f: all 2 cases pass.")


def test_a_raise_is_reported_with_what_must_be_raised():
    c = check([SMALL, TOO_LONG], [2 * X, None])
    r = judge(c, report(c, [raised("ZeroDivisionError", "division by zero", " (line 4)")]))
    assert (r["kind"], r["message"]) == (
        "raised", "raised ZeroDivisionError: division by zero on case 'small'. (line 4)\nInput: x = [1, 2, 3, 4]")
    r = judge(c, report(c, [2 * X, raised("TypeError")]))
    assert (r["kind"], r["message"]) == (
        "raised", "raised TypeError: bad on case 'too long'. It must raise ValueError here.\nInput: T = 9")


def test_the_stubs_own_error_is_unfinished_another_not_implemented_is_a_raise():
    c = check([SMALL], [2 * X])
    r = judge(c, report(c, [raised("NotImplementedError", "Exercise 0.1")]))
    assert (r["kind"], r["message"]) == (
        "unfinished", "your code reached the stub's NotImplementedError('Exercise 0.1') on case 'small'; "
                      "finish every part of f.")
    assert judge(c, report(c, [raised("NotImplementedError", "Exercise 0.2")]))["kind"] == "raised"
    assert judge(c, report(c, [raised("ValueError", "Exercise 0.1")]))["kind"] == "raised"


def test_returning_where_an_error_is_due_is_no_error():
    c = check([SMALL, TOO_LONG], [2 * X, None])
    r = judge(c, report(c, [2 * X, np.zeros((2, 3))]))
    assert (r["kind"], r["message"], r["misconception"]) == (
        "no_error", "no error: returned numpy.ndarray of shape (2, 3) on case 'too long', "
                    "where f must raise ValueError.\nInput: T = 9", None)
    # the candidate's other numbers wrong too: the numbers are the feedback
    assert judge(c, report(c, [3 * X, np.zeros(2)]))["kind"] == "numbers"
    c = check([SMALL, TOO_LONG], [0.5, None], output="float")
    r = judge(c, report(c, [0.5, 7.0]))
    assert r["message"].startswith("no error: returned float on case 'too long',")


def test_a_wrong_type_names_what_came_back():
    c = check([SMALL], [2 * X])
    r = judge(c, report(c, [[2.0, 4.0]]))
    assert (r["kind"], r["message"]) == (
        "type", "type: returned list; expected an array of the active backend (xp.ndarray). (case 'small')")
    r = judge(c, report(c, [Opaque("torch.Tensor", shape=(4,))]))
    assert r["message"].startswith("type: returned torch.Tensor; expected an array")
    r = judge(c, report(c, [Opaque("numpy.ndarray")]))                # an array without a shape: not judged
    assert r["kind"] == "type"


def test_a_big_array_sent_back_unread_is_judged_by_its_shape():
    big = Opaque("numpy.ndarray", shape=(5,), dtype=np.float64)
    assert _big_array(big) and not _big_array(Opaque("numpy.ndarray")) and not _big_array(X)
    assert not _big_array(Opaque("list", shape=(5,)))
    c = check([SMALL], [2 * X])
    r = judge(c, report(c, [big]))
    assert (r["kind"], r["message"]) == (
        "shape", "shape: returned shape (5,); expected (4,). (case 'small')\nInput: x = [1, 2, 3, 4]")


@pytest.mark.parametrize("out, ok", [
    (0.5, True), (np.float64(0.5), True), (np.float32(0.5), True), (np.array(0.5), True),
    (np.array(0.5, dtype=np.float32), True), (2, True),
    (True, False), (np.bool_(True), False), (np.array(2), False), (np.array([0.5]), False), ("0.5", False),
])
def test_a_score_is_a_real_number_or_a_zero_dimensional_float_array(out, ok):
    c = check([SMALL], [0.5], output="float")
    r = judge(c, report(c, [out]))
    if ok:
        assert r["kind"] == "pass" if float(out) == 0.5 else r["kind"] == "numbers"
    else:
        assert r["kind"] == "type"
        assert r["message"].endswith("expected a Python float (float(...) of the summed products). (case 'small')")
    if out is True:
        assert r["message"] == ("type: returned bool; expected a Python float (float(...) of the summed products). "
                                "(case 'small')")
    if isinstance(out, np.ndarray) and not ok:
        assert f"of shape {out.shape}" in r["message"]


def test_a_cos_sin_pair_is_judged_part_by_part():
    cos, sin = np.ones((2, 4)), np.zeros((2, 4))
    c = check([SMALL], [(cos, sin)], output="cos_sin")
    assert judge(c, report(c, [(cos, sin)]))["kind"] == "pass"
    assert judge(c, report(c, [[cos, sin]]))["kind"] == "pass"
    for out in (cos, (cos,), (cos, sin, sin)):
        r = judge(c, report(c, [out]))
        assert r["kind"] == "type" and "expected a tuple (cos, sin) of two arrays." in r["message"]
    assert judge(c, report(c, [cos]))["message"].startswith("type: returned numpy.ndarray of shape (2, 4); expected")
    assert judge(c, report(c, [(cos, 0.0)]))["message"] == "type: sin is float; expected an array. (case 'small')"
    r = judge(c, report(c, [(cos, np.zeros((2, 3)))]))
    assert (r["kind"], r["message"]) == (
        "shape", "shape: sin has shape (2, 3); expected (T, d_head) = (2, 4). (case 'small')\nInput: x = [1, 2, 3, 4]")
    r = judge(c, report(c, [(cos.astype(np.float32), sin)]))
    assert (r["kind"], r["message"]) == (
        "dtype", "dtype: cos is float32; expected float64. (case 'small')\nInput: x = [1, 2, 3, 4]")
    r = judge(c, report(c, [(cos, sin + np.eye(2, 4))]))
    assert r["kind"] == "numbers" and "First bad entry sin[0, 0]: yours 1.0, expected 0.0 (off by 1)." in r["message"]
    r = judge(c, report(c, [(cos, np.full((2, 4), np.inf))]))
    assert r["message"] == ("NaN or Inf: 8 entries of sin are not finite on case 'small' (first at [0, 0]); "
                            "the expected values are all finite.\nInput: x = [1, 2, 3, 4]")


def test_shape_and_dtype_feedback_by_hand():
    c = check([SMALL], [2 * X], dtype_hint="Build it in x.dtype.")
    r = judge(c, report(c, [np.zeros(3)]))
    assert (r["kind"], r["message"]) == (
        "shape", "shape: returned shape (3,); expected (4,). (case 'small')\nInput: x = [1, 2, 3, 4]")
    r = judge(c, report(c, [(2 * X).astype(np.float32)]))
    assert (r["kind"], r["message"]) == (
        "dtype", "dtype: returned dtype float32; expected float64. Build it in x.dtype. (case 'small')\n"
                 "Input: x = [1, 2, 3, 4]")
    c = check([SMALL], [np.array([1, 2, 3, 4])], output="int_array", dtype_hint="Use integers.")
    assert judge(c, report(c, [np.array([1, 2, 3, 4], dtype=np.int32)]))["kind"] == "pass"
    assert judge(c, report(c, [np.array([1, 2, 3, 4], dtype=np.uint8)]))["kind"] == "pass"
    r = judge(c, report(c, [np.array([1.0, 2.0, 3.0, 4.0])]))
    assert r["message"] == ("dtype: returned dtype float64; expected an integer array. Use integers. (case 'small')\n"
                            "Input: x = [1, 2, 3, 4]")


def test_a_shape_slip_that_is_a_known_mistake_says_so():
    c = check([SMALL], [2 * X], misconceptions=[dict(MISTAKE, outputs=[np.array([2.0, 4.0, 6.0])])])
    r = judge(c, report(c, [np.array([2.0, 4.0, 6.0])]))
    assert (r["kind"], r["misconception"]) == ("shape", "m.twice")
    assert r["message"] == ("shape: returned shape (3,); expected (4,). (case 'small')\nInput: x = [1, 2, 3, 4]"
                            "\nThis looks like a known mistake, twice over: scale once.")
    r = judge(c, report(c, [np.array([2.0, 4.0, 7.0])]))
    assert (r["kind"], r["misconception"]) == ("shape", None) and "known mistake" not in r["message"]


def test_writing_into_an_input_is_reported():
    c = check([SMALL], [2 * X])
    msg = ("mutated its input: an input array changed during the call on case 'small'. Build a new array "
           "(e.g. with xp.concatenate) instead of writing into x.\nInput: x = [1, 2, 3, 4]")
    for after in ([[X + 1]], [[X.astype(np.float32)]], [[X[:3]]], [[]], [[X, X]]):
        r = judge(c, report(c, [2 * X], after=after))
        assert (r["kind"], r["message"]) == ("mutated", msg)
    nan_in = Case("nan", args=(np.array([np.nan, 1.0]),), show="x = [nan, 1]")
    c = check([nan_in], [np.array([0.0, 2.0])])
    assert judge(c, report(c, [np.array([0.0, 2.0])]))["kind"] == "pass"   # a NaN left as it was is unchanged


def test_a_report_short_of_cases_is_a_crash():
    c = check([SMALL, SMALL], [2 * X, 2 * X])
    r = judge(c, report(c, [2 * X]))
    assert (r["kind"], r["message"]) == ("crashed", "the grader did not get an answer for every case.")


def test_nan_and_inf_by_hand():
    c = check([SMALL], [2 * X])
    r = judge(c, report(c, [np.array([2.0, np.nan, 6.0, -np.inf])]))
    assert (r["kind"], r["message"]) == (
        "nan", "NaN or Inf: 2 entries of the output are not finite on case 'small' (first at [1]); "
               "the expected values are all finite.\nInput: x = [1, 2, 3, 4]")
    c = check([SMALL], [0.5], output="float")
    r = judge(c, report(c, [float("nan")]))
    assert r["message"].startswith("NaN or Inf: 1 entries of the output are not finite on case 'small' (first at [])")
    c = check([SMALL, TOO_LONG], [2 * X, None])
    r = judge(c, report(c, [2 * X, np.array([np.nan])]))   # even where an error was due
    assert r["kind"] == "nan" and "on case 'too long'" in r["message"]


# ---------------------------------------------------------------------------
# judging.py: numbers and misconceptions
# ---------------------------------------------------------------------------

def test_numbers_feedback_by_hand():
    c = check([SMALL], [2 * X], elementwise_arg="x")
    r = judge(c, report(c, [np.array([2.0, 4.5, 6.0, 8.0])]))
    assert (r["kind"], r["message"]) == (
        "numbers", "numbers: on case 'small', 1 of 4 entries (25.0%) are wrong (rtol 1e-09, atol 1e-09); max abs "
                   "error 0.5. First bad entry [1]: yours 4.5, expected 4.0 (off by 0.5). There x[1] = 2.0.\n"
                   "Input: x = [1, 2, 3, 4]")
    square = Case("square", args=(np.array([[1.0, 2.0], [3.0, 4.0]]),), show="x = [[1, 2], [3, 4]]")
    c = check([SMALL, square], [2 * X, np.array([[1.0, 2.0], [3.0, 4.0]])])
    r = judge(c, report(c, [2 * X, np.array([[1.0, 2.25], [3.0, 5.0]])]))
    assert r["message"] == ("numbers: on case 'square', 2 of 4 entries (50.0%) are wrong (rtol 1e-09, atol 1e-09); "
                            "max abs error 1. First bad entry [0, 1]: yours 2.25, expected 2.0 (off by 0.25).\n"
                            "Input: x = [[1, 2], [3, 4]]")


def test_numbers_feedback_names_the_input_entry_only_where_it_lines_up():
    c = check([Case("c", args=(np.zeros(3),), show="x = 0")], [np.zeros(4)], elementwise_arg="x")
    assert "There" not in judge(c, report(c, [np.ones(4)]))["message"]
    c = check([Case("c", args=(3,), show="T = 3")], [np.zeros(4)], elementwise_arg="x")
    assert "There" not in judge(c, report(c, [np.ones(4)]))["message"]
    c = check([Case("c", show="nothing")], [np.zeros(4)], elementwise_arg="x")
    assert "There" not in judge(c, report(c, [np.ones(4)]))["message"]


def test_numbers_feedback_in_float32_integers_and_scores():
    x32 = np.array([0.5], dtype=np.float32)
    c = check([Case("f32", args=(x32,), show="x = [0.5]")], [x32])
    r = judge(c, report(c, [np.array([0.1], dtype=np.float32)]))
    assert r["message"] == ("numbers: on case 'f32', 1 of 1 entries (100.0%) are wrong (rtol 1e-05, atol 1e-05); max "
                            "abs error 0.4. First bad entry [0]: yours 0.10000000149011612, expected 0.5 (off by -0.4)."
                            "\nInput: x = [0.5]")
    c = check([SMALL], [np.array([1, 2, 3])], output="int_array")
    r = judge(c, report(c, [np.array([1, 2, 5])]))
    assert r["message"] == ("numbers: on case 'small', 1 of 3 entries (33.3%) are wrong (exact integers); max abs "
                            "error 2. First bad entry [2]: yours 5, expected 3 (off by 2).\nInput: x = [1, 2, 3, 4]")
    c = check([SMALL], [0.25], output="float")
    r = judge(c, report(c, [0.5]))
    assert r["message"] == ("numbers: on case 'small', 1 of 1 entries (100.0%) are wrong (rtol 1e-09, atol 1e-09); max "
                            "abs error 0.25. First bad entry the value: yours 0.5, expected 0.25 (off by 0.25).\n"
                            "Input: x = [1, 2, 3, 4]")


def test_num_shows_every_digit_and_numbers_without_a_difference_say_so():
    assert _num(np.float32(0.1)) == "0.10000000149011612"
    assert _num(0.9210609793663025) == "0.9210609793663025"
    assert _num(np.int64(7)) == "7"
    c = check([SMALL, TOO_LONG], [2 * X, None])
    assert _numbers(c, [2 * X, None]) == "numbers: outputs differ."


def _mistaken(outputs, match_tol=None, cases=(SMALL,), expected=(2 * X,)):
    return check(cases, expected, misconceptions=[dict(MISTAKE, match_tol=match_tol, outputs=outputs)])


def test_a_known_mistake_is_named():
    c = _mistaken([4 * X])
    r = judge(c, report(c, [4 * X]))
    assert (r["kind"], r["misconception"], r["message"]) == ("misconception", "m.twice",
                                                             "misconception, twice over: scale once.")
    r = judge(c, report(c, [4 * X + 1e-3]))
    assert (r["kind"], r["misconception"]) == ("numbers", None)
    c = _mistaken([4 * X], match_tol=(0.0, 1e-2))                 # recognised within its own tolerance
    assert judge(c, report(c, [4 * X + 1e-3]))["misconception"] == "m.twice"


def test_a_mistake_must_match_every_case_and_differ_on_one():
    two = Case("two", args=(X,), show="x = [1, 2, 3, 4] again")
    c = _mistaken([2 * X, 4 * X], cases=(SMALL, two), expected=(2 * X, 2 * X))
    assert judge(c, report(c, [2 * X, 4 * X]))["misconception"] == "m.twice"
    assert judge(c, report(c, [3 * X, 4 * X]))["misconception"] is None
    assert judge(c, report(c, [2 * X, 5 * X]))["misconception"] is None
    c = _mistaken([None, 4 * X], cases=(SMALL, two), expected=(2 * X, 2 * X))   # the mistake raised on 'small'
    assert judge(c, report(c, [3 * X, 4 * X]))["misconception"] == "m.twice"
    # a "mistake" that is right everywhere never names a wrong answer
    c = _mistaken([2 * X, None], cases=(SMALL, TOO_LONG), expected=(2 * X, None))
    r = judge(c, report(c, [2 * X, X]))
    assert (r["kind"], r["misconception"]) == ("no_error", None)


def test_a_mistake_that_returns_where_an_error_is_due():
    c = _mistaken([2 * X, np.zeros(2)], cases=(SMALL, TOO_LONG), expected=(2 * X, None))
    r = judge(c, report(c, [2 * X, np.zeros(2)]))
    assert (r["kind"], r["misconception"]) == ("misconception", "m.twice")
    r = judge(c, report(c, [2 * X, np.ones(2)]))
    assert (r["kind"], r["misconception"]) == ("no_error", None)
    r = judge(c, report(c, [2 * X, np.zeros(3)]))                   # a shape close cannot compare: no match
    assert (r["kind"], r["misconception"]) == ("no_error", None)
    c = _mistaken([2 * X, np.zeros(2)], match_tol=(0.0, 0.5), cases=(SMALL, TOO_LONG), expected=(2 * X, None))
    assert judge(c, report(c, [2 * X, np.full(2, 0.25)]))["misconception"] == "m.twice"
    # the candidate refused, as it must: the mistake that returns is not what it did
    c = _mistaken([4 * X, np.zeros(2)], cases=(SMALL, TOO_LONG), expected=(2 * X, None))
    r = judge(c, report(c, [4 * X, raised("ValueError")]))
    assert (r["kind"], r["misconception"]) == ("numbers", None)


def test_match_survives_outputs_it_cannot_compare():
    pair = (np.ones(2), np.ones(2))
    c = check([SMALL], [pair], output="cos_sin",
              misconceptions=[dict(MISTAKE, outputs=[(np.zeros(2), np.zeros(2))])])
    assert _match(c, [(np.zeros(2), "not a number")]) is None
    c = check([SMALL, TOO_LONG], [pair, None], output="cos_sin",
              misconceptions=[dict(MISTAKE, outputs=[None, (np.zeros(2), np.zeros(2))])])
    assert _match(c, [None, (np.zeros(2), "not a number")]) is None


# ---------------------------------------------------------------------------
# The survivors of the first mutation run (bench_results/mutation_2026-12-06/judging_comparing.md)
# ---------------------------------------------------------------------------

def test_judge_runs_the_checks_before_the_outputs():
    c = check([SMALL], [2 * X])
    r = judge(c, report(c, [2 * X], found="missing"))
    assert (r["kind"], r["message"]) == ("missing", "f is not defined in your file.")


def test_every_stub_left_and_every_signature_problem_is_listed():
    names = ("a", "b", "c")
    sigs = {f"f.{m}": {"params": [], "text": f"f.{m}()"} for m in names}
    c = check([SMALL], [X], methods=names, signatures=sigs)
    r = judge_problems(c, report(c, [X], found="class", signatures=sigs, stubs={"a": True, "b": False, "c": True}))
    assert r["message"] == "f.a, f.c still raises NotImplementedError; finish it too."
    r = judge_problems(c, report(c, [X], found="class", stubs={"a": False, "b": False, "c": False},
                                 signatures=dict(sigs, **{"f.a": {"params": [["y", 1, None]], "text": "f.a(y)"}},
                                                 **{"f.c": None})))
    assert r["message"] == ("signature: expected f.a(), found f.a(y); expected f.c(), found no f.c. "
                            "Keep the signature of the stub.")


def test_big_integers_are_compared_exactly_everywhere():
    r"""10**10 and 10**10 + 1 are within a float comparison's rtol 1e-9 (10 apart is allowed), not equal."""
    big = np.array([10 ** 10, 7])
    off = np.array([10 ** 10 + 1, 7])
    c = check([SMALL], [big], output="int_array")
    r = judge(c, report(c, [off]))
    assert (r["kind"], r["message"]) == (
        "numbers", "numbers: on case 'small', 1 of 2 entries (50.0%) are wrong (exact integers); max abs error 1. "
                   "First bad entry [0]: yours 10000000001, expected 10000000000 (off by 1).\nInput: x = [1, 2, 3, 4]")
    c = check([SMALL, TOO_LONG], [big, None], output="int_array")
    assert judge(c, report(c, [off, big]))["kind"] == "numbers"                  # not "no_error"
    # a mistake is recognised exactly too, where it returns and where it must raise
    c = check([SMALL], [big], output="int_array", misconceptions=[dict(MISTAKE, outputs=[off])])
    assert judge(c, report(c, [np.array([10 ** 10 + 2, 7])]))["kind"] == "numbers"
    assert _match(c, [big + 0]) is None                                          # the mistake is no mistake here
    c = check([SMALL, TOO_LONG], [big, None], output="int_array",
              misconceptions=[dict(MISTAKE, outputs=[big * 0, off])])
    assert _match(c, [big * 0, big]) is None


def test_a_score_from_float32_inputs_is_judged_at_float32_tolerance():
    x32 = np.array([1.0, 2.0], dtype=np.float32)
    case = Case("f32", args=(x32,), show="x = [1, 2] (float32)")
    c = check([case], [0.5], output="float")
    assert judge(c, report(c, [0.5 + 2e-6]))["kind"] == "pass"                  # 2e-6 < 1e-5 + 1e-5 * 0.5
    assert judge(c, report(c, [0.5 + 4e-5]))["kind"] == "numbers"
    c = check([case, TOO_LONG], [0.5, None], output="float")
    assert judge(c, report(c, [0.5 + 2e-6, 1.0]))["kind"] == "no_error"
    c = check([case], [0.5], output="float", misconceptions=[dict(MISTAKE, outputs=[0.75])])
    assert judge(c, report(c, [0.75 + 2e-6]))["misconception"] == "m.twice"
    c = check([case], [0.5], output="float", misconceptions=[dict(MISTAKE, outputs=[0.5 + 2e-6])])
    assert _match(c, [0.5 + 2e-6]) is None                 # at float32's tolerance this "mistake" is the answer


def test_a_refusal_of_a_score_or_a_pair_passes():
    c = check([SMALL, TOO_LONG], [0.5, None], output="float")
    assert judge(c, report(c, [0.5, raised("ValueError")]))["kind"] == "pass"
    pair = (np.ones((2, 4)), np.zeros((2, 4)))
    c = check([SMALL, TOO_LONG], [pair, None], output="cos_sin")
    assert judge(c, report(c, [pair, raised("ValueError")]))["kind"] == "pass"


def test_an_integer_score_is_shown_as_the_float_it_is_compared_as():
    c = check([SMALL], [0.25], output="float")
    r = judge(c, report(c, [1]))
    assert "First bad entry the value: yours 1.0, expected 0.25 (off by 0.75)." in r["message"]


def test_numbers_use_the_float64_rtol_and_atol():
    r"""Against float64's 1e-9: 5e-9 off 0 is wrong (default atol 1e-8 would pass it), 1e-3 off 1000 is wrong
    (default rtol 1e-5 would pass it)."""
    c = check([SMALL], [np.array([0.0, 1000.0, 1.0])])
    r = judge(c, report(c, [np.array([5e-9, 1000.001, 2.0])]))
    assert r["message"].startswith("numbers: on case 'small', 3 of 3 entries (100.0%) are wrong (rtol 1e-09, "
                                   "atol 1e-09); max abs error 1. First bad entry [0]: yours 5e-09, expected 0.0 "
                                   "(off by 5e-09).")


def test_a_pair_of_big_arrays_is_judged_by_its_shapes():
    c = check([SMALL], [(np.ones((2, 4)), np.zeros((2, 4)))], output="cos_sin")
    big = Opaque("numpy.ndarray", shape=(2, 5), dtype=np.float64)
    r = judge(c, report(c, [(big, big)]))
    assert (r["kind"], r["message"]) == (
        "shape", "shape: cos has shape (2, 5); expected (T, d_head) = (2, 4). (case 'small')\nInput: x = [1, 2, 3, 4]")


def test_a_pair_of_two_shapes_can_be_a_known_mistake():
    cos, sin = np.ones((2, 4)), np.zeros((2, 4))
    slip = (cos, sin[:, :3])
    c = check([SMALL], [(cos, sin)], output="cos_sin", misconceptions=[dict(MISTAKE, outputs=[slip])])
    r = judge(c, report(c, [slip]))
    assert (r["kind"], r["misconception"]) == ("shape", "m.twice")
    c = check([SMALL, TOO_LONG], [(cos, sin), None], output="cos_sin",
              misconceptions=[dict(MISTAKE, outputs=[(cos, sin), slip])])
    r = judge(c, report(c, [(cos, sin), slip]))
    assert (r["kind"], r["misconception"]) == ("misconception", "m.twice")


def test_the_second_mistake_is_found_when_the_first_fails_where_an_error_is_due():
    first = dict(MISTAKE, key="m.first", outputs=[2 * X, np.ones(2)])
    second = dict(MISTAKE, key="m.second", outputs=[2 * X, np.zeros(2)])
    c = check([SMALL, TOO_LONG], [2 * X, None], misconceptions=[first, second])
    assert judge(c, report(c, [2 * X, np.zeros(2)]))["misconception"] == "m.second"


def test_a_comparison_that_raises_is_no_match():
    pair = (np.ones(2), np.ones(2))
    c = check([SMALL], [pair], output="cos_sin", misconceptions=[dict(MISTAKE, outputs=[(np.zeros(2), np.zeros(2))])])
    assert _match(c, [(np.zeros(2), np.array(["a", "b"]))]) is None
    c = check([SMALL, TOO_LONG], [pair, None], output="cos_sin",
              misconceptions=[dict(MISTAKE, outputs=[pair, (np.zeros(2), np.zeros(2))])])
    assert _match(c, [pair, (np.zeros(2), np.array(["a", "b"]))]) is None
