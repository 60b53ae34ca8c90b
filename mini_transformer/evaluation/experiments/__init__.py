r"""Experiments that test the sources' claims on the tiny model, one module each.

Run one with ``python -m mini_transformer.evaluation.experiments.NAME`` (full mode: at
most 15 minutes on 2 cores, results written to ``results/``) or with
``--quick`` (at most a minute; what the test suite runs and asserts on).
"""
