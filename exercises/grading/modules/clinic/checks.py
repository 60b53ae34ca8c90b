r"""Checks of ``solutions/clinic.py`` (chapter 12): none of the function kind.

Every exercise of the clinic is a check the reader writes, graded as a reader test against the
planted bugs of ``mini_transformer/evaluation/clinic.py`` (see ``exercises/grading/modules/clinic/mutants.py``).
This file exists so that the grader knows the module.
"""
TARGETS = []
