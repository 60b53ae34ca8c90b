r"""Mutants for chapter 7's reader test: ALiBi slopes and biases that are wrong in one realistic way.

Each wraps a correct ``alibi_slopes`` or ``alibi_bias`` (the reference, or in a student copy the
reader's own once it passes) and breaks one thing, the way a reader's code breaks. Every one with
a ``misconception`` reproduces that misconception of the wrapped exercise exactly:
``tests/grading/test_grader.py`` grades each mutant against the exercise's checks to prove it.
"""
from exercises.grading.reader_tests import Mutant, ReaderTest, wraps_function
from mini_transformer.engine.backend import xp


def _slopes_with(change):
    """A mutant of alibi_slopes: ``change(alibi_slopes, n_heads)`` in place of the call."""
    def make(alibi_slopes):
        @wraps_function(alibi_slopes)
        def alibi_slopes_mutant(n_heads):
            return change(alibi_slopes, n_heads)
        return alibi_slopes_mutant
    return make


def _power_of_two(n):
    return n & (n - 1) == 0


def _power_rule_everywhere(S, n):
    # right for 1, 2, 4, 8, ...; for any other count the power-of-two formula with H = n
    return S(n) if _power_of_two(n) else 2.0 ** (-8.0 * xp.arange(1, n + 1, dtype=xp.float64) / n)


def _rounded_up(S, n):
    return S(1 << (n - 1).bit_length())[:n]  # the first n slopes of the next power of two


def _from_zero(S, n):
    # h counted from 0: every slope of the c sequence times 2^(8/c), of the 2c sequence times 2^(4/c)
    c = 1 << (n.bit_length() - 1)
    return S(n) * xp.where(xp.arange(n) < c, 2.0 ** (8.0 / c), 2.0 ** (4.0 / c))


def _bias_with(change):
    """A mutant of alibi_bias: ``change(alibi_bias, n_heads, T_q, T_k, slopes, i, j)`` in place of the call.

    ``slopes`` are read off the correct bias itself (its value one step back), and ``i``, ``j`` are
    the query and key positions ``(T_q, 1)`` and ``(1, T_k)``.
    """
    def make(alibi_bias):
        @wraps_function(alibi_bias)
        def alibi_bias_mutant(n_heads, T_q, T_k):
            slopes = -alibi_bias(n_heads, 2, 2)[0, :, 1, 0][None, :, None, None]  # (1, H, 1, 1)
            i = xp.arange(T_k - T_q, T_k)[:, None]
            j = xp.arange(T_k)[None, :]
            return change(alibi_bias, n_heads, T_q, T_k, slopes, i, j)
        return alibi_bias_mutant
    return make


READER_TESTS = [ReaderTest("test_alibi", [
    Mutant("non_power_of_two", "alibi_slopes", "uses 2^(-8h/H) for every head count",
           "check a head count that is not a power of two: 6 heads are 1/4, 1/16, 1/64, 1/256, 1/2, 1/8.",
           _slopes_with(_power_rule_everywhere), misconception="non_power_of_two"),
    Mutant("next_power_of_two", "alibi_slopes", "takes the first H slopes of the next power of two",
           "check a head count that is not a power of two: 6 heads end with 1/2 and 1/8, not 1/32 and 1/64.",
           _slopes_with(_rounded_up), misconception="next_power_of_two"),
    Mutant("reversed", "alibi_slopes", "slopes in increasing order",
           "check the order: head 1 has the steepest slope, 1/2 for 8 heads.",
           _slopes_with(lambda S, n: S(n)[::-1].copy()), misconception="reversed"),
    Mutant("starts_at_one", "alibi_slopes", "the first slope is 1 (h counted from 0)",
           "check the values by hand: 8 heads are 1/2, 1/4, ..., 1/256.",
           _slopes_with(_from_zero), misconception="starts_at_one"),
    Mutant("positive_sign", "alibi_bias", "adds m_h (i - j) instead of subtracting it",
           "check a value by hand: one step back, head h's bias is -m_h.",
           _bias_with(lambda A, H, tq, tk, m, i, j: -A(H, tq, tk)), misconception="positive_sign"),
    Mutant("queries_at_start", "alibi_bias", "puts the T_q queries at the first positions, not the last",
           "check a call with T_q < T_k: one decode step alibi_bias(H, 1, T) is the last row of alibi_bias(H, T, T).",
           _bias_with(lambda A, H, tq, tk, m, i, j: A(H, tk, tk)[:, :, :tq, :]), misconception="queries_at_start"),
    Mutant("future_not_clamped", "alibi_bias", "gives future keys (j > i) a bonus m_h (j - i)",
           "check the keys after the query: their bias is 0.",
           _bias_with(lambda A, H, tq, tk, m, i, j: A(H, tq, tk) + m * xp.maximum(j - i, 0)),
           misconception="future_not_clamped"),
    Mutant("symmetric_in_causal", "alibi_bias", "penalises future keys like past ones, -m_h |i - j|",
           "check the keys after the query: their bias is 0.",
           _bias_with(lambda A, H, tq, tk, m, i, j: A(H, tq, tk) - m * xp.maximum(j - i, 0)),
           misconception="symmetric_in_causal"),
    Mutant("missing_batch_axis", "alibi_bias", "returns (H, T_q, T_k), no leading batch axis",
           "check the shape: (1, H, T_q, T_k).",
           _bias_with(lambda A, H, tq, tk, m, i, j: A(H, tq, tk)[0]), misconception="missing_batch_axis"),
    Mutant("off_by_one", "alibi_bias", "counts the distance from 1: -m_h (i - j + 1) for past keys",
           "check the diagonal: a query against its own key has bias 0.",
           _bias_with(lambda A, H, tq, tk, m, i, j: A(H, tq, tk) - m * (j <= i))),
    Mutant("absolute_position", "alibi_bias", "scales each query's row by 1 + i/100, so absolute position leaks in",
           "check that the bias depends only on i - j: bias[..., i, j] equals bias[..., i + 1, j + 1].",
           _bias_with(lambda A, H, tq, tk, m, i, j: A(H, tq, tk) * (1.0 + i / 100.0))),
])]
