r"""The exercise references in ``solutions/`` and the library in ``mini_transformer.positional`` agree.

The grader trusts ``solutions/`` and the models run ``mini_transformer``: two implementations of
the same math, written apart. These tests feed both the same random float64 inputs (or the same
integer grids) and demand the same answer, so neither can drift from the other unnoticed.

Where the two interfaces differ on purpose, the test converts explicitly and says why next to
the conversion. Floats agree to 1e-12, relative or absolute (most are bit-equal; linear scaling and
the wavelengths round in a different order); integer outputs (permutations, buckets) agree exactly.
"""
import numpy as np
import pytest

from mini_transformer import positional as lib
from mini_transformer.engine.backend import asarray, to_numpy, xp
from mini_transformer.positional.rope_scaling import wavelengths
from solutions import alibi, rope, sinusoidal, t5

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


SCALINGS = [(None, 1.0), ("linear", 4.0), ("ntk", 4.0), ("linear", 2.5), ("ntk", 8.0)]


@pytest.mark.parametrize("scaling, factor", SCALINGS, ids=[f"{s}-{f:g}" for s, f in SCALINGS])
@pytest.mark.parametrize("d_head, base", [(8, 10000.0), (64, 10000.0), (32, 500000.0)])
def test_scaled_inv_freq(each_backend, scaling, factor, d_head, base):
    # the library serves every scaling method through its frequencies, so the two compare directly
    library = lib.RotaryEmbedding(d_head, base, scaling=scaling, factor=factor)
    assert_same(rope.scaled_inv_freq(d_head, base, scaling, factor), library.inv_freq)


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
    # i + d/2); 6.7 expects the reader to convert it with argsort(perm), the inverse of 6.8's answer.
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


# ---------------------------------------------------------------------------
# The drills: sinusoidal, ALiBi, T5
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("T, d_model, base", [(1, 4, 10000.0), (50, 64, 10000.0), (7, 8, 100.0), (20, 2, 10000.0)])
def test_sinusoidal_positional_encoding(each_backend, T, d_model, base):
    assert_same(sinusoidal.sinusoidal_positional_encoding(T, d_model, base),
                lib.sinusoidal_positional_encoding(T, d_model, base))
    # The drill has no offset argument; the library's offset table is the drill's longer table, cut.
    offset = 13
    assert_same(sinusoidal.sinusoidal_positional_encoding(offset + T, d_model, base)[offset:],
                lib.sinusoidal_positional_encoding(T, d_model, base, offset=offset))


@pytest.mark.parametrize("n_heads", list(range(1, 17)) + [24, 32, 40, 64])
def test_alibi_slopes(each_backend, n_heads):
    assert_same(alibi.alibi_slopes(n_heads), lib.alibi_slopes(n_heads))


@pytest.mark.parametrize("n_heads, T_q, T_k", [(8, 5, 5), (6, 1, 9), (12, 3, 10), (1, 4, 4)])
def test_alibi_bias(each_backend, n_heads, T_q, T_k):
    # The drill is the causal bias only; the library's bidirectional=True (encoders) has no drill.
    assert_same(alibi.alibi_bias(n_heads, T_q, T_k), lib.alibi_bias(n_heads, T_q, T_k, bidirectional=False))


# bidirectional splits the buckets into two equal halves, so an odd count is causal only
BUCKETS = [(bidirectional, num_buckets, max_distance)
           for num_buckets, max_distance in [(32, 128), (16, 64), (8, 20), (64, 256), (18, 128), (20, 160),
                                             (10, 160), (33, 128)]
           for bidirectional in (True, False) if not (bidirectional and num_buckets % 2)]


@pytest.mark.parametrize("bidirectional, num_buckets, max_distance", BUCKETS,
                         ids=[f"{'bi' if b else 'causal'}-{n}-{m}" for b, n, m in BUCKETS])
def test_relative_position_bucket(each_backend, bidirectional, num_buckets, max_distance):
    # Every distance out to well past max_distance, so each exact, log-spaced and capped bucket is hit,
    # including the distances that sit exactly on a boundary (8 with 18 buckets and max_distance 128).
    rel = asarray(np.arange(-3 * max_distance, 3 * max_distance + 1))
    kw = {"bidirectional": bidirectional, "num_buckets": num_buckets, "max_distance": max_distance}
    assert_same(t5.relative_position_bucket(rel, **kw), lib.relative_position_bucket(rel, **kw), exact=True)
    grid = asarray(np.arange(12)[None, :] - np.arange(12)[:, None])  # (T_q, T_k): key_pos - query_pos
    assert_same(t5.relative_position_bucket(grid, **kw), lib.relative_position_bucket(grid, **kw), exact=True)
