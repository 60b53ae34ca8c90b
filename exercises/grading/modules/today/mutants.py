r"""Mutants for chapter 13's reader test: sink attentions that are wrong in one realistic way.

Each wraps a correct ``sink_attention`` (the reference, or in a student copy the reader's own once it
passes) and breaks one thing by what it passes in or does with what comes back; none re-implements it.
Every mutant with a ``misconception`` reproduces that misconception of Exercise 13.4 exactly
(``tests/grading/test_grader.py`` grades each mutant against the exercise's checks).
"""
import math

from exercises.grading.reader_tests import Mutant, ReaderTest, wraps_function
from mini_transformer.engine.backend import xp


def _called(change):
    """A mutant that calls the correct ``sink_attention`` through ``change(attend, q, k, v, sinks)``."""
    def make(attend):
        @wraps_function(attend)
        def sink_attention(q, k, v, sinks):
            return change(attend, q, k, v, sinks)
        return sink_attention
    return make


def _takes_value(attend, q, k, v, sinks):
    y = attend(q, k, v, sinks)
    kept = attend(q, k, xp.ones_like(v), sinks)[..., :1]          # (B, H, T, 1): 1 - p_sink of each row
    return y + (1 - kept) * v[..., :1, :]                         # the sink's weight on the first token's value


READER_TESTS = [ReaderTest("test_sink_attention", [
    Mutant("sink_ignored", "sink_attention", "leaves the sink out: plain attention",
           "give the sink a finite logit and check that a row's weights on the tokens sum to less than 1 (values "
           "of ones make y that sum).",
           _called(lambda A, q, k, v, s: A(q, k, v, xp.full(s.shape, -xp.inf))), misconception="sink_ignored"),
    Mutant("sink_negated", "sink_attention", "turns the sink logit's sign",
           "work one case by hand: one query, one key, score 0, sink ln 2 puts 1/3 of the row on the token.",
           _called(lambda A, q, k, v, s: A(q, k, v, -s))),
    Mutant("sink_scaled", "sink_attention", "divides the sink logit by sqrt(d_head) like a score",
           "work one case by hand with d_head > 1: the sink is added to the logits as it is.",
           _called(lambda A, q, k, v, s: A(q, k, v, s / math.sqrt(q.shape[-1]))), misconception="sink_scaled"),
    Mutant("heads_swapped", "sink_attention", "gives each head another head's sink",
           "give two heads different sinks and check each head's row on its own.",
           _called(lambda A, q, k, v, s: A(q, k, v, s[::-1].copy()))),
    Mutant("sink_takes_value", "sink_attention", "gives the sink's weight to the first token's value",
           "check the output's size, not only the weights: the sink takes weight and adds no value, so one "
           "key with score 0 and sink ln 2 gives y = v / 3.",
           _called(_takes_value), misconception="sink_takes_value"),
])]
