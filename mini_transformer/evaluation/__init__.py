r"""The evaluation floor: what the chapters measure, and the runs that measure it.

``measures`` (losses by position, passkeys, attention mass, permutation sensitivity, and their
plots), ``streaming`` (windowed decoding with sinks), ``longrope_search``, ``clinic`` (chapter 12's
patients: a healthy model and six with one planted positional bug each), the benches
(``python -m mini_transformer.evaluation.bench``, ``bench_positional``) and ``experiments/``
(``python -m mini_transformer.evaluation.experiments.NAME``). The top floor: nothing in the
library imports it.
"""
