r"""The words a checks file is written in (``exercises/grading/targets.py``), on hand-made cases."""
import numpy as np
import pytest

from exercises.grading.targets import Case, Misconception, Target, arrays_in, invoke, normal, show


def test_a_case_a_misconception_and_a_target_default_to_nothing_extra():
    a, b = Case("a"), Case("b")
    assert (a.args, a.kwargs, a.call_args, a.call_kwargs, a.show, a.raises) == ((), {}, (), {}, "", "")
    assert a.kwargs is not b.kwargs and a.call_kwargs is not b.call_kwargs  # each case owns its dicts
    assert Misconception("k", "t", "h", impl=len).match_tol is None
    t = Target("rotate_half", "array", cases=list, misconceptions=[])
    assert (t.methods, t.elementwise_arg, t.dtype_hint, t.module, t.held_out) == ((), "", "", "", None)
    t.module = "rope"
    assert t.key == "rope.rotate_half"


def test_normal_is_numpy_s_standard_normal_stream_from_the_seed():
    x = normal((2, 3), seed=7)
    assert x.shape == (2, 3) and x.dtype == np.float64
    assert np.array_equal(x.ravel(), np.random.default_rng(7).standard_normal(6))  # NumPy's own stream, seed 7
    assert np.array_equal(normal((2, 3), seed=7), x) and not np.array_equal(normal((2, 3), seed=8), x)
    single = normal((4,), seed=7, dtype=np.float32)
    assert single.dtype == np.float32
    assert np.array_equal(single, np.random.default_rng(7).standard_normal(4).astype(np.float32))


def test_show_prints_up_to_sixteen_values_to_four_decimals_and_only_the_shape_past_that():
    assert show("x", [1, 2, 3, 4]) == "x = [1, 2, 3, 4]"
    assert show("x", [1.23456, 6.54321]) == "x = [1.2346, 6.5432]"  # rounded to 4 decimals by hand
    assert show("pos", np.arange(16)).startswith("pos = [ 0,  1,  2,")  # 16 entries: still the values
    assert show("pos", np.zeros((17,))) == "pos: shape (17,), float64"  # 17: shape and dtype
    assert show("q", np.zeros((2, 3, 4), np.float32), "seed 0") == "q: shape (2, 3, 4), float32, seed 0"


def test_invoke_calls_a_function_once_and_a_class_then_its_instance():
    calls = []

    def f(*args, **kwargs):
        calls.append((args, kwargs))
        return f

    case = Case("c", args=(1, 2), kwargs={"k": 3}, call_args=(4,), call_kwargs={"m": 5})
    assert invoke(f, case, is_class=False) is f
    assert calls == [((1, 2), {"k": 3})]
    calls.clear()
    assert invoke(f, case, is_class=True) is f
    assert calls == [((1, 2), {"k": 3}), ((4,), {"m": 5})]


def test_arrays_in_lists_every_input_array_in_order_and_nothing_else():
    a, b, c, d = (np.zeros(1) for _ in range(4))
    case = Case("c", args=(a, 3, "s"), kwargs={"x": b, "n": None}, call_args=(c, 1.5), call_kwargs={"y": d})
    got = arrays_in(case)
    assert len(got) == 4 and all(g is e for g, e in zip(got, (a, b, c, d)))
    assert arrays_in(Case("empty")) == []


@pytest.mark.parametrize("where", ["args", "kwargs", "call_args", "call_kwargs"])
def test_arrays_in_finds_an_array_in_each_place(where):
    a = np.ones(2)
    case = Case("c", **{where: {"v": a} if where.endswith("kwargs") else (a,)})
    got = arrays_in(case)
    assert len(got) == 1 and got[0] is a
