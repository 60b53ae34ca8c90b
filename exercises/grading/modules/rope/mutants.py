r"""Mutants for chapter 6's reader test: RoPE implementations that are wrong in one realistic way.

Each wraps a correct ``apply_rotary`` or ``RotaryEmbedding`` (the reference, or in a student copy
the reader's own once it passes) and breaks one thing, the way a reader's code breaks. Every
one with a ``misconception`` reproduces that misconception of the wrapped exercise exactly:
``tests/grading/test_grader.py`` grades each mutant against the exercise's checks to prove it.
"""
from exercises.grading.reader_tests import Mutant, ReaderTest, disguised, wraps_function
from mini_transformer.engine.backend import xp


def _apply_with(change):
    """A mutant of apply_rotary: ``change(apply_rotary, x, cos, sin)`` in place of the call."""
    def make(apply_rotary):
        @wraps_function(apply_rotary)
        def apply_rotary_mutant(x, cos, sin):
            return change(apply_rotary, x, cos, sin)
        return apply_rotary_mutant
    return make


def _pairs_neighbours(apply_rotary, x, cos, sin):
    # rotate channels (2i, 2i + 1) together, with the rotate-half tables read column by column
    d = x.shape[-1]
    order = xp.concatenate([xp.arange(0, d, 2), xp.arange(1, d, 2)])
    return apply_rotary(x[..., order], cos[..., order], sin[..., order])[..., xp.argsort(order)]


def _scaled_by_position(apply_rotary, x, cos, sin):
    T = x.shape[-2]
    scale = (1.0 + 0.1 * xp.arange(T, dtype=xp.float64))[:, None]  # (T, 1)
    return (apply_rotary(x, cos, sin) * scale).astype(x.dtype)


def _tables_with(change):
    """A mutant of RotaryEmbedding: ``change(tables, T, offset)`` in place of ``__call__``."""
    def make(RotaryEmbedding):
        class RotaryEmbeddingMutant(RotaryEmbedding):
            def __call__(self, T, offset=0):
                return change(lambda T_, offset_: RotaryEmbedding.__call__(self, T_, offset_), T, offset)
        return disguised(RotaryEmbeddingMutant, RotaryEmbedding)
    return make


def _repeat_interleaved(tables, T, offset):
    cos, sin = tables(T, offset)
    h = cos.shape[-1] // 2
    return xp.repeat(cos[:, :h], 2, axis=-1), xp.repeat(sin[:, :h], 2, axis=-1)  # [a0, a0, a1, a1, ...]


def _swapped(tables, T, offset):
    cos, sin = tables(T, offset)
    return sin, cos


READER_TESTS = [ReaderTest("test_rope_properties", [
    Mutant("sign_error", "apply_rotary", "the rotation runs backwards (a sign error in rotate_half)",
           "check the direction: at position 1, the pair (1, 0) of pair i turns to (cos theta_i, +sin theta_i).",
           _apply_with(lambda A, x, cos, sin: A(x, cos, -sin)), misconception="sign_error"),
    Mutant("interleaved_pairing", "apply_rotary", "pairs neighbouring channels (2i, 2i+1) with rotate-half tables",
           "check that rotating keeps every vector's length, at positions other than 0.",
           _apply_with(_pairs_neighbours), misconception="interleaved_pairing"),
    Mutant("missing_rotate_term", "apply_rotary", "returns x * cos and forgets rotate_half(x) * sin",
           "check that rotating keeps lengths, or that the pair (1, 0) turns to (cos theta_i, sin theta_i).",
           _apply_with(lambda A, x, cos, sin: A(x, cos, 0.0 * sin)), misconception="missing_rotate_term"),
    Mutant("per_position_scale", "apply_rotary", "scales row t of its output by 1 + t/10",
           "check that rotating keeps lengths on a call with several positions (T > 1), not only one at a time.",
           _apply_with(_scaled_by_position)),
    Mutant("offset_ignored", "RotaryEmbedding", "ignores offset: every call starts at position 0",
           "check that the score changes when n - m changes: s(3, 1) != s(3, 2).",
           _tables_with(lambda tables, T, offset: tables(T, 0)), misconception="offset_ignored"),
    Mutant("positions_from_one", "RotaryEmbedding", "counts positions from offset + 1",
           "check that position 0 changes nothing: the tables of RotaryEmbedding(d)(1) leave x as it is.",
           _tables_with(lambda tables, T, offset: tables(T, offset + 1)), misconception="positions_from_one"),
    Mutant("angles_not_duplicated", "RotaryEmbedding", "repeats each angle in neighbouring columns",
           "check that rotating keeps lengths, or that the score depends only on n - m.",
           _tables_with(_repeat_interleaved), misconception="angles_not_duplicated"),
    Mutant("cos_sin_swapped", "RotaryEmbedding", "returns (sin, cos)",
           "check that position 0 changes nothing.",
           _tables_with(_swapped), misconception="cos_sin_swapped"),
])]
