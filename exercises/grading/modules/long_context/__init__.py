r"""The grading folder of ``solutions/long_context.py`` (chapter 9): its checks, mutants, wrong implementations, reader tests."""
