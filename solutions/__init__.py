r"""Reference solutions to the workbook's exercises and drills.

Each function body that the reader writes sits between two marker lines::

    # BEGIN SOLUTION Exercise 6.1
    ...
    # END SOLUTION

``python -m exercises generate`` turns every marked region into the stub the reader
sees in ``exercises/`` (a ``# TODO`` line and a stub that raises ``NotImplementedError``), keeping
the signature and the docstring. The grader compares the reader's code with these
functions; it never prints them.
"""
