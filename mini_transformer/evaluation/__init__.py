r"""The evaluation floor: what the chapters measure, and the tools that measure it.

``measures`` (losses by position, passkeys, attention mass, permutation sensitivity, and their
plots), ``stats``, ``streaming`` (windowed decoding with sinks), ``longrope_search``, ``clinic``
(chapter 12's patients: a healthy model and six with one planted positional bug each) and the
benches (``python -m mini_transformer.evaluation.bench``, ``bench_positional``). The top floor:
nothing in the library imports it. The chapters' experiments, which call these measures, live
outside the library in ``experiments/`` (``python -m experiments.NAME``).
"""
