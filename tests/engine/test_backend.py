"""The backend switch: one place knows the array library, and the strict stand-in catches CuPy leaks."""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.engine.strict import StrictArray


def test_numpy_is_the_default():
    env = {k: v for k, v in os.environ.items() if k != "MT_BACKEND"}   # this run may have chosen another
    code = "from mini_transformer.engine import backend; import numpy; print(backend.get_backend(), " \
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
            assert isinstance(backend.xp.zeros(2), StrictArray)
        assert type(backend.xp.zeros(2)) is np.ndarray


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed here")
def test_cupy_missing_gives_one_clear_sentence():
    before = backend.get_backend()
    with pytest.raises(RuntimeError, match="CuPy is not installed.*pip install cupy"):
        backend.set_backend("cupy")
    assert backend.get_backend() == before  # no silent fallback, and no half-switched state


def test_env_var_selects_the_backend_at_import():
    out = subprocess.run([sys.executable, "-c", "from mini_transformer.engine import backend; print(backend.get_backend())"],
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
        assert isinstance(a.sum(), StrictArray)  # reductions give 0-d arrays, as CuPy's do
        assert float(a.sum()) == 3.0


def test_generator_gives_the_same_numbers_on_every_backend():
    x = backend.to_numpy(backend.rng(5).normal(size=(3,)))
    with backend.using("strict"):
        y = backend.to_numpy(backend.rng(5).normal(size=(3,)))
    assert np.array_equal(x, y) and x.dtype == np.float32


def test_importing_the_library_changes_nothing_in_the_process():
    """No environment variable set, no allocator setting, no thread started: tuning is an explicit call."""
    code = (
        "import os, threading, ctypes, pkgutil, importlib, json\n"
        "env_before, threads_before = dict(os.environ), threading.active_count()\n"
        "calls = []\n"
        "real = ctypes.CDLL\n"
        "ctypes.CDLL = lambda *a, **k: calls.append(a) or real(*a, **k)\n"
        "import mini_transformer\n"
        "names = [m.name for m in pkgutil.walk_packages(mini_transformer.__path__, 'mini_transformer.')]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "from mini_transformer.engine.kernels import threads, tuning\n"
        "changed = sorted(k for k in set(os.environ) | set(env_before) if os.environ.get(k) != env_before.get(k))\n"
        "print(json.dumps({'modules': len(names), 'changed': changed, 'threads': threading.active_count() - threads_before,"
        " 'cdll': len(calls), 'kernel_threads': threads.threads(), 'tuned': tuning.state()}))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_THREAD_TIMEOUT", "MT_BACKEND")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    import json
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["modules"] >= 30                       # every module of the package was imported
    assert seen["changed"] == [] and seen["threads"] == 0 and seen["cdll"] == 0
    assert seen["kernel_threads"] == 1
    assert seen["tuned"] == {"threads": 1, "freed_memory_kept": False, "governor": None, "blas_threads": None,
                             "openblas_thread_timeout": None}


def test_only_backend_imports_numpy():
    # strict.py is NumPy behind a wall that behaves like CuPy: it wraps NumPy itself, by design
    import pathlib
    import re
    root = pathlib.Path(backend.__file__).parents[1]
    leaks = [str(p.relative_to(root)) for p in root.rglob("*.py") if p.name not in ("backend.py", "strict.py")
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
