"""Shared by the data tests (``test_tokenizer``, ``test_corpus``, ``test_tasks``): each backend in turn, and arrays read back on the host."""
import pytest

from mini_transformer.engine import backend


@pytest.fixture(params=["numpy", "strict"])
def backend_name(request):
    """The test once on NumPy and once on the strict stand-in for CuPy; NumPy again after."""
    backend.set_backend(request.param)
    yield request.param
    backend.set_backend("numpy")


def host(a):
    """A backend array as host NumPy, after checking it really lives on the active backend."""
    assert backend.is_array(a), f"expected a {backend.get_backend()} array, got {type(a).__name__}"
    return backend.to_numpy(a)
