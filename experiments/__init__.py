r"""Experiments that test the sources' claims on the tiny model, one module each, and their results.

Run one with ``python -m experiments.NAME`` (full mode: at most 15 minutes on 2 cores, results
written to ``results/``) or with ``--quick`` (at most a minute; what the test suite runs and asserts
on). They sit outside ``mini_transformer/`` because they are what the chapters measure with the
library, not part of it: they import the library only, and only the chapters (and the tests) import
them; ``tests/test_layout.py`` keeps it so.
"""
