r"""Mutants for chapter 0's reader test: softmaxes and backwards that are wrong in one realistic way.

Each wraps a correct ``softmax`` or ``softmax_backward`` (the reference, or in a student copy the
reader's own once it passes) and breaks one thing, the way a reader's code breaks. Every one with a
``misconception`` reproduces that misconception of the wrapped exercise exactly:
``tests/grading/test_grader.py`` grades each mutant against the exercise's checks to prove it.
"""
from exercises.grading.reader_tests import Mutant, ReaderTest, wraps_function
from mini_transformer.engine.backend import xp


def _softmax_with(change):
    """A mutant of softmax: ``change(softmax, x, mask)`` in place of the call."""
    def make(softmax):
        @wraps_function(softmax)
        def softmax_mutant(x, mask=None):
            return change(softmax, x, mask)
        return softmax_mutant
    return make


def _backward_with(change):
    """A mutant of softmax_backward: ``change(softmax_backward, y, gy)`` in place of the call."""
    def make(softmax_backward):
        @wraps_function(softmax_backward)
        def softmax_backward_mutant(y, gy):
            return change(softmax_backward, y, gy)
        return softmax_backward_mutant
    return make


def _overflows(softmax, x, mask):
    # what exp(x) / sum(exp(x)) gives: the right weights, except NaN in every row whose sum overflows or underflows
    y = softmax(x, mask)
    with xp.errstate(over="ignore"):
        e = xp.exp(x)
    total = (e if mask is None else xp.where(mask, e, 0.0)).sum(axis=-1, keepdims=True)
    return xp.where(xp.isfinite(total) & (total > 0), y, xp.nan).astype(y.dtype)


def _over_columns(softmax, x, mask):
    if x.ndim < 2:
        return softmax(x, mask)
    swap = (lambda a: a) if mask is None else (lambda a: xp.swapaxes(a, -1, -2))
    return xp.swapaxes(softmax(xp.swapaxes(x, -1, -2), None if mask is None else swap(mask)), -1, -2)


def _zero_filled(softmax, x, mask):
    return softmax(x if mask is None else xp.where(mask, x, 0.0))


def _masked_after(softmax, x, mask):
    y = softmax(x)
    return y if mask is None else y * mask


READER_TESTS = [ReaderTest("test_softmax_and_its_gradient", [
    Mutant("no_max_subtraction", "softmax", "computes exp(x) / sum(exp(x)) without subtracting the row's maximum",
           "feed scores near 1000 (or add 1000 to every score): the weights must stay finite and unchanged.",
           _softmax_with(_overflows)),
    Mutant("wrong_axis", "softmax", "normalises over the queries (axis -2) instead of the keys",
           "check that every row sums to 1, on scores that are not square.",
           _softmax_with(_over_columns), misconception="wrong_axis"),
    Mutant("mask_ignored", "softmax", "ignores the mask",
           "pass a mask and check that the masked weights are exactly 0.",
           _softmax_with(lambda softmax, x, mask: softmax(x)), misconception="mask_ignored"),
    Mutant("mask_zero_filled", "softmax", "gives masked scores the value 0 instead of -inf",
           "pass a mask and check that the masked weights are exactly 0.",
           _softmax_with(_zero_filled), misconception="mask_zero_filled"),
    Mutant("masked_after_normalising", "softmax", "zeroes the masked weights after normalising",
           "pass a mask and check that every row still sums to 1.",
           _softmax_with(_masked_after), misconception="masked_after_normalising"),
    Mutant("diagonal_only", "softmax_backward", "keeps only the diagonal of the Jacobian: gy * y * (1 - y)",
           "compare every entry of the backward with central differences of sum(gy * softmax(x)).",
           _backward_with(lambda B, y, gy: gy * y * (1 - y)), misconception="diagonal_only"),
    Mutant("missing_output_factor", "softmax_backward", "forgets the factor y: gy - sum(gy * y)",
           "compare with central differences, with a mask: a masked entry must get no gradient.",
           _backward_with(lambda B, y, gy: gy - (gy * y).sum(axis=-1, keepdims=True)),
           misconception="missing_output_factor"),
    Mutant("sum_over_everything", "softmax_backward", "sums gy * y over the whole array, not each row",
           "compare with central differences on several rows at once (a batch), not a single row.",
           _backward_with(lambda B, y, gy: y * (gy - (gy * y).sum())), misconception="sum_over_everything"),
    Mutant("zero_gradient", "softmax_backward", "returns zeros",
           "use random weights gy: with gy all ones the true gradient is 0, and zeros pass.",
           _backward_with(lambda B, y, gy: 0.0 * B(y, gy))),
])]
