r"""Mutants for chapter 2's reader test: sinusoidal tables and shift matrices wrong in one realistic way.

Each wraps a correct ``sinusoidal_positional_encoding`` or ``shift_rotation`` (the reference, or
in a student copy the reader's own once it passes) and breaks one thing the way a reader's code
breaks. Every one with a ``misconception`` reproduces that misconception of the wrapped exercise
exactly: ``tests/grading/test_grader.py`` grades each mutant against the exercise's checks to prove it.
"""
from exercises.grading.reader_tests import Mutant, ReaderTest, wraps_function
from mini_transformer.engine.backend import xp


def _table_with(change):
    """A mutant of sinusoidal_positional_encoding: ``change(encoding, T, d_model, base)`` in place of the call."""
    def make(sinusoidal_positional_encoding):
        @wraps_function(sinusoidal_positional_encoding)
        def sinusoidal_positional_encoding_mutant(T, d_model, base=10000.0):
            return change(sinusoidal_positional_encoding, T, d_model, base)
        return sinusoidal_positional_encoding_mutant
    return make


def _columns(order):
    """Reorder the table's columns: ``order(d_model)`` gives the source column of each output column."""
    return lambda encoding, T, d_model, base: encoding(T, d_model, base)[:, order(d_model)]


def _neighbours_swapped(d_model):  # 1, 0, 3, 2, ...: cos in the even columns
    return xp.arange(d_model).reshape(-1, 2)[:, ::-1].reshape(-1)


def _sines_first(d_model):  # 0, 2, 4, ..., 1, 3, 5, ...: every sine, then every cosine
    return xp.concatenate([xp.arange(0, d_model, 2), xp.arange(1, d_model, 2)])


def _matrix_with(change):
    """A mutant of shift_rotation: ``change(shift_rotation, k, d_model, base)`` in place of the call."""
    def make(shift_rotation):
        @wraps_function(shift_rotation)
        def shift_rotation_mutant(k, d_model, base=10000.0):
            return change(shift_rotation, k, d_model, base)
        return shift_rotation_mutant
    return make


def _blocks_on_halves(shift_rotation, k, d_model, base):
    order = _sines_first(d_model)  # channels i and i + d_model/2 take what channels 2i and 2i + 1 held
    return shift_rotation(k, d_model, base)[order][:, order]


READER_TESTS = [ReaderTest("test_sinusoidal_properties", [
    Mutant("sin_cos_swapped", "sinusoidal_positional_encoding", "cosines in the even columns, sines in the odd",
           "check row 0 by hand: position 0 is [0, 1, 0, 1, ...].",
           _table_with(_columns(_neighbours_swapped)), misconception="sin_cos_swapped"),
    Mutant("halves_layout", "sinusoidal_positional_encoding", "all the sines first, then all the cosines",
           "check row 0 by hand, or check PE(t + k) = M_k PE(t) with the shift matrix.",
           _table_with(_columns(_sines_first)), misconception="halves_layout"),
    Mutant("exponent_i_over_d", "sinusoidal_positional_encoding", "frequencies base^(-i/d_model), not base^(-2i/d_model)",
           "check row 1 by hand: for d_model = 8 the frequencies are 1, 0.1, 0.01, 0.001.",
           _table_with(lambda enc, T, d_model, base: enc(T, d_model, base ** 0.5)), misconception="frequency_exponent"),
    Mutant("exponent_4i_over_d", "sinusoidal_positional_encoding", "frequencies base^(-4i/d_model)",
           "check row 1 by hand: for d_model = 8 the frequencies are 1, 0.1, 0.01, 0.001.",
           _table_with(lambda enc, T, d_model, base: enc(T, d_model, base ** 2)), misconception="frequency_exponent"),
    Mutant("base_ignored", "sinusoidal_positional_encoding", "uses 10000 whatever base it is given",
           "call both functions with a base other than 10000.",
           _table_with(lambda enc, T, d_model, base: enc(T, d_model)), misconception="base_ignored"),
    Mutant("positions_from_one", "sinusoidal_positional_encoding", "row t encodes position t + 1",
           "check row 0 by hand: a shift of every row by one still satisfies PE(t + k) = M_k PE(t).",
           _table_with(lambda enc, T, d_model, base: enc(T + 1, d_model, base)[1:]), misconception="positions_from_one"),
    Mutant("rotates_backwards", "shift_rotation", "each block turns by -k omega_i: M_k moves to t - k",
           "check pe[k:] == pe[:-k] @ M.T with a k other than 0.",
           _matrix_with(lambda shift, k, d_model, base: shift(k, d_model, base).T), misconception="rotates_backwards"),
    Mutant("halves_pairing", "shift_rotation", "blocks on channels i and i + d_model/2 (RoPE's pairing)",
           "check pe[k:] == pe[:-k] @ M.T with the table.",
           _matrix_with(_blocks_on_halves), misconception="halves_pairing"),
    Mutant("angle_not_scaled_by_k", "shift_rotation", "every block turns by omega_i, whatever k is",
           "check the shift with a k other than 1.",
           _matrix_with(lambda shift, k, d_model, base: shift(1, d_model, base)), misconception="angle_not_scaled_by_k"),
])]
