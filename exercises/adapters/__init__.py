r"""What connects the reader's code to the model: the book's adapters, outside the library.

``from_functions`` trains a scheme on the reader's own functions, ``side_by_side`` trains the
reader's scheme beside the reference's, and ``scoreboard`` prints a reader test's result the way
the chapters show it. Only the chapters import from here; the library, the solutions and the
grader never do (``tests/test_layout.py``).
"""
