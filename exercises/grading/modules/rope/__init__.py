r"""The grading folder of ``solutions/rope.py`` (chapter 6): its checks, mutants, wrong implementations, reader tests."""
