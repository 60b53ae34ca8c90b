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
