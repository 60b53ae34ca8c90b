r"""The grading folder of ``solutions/t5.py`` (chapter 5): its checks, mutants, wrong implementations, reader tests."""
