"""Wrong position_rows (Exercise 3.1), as readers write them."""
from mini_transformer.engine.backend import xp

# (name in this file, target, expected kind, expected misconception): tests/grading/test_grader.py reads this table
KNOWN_WRONG = [
    ("rows_from_zero", "learned.position_rows", "misconception", "offset_ignored"),
    ("rows_one_late", "learned.position_rows", "shape", "off_by_one"),
    ("rows_without_batch", "learned.position_rows", "shape", "no_batch_axis"),
    ("rows_gathered_as_float32", "learned.position_rows", "dtype", None),
    ("rows_unchecked", "learned.position_rows", "misconception", "no_refusal"),
    ("rows_refusing_the_last", "learned.position_rows", "raised", None),
    ("rows_wrapping_around", "learned.position_rows", "no_error", None),
    ("rows_index_error", "learned.position_rows", "raised", None),
]


def rows_from_zero(weight, T, offset=0):
    if offset + T > weight.shape[0]:
        raise ValueError("past the table")
    return weight[None, :T]  # the rows of the first T positions, wherever the tokens are


def rows_one_late(weight, T, offset=0):
    if offset + T > weight.shape[0]:
        raise ValueError("past the table")
    return weight[None, offset + 1:offset + T + 1]  # counts positions from 1: one row short at the end


def rows_without_batch(weight, T, offset=0):
    if offset + T > weight.shape[0]:
        raise ValueError("past the table")
    return weight[offset:offset + T]  # (T, d_model)


def rows_gathered_as_float32(weight, T, offset=0):
    if offset + T > weight.shape[0]:
        raise ValueError("past the table")
    return xp.asarray(weight[offset:offset + T], dtype=xp.float32)[None]  # a float32 copy, whatever came in


def rows_unchecked(weight, T, offset=0):
    return weight[None, offset:offset + T]  # a slice past the end quietly returns fewer rows


def rows_refusing_the_last(weight, T, offset=0):
    if offset + T >= weight.shape[0]:  # >= where > is meant: the last row is refused too
        raise ValueError(f"positions {offset}..{offset + T - 1} are past the table")
    return weight[None, offset:offset + T]


def rows_wrapping_around(weight, T, offset=0):
    pos = xp.arange(offset, offset + T) % weight.shape[0]  # past the end, start again at row 0
    return weight[None, pos]


def rows_index_error(weight, T, offset=0):
    if offset + T > weight.shape[0]:
        raise IndexError("no such row")  # an error, but not the ValueError the docstring asks for
    return weight[None, offset:offset + T]
