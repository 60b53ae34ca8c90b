r"""The grading folder of ``solutions/relative.py`` (chapter 4): its checks, mutants, wrong implementations, reader tests."""
