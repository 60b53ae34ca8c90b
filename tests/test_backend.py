"""The backend switch: one place knows the array library, and the strict stand-in catches CuPy leaks."""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from mini_transformer import backend


def test_numpy_is_the_default():
    env = {k: v for k, v in os.environ.items() if k != "MT_BACKEND"}   # this run may have chosen another
    code = "from mini_transformer import backend; import numpy; print(backend.get_backend(), " \
           "isinstance(backend.asarray([1.0]), numpy.ndarray))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["numpy", "True"]


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="'jax'"):
        backend.set_backend("jax")


def test_xp_follows_every_switch_even_for_names_it_has_looked_up():
    # xp keeps each function it looked up; switching the backend must make it look again
    with backend.using("numpy"):
        assert backend.xp.zeros is np.zeros and type(backend.xp.zeros(2)) is np.ndarray
        with backend.using("strict"):
            assert isinstance(backend.xp.zeros(2), backend.StrictArray)
        assert type(backend.xp.zeros(2)) is np.ndarray


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed here")
def test_cupy_missing_gives_one_clear_sentence():
    before = backend.get_backend()
    with pytest.raises(RuntimeError, match="CuPy is not installed.*pip install cupy"):
        backend.set_backend("cupy")
    assert backend.get_backend() == before  # no silent fallback, and no half-switched state


def test_env_var_selects_the_backend_at_import():
    out = subprocess.run([sys.executable, "-c", "from mini_transformer import backend; print(backend.get_backend())"],
                         env={**os.environ, "MT_BACKEND": "strict"}, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "strict"


def test_strict_arrays_refuse_implicit_conversion_and_mixing():
    with backend.using("strict"):
        a = backend.asarray([1.0, 2.0])
        with pytest.raises(TypeError, match="Implicit conversion"):
            np.asarray(a)
        with pytest.raises(TypeError, match="host NumPy array"):
            a + np.ones(2)
        with pytest.raises(TypeError, match="host NumPy array"):
            backend.xp.exp(np.ones(2))
        assert backend.to_numpy(backend.xp.exp(a) * 2).tolist() == pytest.approx([2 * np.e, 2 * np.e ** 2])
        assert isinstance(a.sum(), backend.StrictArray)  # reductions give 0-d arrays, as CuPy's do
        assert float(a.sum()) == 3.0


def test_generator_gives_the_same_numbers_on_every_backend():
    x = backend.to_numpy(backend.rng(5).normal(size=(3,)))
    with backend.using("strict"):
        y = backend.to_numpy(backend.rng(5).normal(size=(3,)))
    assert np.array_equal(x, y) and x.dtype == np.float32


def test_only_backend_imports_numpy():
    import pathlib
    import re
    root = pathlib.Path(backend.__file__).parent
    leaks = [str(p.relative_to(root)) for p in root.rglob("*.py") if p.name != "backend.py"
             and re.search(r"^\s*(import numpy|from numpy)", p.read_text(), re.M)]
    assert leaks == [], f"numpy imported outside backend.py: {leaks}"


@pytest.mark.gpu
def test_cupy_backend_runs_a_forward_and_backward():
    from mini_transformer import Tensor
    with backend.using("cupy"):
        x = Tensor(backend.rng(0).normal(size=(4, 4)), requires_grad=True)
        (x @ x).sum().backward()
        assert type(x.grad).__module__.startswith("cupy")


@pytest.mark.parametrize("name", ["numpy", "strict"])
def test_scatter_add_adds_repeated_ids_by_hand(name):
    with backend.using(name):
        target = backend.asarray(np.zeros((4, 2)))
        ids = backend.asarray(np.array([[2, 0], [2, 2]]))                  # id 2 three times, id 0 once
        rows = backend.asarray(np.array([[[1.0, 10], [2, 20]], [[3, 30], [4, 40]]]))
        backend.scatter_add(target, ids, rows)
        assert backend.to_numpy(target).tolist() == [[2, 20], [0, 0], [8, 80], [0, 0]]
        backend.scatter_add(target, backend.asarray(np.array([-1, 3])), backend.asarray(np.ones(2)))  # -1 is row 3
        assert backend.to_numpy(target)[3].tolist() == [2, 2]
        with pytest.raises(IndexError, match="4"):
            backend.scatter_add(target, backend.asarray(np.array([4])), backend.asarray(np.ones(2)))


def test_freed_memory_is_kept_for_reuse_unless_switched_off():
    # the allocator keeps a freed 16 MiB block: RSS does not fall when it is freed (glibc Linux only)
    code = ("import os, numpy as np; from mini_transformer import backend\n"
            "rss = lambda: int(open('/proc/self/statm').read().split()[1]) * os.sysconf('SC_PAGE_SIZE')\n"
            "a = np.ones(4 << 20, np.float32); before = rss(); del a\n"
            "print(backend.freed_memory_kept, (before - rss()) >> 20)")
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("needs Linux's /proc to read the resident memory")
    kept, dropped = {}, {}
    for flag, seen in (("1", kept), ("0", dropped)):
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "MT_KEEP_FREED_MEMORY": flag},
                             capture_output=True, text=True, check=True).stdout.split()
        seen["on"], seen["freed_mib"] = out[0] == "True", int(out[1])
    if not kept["on"]:
        pytest.skip("this C library has no glibc mallopt")
    assert not dropped["on"] and dropped["freed_mib"] >= 15     # default: the 16 MiB go back at once
    assert kept["freed_mib"] <= 1                              # kept: they stay for the next array


@pytest.mark.parametrize("name", ["numpy", "strict"])
def test_sum_of_products_by_hand(name):
    with backend.using(name):
        a = backend.asarray(np.array([[1.0, 2.0], [3.0, 4.0]]))
        b = backend.asarray(np.array([[5.0, 6.0], [7.0, 8.0]]))
        assert backend.to_numpy(backend.sum_of_products(a, b)).tolist() == [17.0, 53.0]          # 5+12, 21+32
        assert backend.to_numpy(backend.sum_of_products(a, b, axis=0)).tolist() == [26.0, 44.0]  # 5+21, 12+32
        with pytest.raises(ValueError, match="axis must be -1 .* or 0 .*, got 1"):
            backend.sum_of_products(a, b, axis=1)
