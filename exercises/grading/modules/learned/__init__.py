r"""The grading folder of ``solutions/learned.py`` (chapter 3): its checks, mutants, wrong implementations, reader tests."""
