r"""Mutants for chapter 12's clinic: the healthy patient with one bug planted, for every check.

Each check the reader writes receives ``make_patient``. A mutant wraps it: it builds the
patient the given ``make_patient`` builds and plants one bug of ``mini_transformer.evaluation.clinic``
(``clinic.plant``), so this file holds no answer. Every check gets all six planted bugs; only
the bug of its own row is ``required``. The grader reports the others it catches as well.
"""
from exercises.grading.reader_tests import Mutant, ReaderTest, wraps_function
from mini_transformer.evaluation import clinic


def _planted(bug):
    def make(make_patient):
        @wraps_function(make_patient)
        def make_patient_with_the_bug(*args, **kwargs):
            return clinic.plant(make_patient(*args, **kwargs), bug)
        return make_patient_with_the_bug
    return make


#: what each planted bug is, and what catches it (the book's failure table, in this clinic's terms)
_BUGS = {
    "position_reset": ("the cache numbers every decoded token from position 0",
                       "compare the logits of a prefill plus one-token decode steps with one full forward pass, "
                       "at every position after the prefill."),
    "angles_out_of_range": ("the model was rebuilt without its rope_scaling: served at 4x its training length, "
                            "the slow pairs reach angles training never saw",
                            "compare (serve_len - 1) times the served frequencies with train_len times the "
                            "trained ones, for the pairs that never made a full turn in training."),
    "pairing_mismatch": ("rotate-half weights run by interleaved RoPE code, not ported",
                         "compare the served model's logits with those of its source checkpoint's own code."),
    "recency_bias": ("a linear distance penalty (ALiBi's) added to the scores",
                     "probe attention with the content switched off (zero queries and keys): the far end of the "
                     "context must still get its share of the weight in every head."),
    "sinks_evicted": ("the cache ignores n_sink: the first tokens are evicted with the window",
                      "stream past n_sink + window tokens and compare the last logits with a fresh forward over "
                      "the sinks, the window and the last token."),
    "position_ignored": ("every rotation receives position 0: no position reaches attention",
                         "shuffle the tokens before the last one: the last logits must change."),
}

#: which check answers for which bug
_OWN = {"check_cache": "position_reset", "check_angles": "angles_out_of_range", "check_port": "pairing_mismatch",
        "check_reach": "recency_bias", "check_sinks": "sinks_evicted", "check_shuffle": "position_ignored"}

READER_TESTS = [ReaderTest(check, [Mutant(bug, "make_patient", title, hint, _planted(bug), required=(bug == own))
                                   for bug, (title, hint) in _BUGS.items()])
                for check, own in _OWN.items()]
