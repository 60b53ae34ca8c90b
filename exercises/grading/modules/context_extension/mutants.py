r"""Mutants for chapter 8's reader test: NTK-aware bases that are wrong in one realistic way.

Each wraps a correct ``ntk_base`` (the reference, or in a student copy the reader's own once it
passes) and breaks one thing. The ones with a ``misconception`` reproduce that misconception of
Exercise 8.2 exactly: ``tests/grading/test_grader.py`` grades each mutant against the exercise's checks
to prove it. Every mutant keeps pair 0 at theta_0 = 1, as every base does, so a test of
theta_0 alone catches none of them.
"""
from exercises.grading.reader_tests import Mutant, ReaderTest, wraps_function


def _ntk_with(change):
    """A mutant of ntk_base: ``change(ntk_base, base, factor, rotary_dim)`` in place of the call."""
    def make(ntk_base):
        @wraps_function(ntk_base)
        def ntk_base_mutant(base, factor, rotary_dim):
            return change(ntk_base, base, factor, rotary_dim)
        return ntk_base_mutant
    return make


def _inverted(N, b, s, d):
    # the correct base is b s^(d/(d-2)); raising its factor to ((d-2)/d)^2 gives b s^((d-2)/d)
    return b * (N(b, s, d) / b) ** (((d - 2) / d) ** 2)


READER_TESTS = [ReaderTest("test_ntk_base", [
    Mutant("inverted_exponent", "ntk_base", "uses the exponent (d - 2)/d instead of d/(d - 2)",
           "check that the slowest pair, theta_{d/2-1} = base^(-(d-2)/d), turns exactly s times slower.",
           _ntk_with(_inverted), misconception="inverted_exponent"),
    Mutant("plain_factor", "ntk_base", "multiplies the base by s",
           "check that the slowest pair turns exactly s times slower, not s^((d-2)/d).",
           _ntk_with(lambda N, b, s, d: b * s), misconception="plain_factor"),
    Mutant("precedence", "ntk_base", "computes s ** d / (d - 2)",
           "check the slowest pair's slow-down, or a value by hand: base 10000, s 4, d 4 gives 160000.",
           _ntk_with(lambda N, b, s, d: b * s ** d / (d - 2)), misconception="precedence"),
    Mutant("divided", "ntk_base", "divides the base by s^(d/(d-2))",
           "check that no pair turns faster than before: the new base must be larger.",
           _ntk_with(lambda N, b, s, d: b * b / N(b, s, d)), misconception="divided"),
    Mutant("rotary_dim_ignored", "ntk_base", "always uses d = 128 in the exponent",
           "check more than one rotary dimension: 32 or 96 as well as 128.",
           _ntk_with(lambda N, b, s, d: N(b, s, 128))),
    Mutant("integer_factor", "ntk_base", "truncates the factor to an integer",
           "check a factor that is not a whole number, such as 2.5.",
           _ntk_with(lambda N, b, s, d: N(b, float(int(s)), d))),
])]
