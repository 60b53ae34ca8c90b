r"""NoPE: no positional information anywhere.

Expected numbers are worked by hand from the papers' formulas (the working sits next to each number),
never produced by the code under test. Everything runs on NumPy and on the strict CuPy stand-in.
"""
import numpy as np
import pytest

from positional_helpers import N, make, T, P

pytestmark = pytest.mark.usefixtures("each_backend")


def test_none_adds_nothing_anywhere():
    scheme = make("none")
    x, q = T(np.arange(24.0).reshape(2, 3, 4)), T(np.arange(16.0).reshape(1, 2, 2, 4))
    pos = P([7, 8])
    np.testing.assert_array_equal(N(scheme.embed(x, 5)), np.arange(24.0).reshape(2, 3, 4))
    np.testing.assert_array_equal(N(scheme.rotate(q, pos, 0)), np.arange(16.0).reshape(1, 2, 2, 4))
    assert scheme.score_bias(q, q, pos, pos, 0) is None and scheme.output_term(q, pos, pos, 0) is None
