r"""Learned absolute positions: the rows of the positions asked for, and nothing past the table.

Expected numbers are worked by hand from the papers' formulas (the working sits next to each number),
never produced by the code under test. Everything runs on NumPy and on the strict CuPy stand-in.
"""
import numpy as np
import pytest

from mini_transformer.engine import backend
from mini_transformer.positional import LearnedPositionalEmbedding

from positional_helpers import N, make, T, set_

pytestmark = pytest.mark.usefixtures("each_backend")


def test_learned_positional_embedding_offset():
    emb = LearnedPositionalEmbedding(8, 4, backend.rng(0))
    out = emb.rows(3, offset=5)
    assert out.shape == (1, 3, 4)
    np.testing.assert_array_equal(N(out)[0], N(emb.weight)[5:8])
    with pytest.raises(ValueError, match=r"T_max=8.*position 8 is at or past T_max=8"):
        emb.rows(3, offset=6)


def test_learned_embed_adds_the_rows_of_its_positions():
    # a table whose row t is (t, -t, 10 t, 0); tokens at positions 2, 3, 4 get rows 2, 3, 4 added
    scheme = make("learned", d_model=4, n_heads=1)
    set_(scheme.weight, [[t, -t, 10 * t, 0] for t in range(16)])
    out = N(scheme.embed(T(np.ones((1, 3, 4))), 2))[0]
    np.testing.assert_array_equal(out, [[3, -1, 21, 1], [4, -2, 31, 1], [5, -3, 41, 1]])
