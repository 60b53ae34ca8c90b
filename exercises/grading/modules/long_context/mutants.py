r"""Mutants for chapter 9's reader test: measurements that are wrong in one realistic way.

Each wraps a correct ``loss_inside_and_beyond`` or ``effective_context_length`` (the reference,
or in a student copy the reader's own once it passes) and breaks one thing. Every one with a
``misconception`` reproduces that misconception of the wrapped exercise exactly:
``tests/grading/test_grader.py`` grades each mutant against the exercise's checks to prove it.
"""
from exercises.grading.reader_tests import Mutant, ReaderTest, wraps_function
from mini_transformer.engine.backend import xp


def _split_with(change):
    """A mutant of loss_inside_and_beyond: ``change(f, token_losses, train_len)`` in place of the call."""
    def make(loss_inside_and_beyond):
        @wraps_function(loss_inside_and_beyond)
        def loss_inside_and_beyond_mutant(token_losses, train_len):
            return change(loss_inside_and_beyond, token_losses, train_len)
        return loss_inside_and_beyond_mutant
    return make


def _ecl_with(change):
    """A mutant of effective_context_length: ``change(f, lengths, accuracy, threshold)`` in place of the call."""
    def make(effective_context_length):
        @wraps_function(effective_context_length)
        def effective_context_length_mutant(lengths, accuracy, threshold=0.5):
            return change(effective_context_length, lengths, accuracy, threshold)
        return effective_context_length_mutant
    return make


def _whole_window(f, token_losses, train_len):
    inside = f(token_losses, train_len)[0]
    return xp.stack([inside, token_losses.mean().astype(token_losses.dtype)])


def _longest_passing(f, lengths, accuracy, threshold):
    acc = accuracy.reshape(len(lengths), -1)
    alone = [f(lengths[i:i + 1], acc[i:i + 1], threshold) for i in range(len(lengths))]  # each length on its own
    return max([0] + [int(a) for a in alone])


def _first_failing(f, lengths, accuracy, threshold):
    best = f(lengths, accuracy, threshold)
    i = 0 if best == 0 else [int(v) for v in lengths].index(best) + 1
    return int(lengths[min(i, len(lengths) - 1)])


def _strict(f, lengths, accuracy, threshold):
    return f(lengths, xp.where(accuracy <= threshold, 0.0 * accuracy - 1.0, accuracy), threshold)


READER_TESTS = [ReaderTest("test_long_context_measures", [
    Mutant("beyond_from_target", "loss_inside_and_beyond", "counts position train_len - 1 as beyond",
           "split a step (0 up to L - 1, 1 from L) and ask for exactly [0, 1].",
           _split_with(lambda f, x, L: f(x, L - 1)), misconception="beyond_from_target"),
    Mutant("beyond_from_one", "loss_inside_and_beyond", "starts beyond at train_len + 1",
           "split a step (0 up to L - 1, 1 from L) and ask for exactly [0, 1].",
           _split_with(lambda f, x, L: f(x, L + 1)), misconception="beyond_from_one"),
    Mutant("sides_swapped", "loss_inside_and_beyond", "returns [beyond, inside]",
           "check the order on an input whose two sides differ.",
           _split_with(lambda f, x, L: f(x, L)[::-1]), misconception="sides_swapped"),
    Mutant("beyond_is_overall", "loss_inside_and_beyond", "reports the whole window's mean as beyond",
           "on a step input, beyond must be exactly 1, not the mean of the window.",
           _split_with(_whole_window), misconception="beyond_is_overall"),
    Mutant("longest_passing", "effective_context_length", "returns the longest length that passes anywhere",
           "a grid where a longer length passes again after a shorter one failed.",
           _ecl_with(_longest_passing), misconception="longest_passing"),
    Mutant("first_failing", "effective_context_length", "returns the first failing length",
           "a grid that fails at some length: the answer is the length before it.",
           _ecl_with(_first_failing), misconception="first_failing"),
    Mutant("mean_over_depths", "effective_context_length", "averages the depths before the threshold",
           "a length where one depth fails and the mean of the depths passes.",
           _ecl_with(lambda f, n, a, t: f(n, a.reshape(len(n), -1).mean(axis=1), t)),
           misconception="mean_over_depths"),
    Mutant("strict_threshold", "effective_context_length", "fails a cell exactly at the threshold",
           "a grid with a cell exactly at the threshold, which passes.",
           _ecl_with(_strict), misconception="strict_threshold"),
    Mutant("nan_passes", "effective_context_length", "counts a refused length (NaN) as a pass",
           "a grid with NaN at some length: it fails there.",
           _ecl_with(lambda f, n, a, t: f(n, xp.where(xp.isnan(a), 1.0, a), t)), misconception="nan_passes"),
])]
