r"""What the agreement tests of the references share: the exercise references in ``solutions/`` and the library in
``mini_transformer.positional`` compute the same math, written apart.

The grader trusts ``solutions/`` and the models run ``mini_transformer``, so the tests feed both the same random
float64 inputs (or the same integer grids) and demand the same answer: neither can drift from the other unnoticed.
Where the two interfaces differ on purpose, a test converts explicitly and says why next to the conversion.
Floats agree to 1e-12, relative or absolute (most are bit-equal; linear scaling and the wavelengths round in a
different order); integer outputs (permutations, buckets) agree exactly.
"""
import numpy as np

from mini_transformer.engine.backend import asarray, to_numpy

ATOL = 1e-12


def randn(seed, *shape):
    """Random float64 normals on the active backend."""
    return asarray(np.random.default_rng(seed).standard_normal(shape))


def assert_same(mine, library, exact=False):
    mine, library = to_numpy(mine), to_numpy(library)
    assert mine.shape == library.shape, f"solutions gives shape {mine.shape}, the library {library.shape}"
    if exact:
        assert mine.dtype.kind == library.dtype.kind == "i", (mine.dtype, library.dtype)
        np.testing.assert_array_equal(mine, library)
    else:
        np.testing.assert_allclose(mine, library, rtol=ATOL, atol=ATOL)
