r"""The RoPE references (``solutions/rope.py``, chapter 6) and the library agree: rotate-half and interleaved
rotations, the tables and their scaled frequencies, the wavelengths, a pair's score, and the permutation between the
two layouts (see ``agreement.py`` for the tolerance and why the two are compared).
"""
import pytest

from mini_transformer import positional as lib
from mini_transformer.engine.backend import to_numpy, xp
from mini_transformer.positional.rope_scaling import wavelengths
from solutions import rope

from agreement import ATOL, assert_same, randn


# ---------------------------------------------------------------------------
# RoPE, rotate-half convention
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4,), (3, 8), (2, 3, 5, 64)])
def test_rotate_half(each_backend, shape):
    x = randn(0, *shape)
    assert_same(rope.rotate_half(x), lib.rotate_half(x))


@pytest.mark.parametrize("d_head, T, offset", [(8, 5, 0), (64, 7, 0), (16, 4, 1000)])
def test_apply_rotary(each_backend, d_head, T, offset):
    x = randn(1, 2, 3, T, d_head)  # (B, H, T, d_head)
    cos, sin = lib.RotaryEmbedding(d_head)(T, offset)
    assert_same(rope.apply_rotary(x, cos, sin), lib.apply_rotary(x, cos, sin))


@pytest.mark.parametrize("d_head, base", [(8, 10000.0), (64, 10000.0), (32, 500000.0)])
@pytest.mark.parametrize("T, offset", [(6, 0), (3, 37), (1, 4095)])
def test_rotary_embedding_tables(each_backend, d_head, base, T, offset):
    mine, library = rope.RotaryEmbedding(d_head, base), lib.RotaryEmbedding(d_head, base)
    for a, b in zip(mine(T, offset=offset), library(T, offset=offset)):
        assert_same(a, b)
    assert_same(mine.inv_freq, library.inv_freq)


@pytest.mark.parametrize("d_head, base", [(8, 10000.0), (128, 10000.0), (64, 500000.0)])
def test_wavelength_table(each_backend, d_head, base):
    assert_same(rope.wavelength_table(d_head, base), wavelengths(d_head, base))


@pytest.mark.parametrize("m, n", [(3, 1), (103, 101), (0, 9), (50, 50)])
def test_relative_score(each_backend, m, n):
    # The library has no single-pair score function; build it from the library's tables and rotation.
    d_head = 16
    q, k = randn(2, d_head), randn(3, d_head)
    library = lib.RotaryEmbedding(d_head)
    q_m = lib.apply_rotary(q[None, :], *library(1, offset=m))  # (1, d_head)
    k_n = lib.apply_rotary(k[None, :], *library(1, offset=n))
    expected = float(to_numpy(xp.sum(q_m * k_n)))
    assert abs(rope.relative_score(q, k, m, n, rope.RotaryEmbedding(d_head)) - expected) <= ATOL


# ---------------------------------------------------------------------------
# RoPE, interleaved convention, and the permutation between the two
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(2,), (3, 8), (2, 3, 5, 64)])
def test_rotate_interleaved(each_backend, shape):
    x = randn(4, *shape)
    assert_same(rope.rotate_interleaved(x), lib.rotate_interleaved(x))


@pytest.mark.parametrize("d_head, T, offset", [(8, 5, 0), (64, 7, 0), (16, 4, 1000)])
def test_apply_rotary_interleaved(each_backend, d_head, T, offset):
    x = randn(5, 2, 3, T, d_head)  # (B, H, T, d_head), interleaved layout
    library = lib.RotaryEmbedding(d_head, interleaved=True)
    cos_lib, sin_lib = library(T, offset)  # repeat-interleave layout, made by the library itself
    # The exercise's RotaryEmbedding only writes the rotate-half layout (pair i in columns i and
    # i + d/2); 6.9 expects the reader to convert it with argsort(perm), its inverse.
    cos, sin = rope.RotaryEmbedding(d_head)(T, offset=offset)
    back = xp.argsort(rope.interleaved_to_half_permutation(d_head))
    cos_i, sin_i = cos[:, back], sin[:, back]
    assert_same(cos_i, cos_lib)
    assert_same(sin_i, sin_lib)
    assert_same(rope.apply_rotary_interleaved(x, cos_i, sin_i), lib.apply_rotary(x, cos_lib, sin_lib, interleaved=True))


@pytest.mark.parametrize("d_head", [2, 4, 8, 16, 64, 128])
def test_interleaved_to_half_permutation(each_backend, d_head):
    assert_same(rope.interleaved_to_half_permutation(d_head), lib.rope_channel_permutation(d_head), exact=True)


def test_permutation_carries_interleaved_rope_into_rotate_half_rope(each_backend):
    """The library's stated property, RoPE_half(x[P]) == RoPE_interleaved(x)[P], with the exercise's P."""
    d_head, T = 16, 6
    perm = rope.interleaved_to_half_permutation(d_head)
    x = randn(6, 1, 2, T, d_head)  # interleaved layout
    half = lib.apply_rotary(x[..., perm], *lib.RotaryEmbedding(d_head)(T))
    interleaved = lib.apply_rotary(x, *lib.RotaryEmbedding(d_head, interleaved=True)(T), interleaved=True)
    assert_same(half, interleaved[..., perm])
