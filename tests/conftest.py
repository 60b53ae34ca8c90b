"""Shared fixtures: run a test module under every CPU backend, and skip GPU tests without a GPU."""
import importlib.util
import os

import pytest

from mini_transformer.engine import backend

# On a GPU machine (MT_BACKEND=cupy, as scripts/gpu_check.sh sets it) the backend tests run on CuPy itself.
_CPU_BACKENDS = ["cupy"] if os.environ.get("MT_BACKEND") == "cupy" else ["numpy", "strict"]


@pytest.fixture(params=_CPU_BACKENDS)
def each_backend(request):
    """Run the test once on NumPy and once on the strict stand-in that behaves like CuPy (on CuPy, with a GPU)."""
    previous = backend.get_backend()
    backend.set_backend(request.param)
    yield request.param
    backend.set_backend(previous)


def _gpu_available():
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if any("gpu" in item.keywords for item in items) and not _gpu_available():
        skip = pytest.mark.skip(reason="needs CuPy and an NVIDIA GPU")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
